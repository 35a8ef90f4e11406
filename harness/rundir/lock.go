package rundir

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/mediated-coevo/harness/internal/dirlock"
)

// ErrInUse is wrapped by Lock's error when another process works in the
// directory.
var ErrInUse = errors.New("run directory in use")

// Lock makes this process the directory's only writer, until Unlock or the
// process's exit (a crash or kill -9 included: the kernel drops the lock).
// Every writer (a new run, a resume, a matrix and each of its rows) takes it
// before writing anything; readers (inspect, report) never do. When another
// process holds it, the error names that process and says what to do. A
// lock left by a process that died is taken over. Locking a directory twice
// from one Dir is a no-op.
func (d *Dir) Lock() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lock != nil {
		return nil
	}
	l, err := dirlock.Acquire(d.Join(LockFile), dirlock.Self())
	if err != nil {
		var held *dirlock.HeldError
		if errors.As(err, &held) {
			return fmt.Errorf("%w: %s is being written by %v; wait for that process to finish, or stop it "+
				"(Ctrl-C, or kill %d on %s) and run --resume again: only one process may work in a run directory at a time",
				ErrInUse, d.Path, held.Holder, held.Holder.PID, held.Holder.Host)
		}
		return fmt.Errorf("lock run directory %s: %w", d.Path, err)
	}
	d.lock = l
	return nil
}

// Unlock releases the lock Lock took; without one it does nothing.
func (d *Dir) Unlock() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.lock.Release()
	d.lock = nil
	return err
}

// Held reports whether a live process holds the lock of the run or matrix
// directory at path, without taking it. A directory never locked (no lock
// file) is not held.
func Held(path string) (bool, error) {
	_, held, err := dirlock.Probe(filepath.Join(path, LockFile))
	if err != nil {
		return false, fmt.Errorf("ask whether a process works in %s: %w", path, err)
	}
	return held, nil
}
