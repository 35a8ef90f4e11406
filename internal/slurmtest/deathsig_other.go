//go:build !linux

package slurmtest

import "syscall"

// dieWithParent does nothing where the kernel cannot signal a child when
// its parent dies; the test's cleanup still stops the daemons.
func dieWithParent(*syscall.SysProcAttr) {}
