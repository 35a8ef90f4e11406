//go:build unix

package view

import (
	"syscall"
	"time"
)

// processCPU is the user plus system CPU time the test process used so far.
// Benchmarks report it per operation as well as wall time, because on a
// shared machine wall time also measures the neighbours.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
