package slurmtest

import "syscall"

// dieWithParent has the kernel kill a daemon when the test process dies
// (a test timeout panics, a kill -9), which no cleanup can do.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
