package network

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// A lab waiting at the barrier for a lab that stopped stops waiting, with
// an error naming that lab and how it ended, which the run reads to end
// the waiting lab for the same cause.
func TestBarrierNamesTheNeighbourThatStopped(t *testing.T) {
	for _, status := range []rundir.Status{rundir.StatusBudgetExhausted, rundir.StatusFailed} {
		t.Run(string(status), func(t *testing.T) {
			s := Settings{Labs: []string{"a", "b"}, Topology: Ring, Diffusion: []string{Broadcast}, Interval: 1}
			x, err := NewExchange(t.TempDir(), s)
			if err != nil {
				t.Fatal(err)
			}
			x.Stopped(harness.RowSpec{Name: "broadcast-a", Lab: "a", Seed: 1}, status)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = x.Barrier(harness.RowSpec{Name: "broadcast-b", Lab: "b", Seed: 1})(ctx, harness.Exchange{Lab: "b", Seed: 1, Since: 1, Iteration: 1})
			var ns *harness.NeighbourStoppedError
			if !errors.As(err, &ns) || ns.Lab != "a" || ns.Status != status || ns.Iteration != 1 {
				t.Errorf("barrier error %v, want one saying lab a ended %s before iteration 1's exchange", err, status)
			}
		})
	}
}
