package docker

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/executor"
)

// TestSmokeTasksOracleSolvesNopFails checks every pinned smoke task in the
// real engine: its reference solution scores 1 and doing nothing scores
// below 1, so each task is solvable and its verifier can tell. The tasks
// run side by side (their trial ids differ), as many as go test's -parallel
// allows.
func TestSmokeTasksOracleSolvesNopFails(t *testing.T) {
	if testing.Short() {
		t.Skip("Docker integration test")
	}
	d := newTestDocker(t)
	rt := testRuntime()
	res, err := benchmarks.NewResolver(rt)
	if err != nil {
		t.Fatal(err)
	}
	res.CacheDir = filepath.Join(t.TempDir(), "cache")
	tasks, err := res.Resolve(context.Background(), benchmarks.SmokeIDs())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) < 6 {
		t.Fatalf("the smoke set has %d tasks, want at least 6", len(tasks))
	}
	runner := &executor.Runner{Backend: d, Runtime: rt}
	run := "smoke-" + randomID(t)
	// The group returns when every task has, so that this test's own
	// duration (what CI lists) is theirs.
	t.Run("tasks", func(t *testing.T) {
		for _, task := range tasks {
			t.Run(task.ID, func(t *testing.T) {
				t.Parallel()
				for _, tc := range []struct {
					agent executor.Agent
					check func(r float64) bool
					want  string
				}{
					{executor.OracleAgent{}, func(r float64) bool { return r == 1 }, "1"},
					{executor.NopAgent{}, func(r float64) bool { return r < 1 }, "below 1"},
				} {
					tr := runner.Run(context.Background(), executor.TrialSpec{Task: task, Agent: tc.agent, RunID: run,
						TrialID: task.ID + "-" + tc.agent.Name(), JobDir: filepath.Join(t.TempDir(), tc.agent.Name())})
					if tr.Status != executor.StatusScored || tr.Reward == nil {
						t.Fatalf("%s: status %s, errors %v", tc.agent.Name(), tr.Status, tr.Errors)
					}
					if !tc.check(*tr.Reward) {
						t.Errorf("%s scored %v, want %s", tc.agent.Name(), *tr.Reward, tc.want)
					}
				}
			})
		}
	})
}
