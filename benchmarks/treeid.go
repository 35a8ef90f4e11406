package benchmarks

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// Git object modes of tree entries.
const (
	gitModeFile    = "100644"
	gitModeExec    = "100755"
	gitModeSymlink = "120000"
	gitModeTree    = "40000"
)

// TreeID returns git's object id of the tree of the folder dir: what
// `git rev-parse COMMIT:path/to/dir` prints for a commit holding exactly
// these files. It depends on the names, modes and contents of the files
// only, never on timestamps or on how an archive packed them, so a task's
// content can be pinned by it and the pin checked with git alone. Like git,
// it leaves out empty folders and records only whether a file is
// executable; a symbolic link is recorded with its target as content.
func TreeID(dir string) (string, error) {
	id, empty, err := treeID(dir)
	if err != nil {
		return "", fmt.Errorf("tree id of %s: %w", dir, err)
	}
	if empty {
		return "", fmt.Errorf("tree id of %s: the folder holds no files", dir)
	}
	return hex.EncodeToString(id), nil
}

// treeEntry is one entry of a git tree object.
type treeEntry struct {
	mode, name string
	id         []byte
}

// treeID hashes the tree of dir; empty reports a folder with no file
// anywhere below it, which git does not record.
func treeID(dir string) (id []byte, empty bool, err error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, false, err
	}
	var entries []treeEntry
	for _, de := range des {
		p := filepath.Join(dir, de.Name())
		e, skip, err := entryOf(p, de)
		if err != nil {
			return nil, false, err
		}
		if !skip {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 {
		return nil, true, nil
	}
	// Git orders a tree by name, comparing a folder as if its name ended
	// in "/".
	key := func(e treeEntry) string {
		if e.mode == gitModeTree {
			return e.name + "/"
		}
		return e.name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	var body bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&body, "%s %s\x00", e.mode, e.name)
		body.Write(e.id)
	}
	return gitObjectID("tree", body.Bytes()), false, nil
}

// entryOf hashes one member of a folder; skip is set for an empty folder.
func entryOf(p string, de os.DirEntry) (treeEntry, bool, error) {
	e := treeEntry{name: de.Name()}
	info, err := de.Info()
	if err != nil {
		return e, false, err
	}
	mode := info.Mode()
	switch {
	case mode&os.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return e, false, err
		}
		e.mode, e.id = gitModeSymlink, gitObjectID("blob", []byte(target))
	case mode.IsDir():
		id, empty, err := treeID(p)
		if err != nil || empty {
			return e, empty, err
		}
		e.mode, e.id = gitModeTree, id
	case mode.IsRegular():
		id, err := blobID(p, info.Size())
		if err != nil {
			return e, false, err
		}
		e.mode, e.id = gitModeFile, id
		if mode&0o100 != 0 { // git looks at the owner's execute bit
			e.mode = gitModeExec
		}
	default:
		return e, false, fmt.Errorf("%s is neither a file, a folder nor a symbolic link (%v)", p, mode.Type())
	}
	return e, false, nil
}

// blobID hashes a file as git stores it, streaming its content.
func blobID(p string, size int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, err
	}
	if n != size {
		return nil, fmt.Errorf("%s changed size while being read", p)
	}
	return h.Sum(nil), nil
}

// gitObjectID is the id git gives an object of this kind and body.
func gitObjectID(kind string, body []byte) []byte {
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", kind, len(body))
	h.Write(body)
	return h.Sum(nil)
}
