package docker

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/executor"
)

// A solution that does its work and then leaves a fork bomb running (the
// container at its process limit) is still scored by its verifier, every
// time: the agent's processes are stopped from outside the container, so
// test.sh can start. Each trial is bounded, and no container is left. A CPU
// hog runs beside it, as a loaded engine is where the verifier used to be
// lost.
func TestDockerForkBombIsScored(t *testing.T) {
	d := newTestDocker(t)
	stopHog := cpuHog()
	defer stopHog()
	task, err := benchmarks.Load(filepath.Join("testdata", "forkbomb"))
	if err != nil {
		t.Fatal(err)
	}
	trials := 10
	if testing.Short() {
		trials = 2
	}
	// Generous: a CPU hog runs beside it, and on a shared 2-core machine at
	// a load average of 80 a trial took up to two minutes, its setup alone
	// 20 s.
	const bound = 150 * time.Second
	// The trials run as many at once as go test's -parallel allows (the
	// core count by default): two bombs beside each other load the engine
	// more, not less, and the test takes half the time on two cores.
	t.Run("trials", func(t *testing.T) {
		for i := range trials {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 2*bound)
				defer cancel()
				tr, _ := runTrial(t, d, ctx, task, executor.OracleAgent{}, executor.RewardModeVerifier)
				if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 1 {
					t.Errorf("status %s reward %v errors %v", tr.Status, tr.Reward, tr.Errors)
				}
				if tr.Timings.Total > bound {
					t.Errorf("took %s, over the %s bound", tr.Timings.Total, bound)
				}
			})
		}
	})
}

// cpuHog keeps one core busy until the returned function is called.
func cpuHog() (stop func()) {
	var done atomic.Bool
	go func() {
		for n := 0; !done.Load(); n++ {
		}
	}()
	return func() { done.Store(true) }
}
