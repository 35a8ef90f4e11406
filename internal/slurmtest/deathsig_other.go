//go:build !linux

package slurmtest

import "syscall"

// whenParentDies does nothing where the kernel cannot signal a child when
// its parent dies; the test's cleanup still stops the cluster.
func whenParentDies(*syscall.SysProcAttr, syscall.Signal) {}
