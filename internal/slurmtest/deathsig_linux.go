package slurmtest

import "syscall"

// whenParentDies has the kernel send a process sig when the test process
// dies (a test timeout panics, a kill -9), which no cleanup can do.
func whenParentDies(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }
