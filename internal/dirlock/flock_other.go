//go:build !unix

package dirlock

import (
	"errors"
	"os"
)

// Without flock there is no lock to take: refuse rather than pretend.
func tryLock(*os.File) (bool, error) {
	return false, errors.New("directory locks need a Unix system")
}

func tryShared(*os.File) (bool, error) {
	return false, errors.New("directory locks need a Unix system")
}

func unlock(*os.File) error { return nil }
