// Package dirlock gives one process at a time a directory: an exclusive,
// advisory OS lock (flock) on a file inside it, with the holder's pid, host
// and start time written into that file so that a process refused the lock
// can say who holds it. The kernel drops the lock when its holder exits, by
// any means, kill -9 included, so a lock left by a dead process is simply
// taken over; the file itself is never removed, since removing it would let
// two processes lock two different files of the same name.
package dirlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// ErrHeld is wrapped by the error Acquire returns when another process (or
// another open of the same file) holds the lock.
var ErrHeld = errors.New("locked by another process")

// Holder is what a lock file records about the process holding it.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	// Command is the holder's command line, for the refusal message.
	Command string `json:"command,omitempty"`
}

// Self describes the calling process.
func Self() Holder {
	host, _ := os.Hostname()
	return Holder{PID: os.Getpid(), Host: host, Started: time.Now().UTC().Truncate(time.Second), Command: strings.Join(os.Args, " ")}
}

func (h Holder) String() string {
	if h.PID == 0 {
		return "a process that has not recorded itself yet"
	}
	s := fmt.Sprintf("pid %d on host %s, holding it since %s", h.PID, h.Host, h.Started.Format(time.RFC3339))
	if h.Command != "" {
		s += fmt.Sprintf(" (%s)", h.Command)
	}
	return s
}

// HeldError is the refusal: the lock file and who holds it.
type HeldError struct {
	Path   string
	Holder Holder
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s is %v: held by %v", e.Path, ErrHeld, e.Holder)
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// Lock is a held lock; Release gives it back.
type Lock struct {
	f    *os.File
	path string
	// Previous is what the file recorded before this process took it: a
	// holder that exited without releasing (a crash, kill -9), or the last
	// one that released it. Zero when the file was new.
	Previous Holder
}

// Acquire takes the lock at path (creating the file) without waiting and
// records self in it. When the lock is held it returns a *HeldError naming
// the holder.
func Acquire(path string, self Holder) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	held, err := tryLock(f)
	// A reader's Probe holds the lock shared for an instant: a writer that
	// meets it tries again before taking the lock for held.
	for i := 0; held && err == nil && i < probeRetries; i++ {
		time.Sleep(probeRetryWait)
		held, err = tryLock(f)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	prev := readHolder(f)
	if held {
		f.Close()
		return nil, &HeldError{Path: path, Holder: prev}
	}
	l := &Lock{f: f, path: path, Previous: prev}
	if err := l.record(self); err != nil {
		l.Release()
		return nil, fmt.Errorf("record the holder in %s: %w", path, err)
	}
	return l, nil
}

// How often and how far apart Acquire tries again when the lock is held,
// to outlast a Probe: a real holder keeps it far longer.
const (
	probeRetries   = 3
	probeRetryWait = 20 * time.Millisecond
)

// Probe reports, without taking it, whether a live process holds the lock
// at path, and what the file records about the holder (or the last one).
// It never creates the file: no file means no holder. Readers use it to
// tell a directory whose writer died (kill -9, a full disk) from one still
// being written, which its recorded status alone cannot.
func Probe(path string) (Holder, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Holder{}, false, nil
		}
		return Holder{}, false, fmt.Errorf("open lock file: %w", err)
	}
	defer f.Close()
	held, err := tryShared(f)
	if err != nil {
		return Holder{}, false, fmt.Errorf("probe %s: %w", path, err)
	}
	h := readHolder(f)
	if !held {
		if err := unlock(f); err != nil {
			return h, false, fmt.Errorf("probe %s: %w", path, err)
		}
	}
	return h, held, nil
}

func (l *Lock) record(h Holder) error {
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	if _, err := l.f.WriteAt(append(data, '\n'), 0); err != nil {
		return err
	}
	return l.f.Sync()
}

// Release gives the lock back. The holder record stays in the file (it
// then names the last holder); a nil lock is a no-op.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// Path is the lock file.
func (l *Lock) Path() string { return l.path }

// readHolder reads the record in f; zero when there is none or it is
// unreadable (a holder caught between truncating and writing).
func readHolder(f *os.File) Holder {
	var h Holder
	st, err := f.Stat()
	if err != nil || st.Size() == 0 || st.Size() > 1<<16 {
		return h
	}
	buf := make([]byte, st.Size())
	n, _ := f.ReadAt(buf, 0)
	_ = json.Unmarshal(buf[:n], &h)
	return h
}
