//go:build unix

package dirlock

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock without waiting; held is true when
// someone else has it.
func tryLock(f *os.File) (held bool, err error) { return flock(f, syscall.LOCK_EX) }

// tryShared takes a shared flock without waiting: it is refused only while
// someone holds the exclusive lock.
func tryShared(f *os.File) (held bool, err error) { return flock(f, syscall.LOCK_SH) }

func flock(f *os.File, how int) (held bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

func unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
