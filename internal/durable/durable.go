// Package durable writes files so that a crash never leaves a half-written
// one behind: whole-file rewrites go through a temporary file, fsync and
// rename; append-only logs flush and sync every record.
package durable

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// WriteFile replaces path with data atomically: readers see the old content
// or the new one, never a mix, and a crash leaves the old file in place.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return WriteFileFunc(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileFunc is WriteFile for content produced by a writer function. If
// write fails, the temporary file is removed and path is untouched.
func WriteFileFunc(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temporary file for %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = write(tmp); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("set mode of %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	return syncDir(dir)
}

// WriteJSON writes v as indented JSON, atomically.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return WriteFile(path, append(data, '\n'), 0o644)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil // not every platform lets a directory be opened; the rename stands
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}

// Log is an append-only JSON Lines file. Each record is written whole with a
// single write and synced before Append returns. It is safe for concurrent use.
type Log struct {
	mu    sync.Mutex
	f     *os.File
	path  string
	count int
}

// OpenLog opens (creating if needed) an append-only JSONL file. A torn last
// record left by a crash is cut off, so the next record starts on its own line.
func OpenLog(path string) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	if err := dropTornTail(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("repair torn record in %s: %w", path, err)
	}
	n, err := countLines(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("count records in %s: %w", path, err)
	}
	return &Log{f: f, path: path, count: n}, nil
}

// Append writes one record as a JSON line and syncs it to disk.
func (l *Log) Append(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode record for %s: %w", l.path, err)
	}
	data = append(data, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(data); err != nil {
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", l.path, err)
	}
	l.count++
	return nil
}

// Count is the number of records in the file, for checkpoints.
func (l *Log) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

func countLines(f *os.File) (int, error) {
	buf := make([]byte, 64<<10)
	n := 0
	for off := int64(0); ; {
		m, err := f.ReadAt(buf, off)
		for _, c := range buf[:m] {
			if c == '\n' {
				n++
			}
		}
		off += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// Reset empties the file and syncs it, for a log whose records have been
// folded into a checkpoint. A crash during Reset leaves the file whole or
// empty, so the checkpoint must tell its records apart from later ones.
func (l *Log) Reset() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("empty %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", l.path, err)
	}
	l.count = 0
	return nil
}

// Path is the file's path.
func (l *Log) Path() string { return l.path }

// Close closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// ReadLog decodes every complete line of a JSONL file with fn. A torn last
// line (no newline, invalid JSON) is skipped; an invalid complete line is an error.
func ReadLog(path string, fn func(line []byte) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		i := indexNewline(data)
		if i < 0 {
			if json.Valid(data) {
				return fn(data)
			}
			return nil // torn tail from a crash
		}
		line := data[:i]
		data = data[i+1:]
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%s line %d: %w", path, lineNo, err)
		}
	}
	return nil
}

func indexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// TruncateLines keeps the first n complete lines of a JSONL file and drops
// the rest, atomically. Resume uses it to forget records written after the
// last checkpoint. A missing file with n == 0 is fine.
func TruncateLines(path string, n int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) && n == 0 {
			return nil
		}
		return fmt.Errorf("read %s: %w", path, err)
	}
	cut, seen := 0, 0
	for seen < n {
		i := indexNewline(data[cut:])
		if i < 0 {
			return fmt.Errorf("%s has %d complete lines, fewer than the %d the checkpoint recorded", path, seen, n)
		}
		cut += i + 1
		seen++
	}
	if cut == len(data) {
		return nil
	}
	return WriteFile(path, data[:cut], 0o644)
}

// dropTornTail truncates the file after its last newline: bytes past it are
// the remains of a record whose write a crash interrupted.
func dropTornTail(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	const chunk = 64 << 10
	end := st.Size()
	buf := make([]byte, chunk)
	for off := end; off > 0; {
		n := int64(chunk)
		if off < n {
			n = off
		}
		off -= n
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] == '\n' {
				if off+i+1 == end {
					return nil
				}
				return f.Truncate(off + i + 1)
			}
		}
	}
	return f.Truncate(0)
}
