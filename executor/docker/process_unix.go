//go:build unix

package docker

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this id exists. Signal 0
// checks without sending anything; EPERM means it exists under another user.
func processAlive(pid int) (bool, error) {
	err := syscall.Kill(pid, 0)
	switch {
	case err == nil, errors.Is(err, syscall.EPERM):
		return true, nil
	case errors.Is(err, syscall.ESRCH):
		return false, nil
	}
	return false, err
}
