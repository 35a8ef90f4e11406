package harness

import (
	"testing"

	"github.com/mediated-coevo/harness/benchmarks"
)

// What the network's tests, in package harness_test, use of this
// package's in-memory world.

// MemWorld is the in-memory world's backend.
func MemWorld() Backend { return memWorld{} }

// MemTasks writes n small tasks for the in-memory world.
func MemTasks(t *testing.T, n int) []*benchmarks.Task { return memTasks(t, n) }

// TaskIDs lists the tasks' ids.
func TaskIDs(tasks []*benchmarks.Task) []string { return taskIDs(tasks) }
