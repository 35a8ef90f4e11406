package harness

import (
	"context"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/mediator"
)

// A lab whose barrier finds a neighbour stopped ends with that neighbour's
// cause when it is a spent budget, and failed otherwise; either way its
// record names the lab and what ended it.
func TestALabStopsWithItsNeighboursBudget(t *testing.T) {
	tests := []struct {
		neighbour rundir.Status
		want      rundir.Status
		says      string
	}{
		{rundir.StatusBudgetExhausted, rundir.StatusBudgetExhausted, "stopped because lab b ended: budget_exhausted"},
		{rundir.StatusFailed, rundir.StatusFailed, "stopped because lab b ended: failed"},
	}
	for _, tt := range tests {
		t.Run(string(tt.neighbour), func(t *testing.T) {
			cfg := testConfig(t, nil)
			ex, _ := testMatrix(t, cfg, PlanOptions{Tasks: []string{"x"}, Rows: BaselineRows()[:1], Iterations: 2, Seeds: []int64{1},
				Concurrency: 1, OutDir: t.TempDir()}, false)
			ex.opts.BarrierInterval = 1
			ex.opts.Barrier = func(RowSpec) BarrierFunc {
				return func(context.Context, Exchange) ([]mediator.Proposal, error) {
					return nil, &NeighbourStoppedError{Lab: "b", Group: "mediated-seed1", Status: tt.neighbour, Iteration: 1}
				}
			}
			out, err := ex.matrix(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Rows) != 1 || out.Rows[0].Status != tt.want || !strings.Contains(out.Rows[0].Error, tt.says) {
				t.Errorf("rows = %+v, want one %s saying %q", out.Rows, tt.want, tt.says)
			}
		})
	}
}
