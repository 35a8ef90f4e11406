package harness

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// The dry run's estimate comes from what each role sends, and an offline
// full_coevolution run of the smoke set, every trial played by the offline
// agent in the in-memory world, spends within a factor 1.5 of it, in all
// and for each role that spends.
func TestDryRunTokensMatchTheSpend(t *testing.T) {
	cfg := e2eConfig(t)
	cfg.SetOffline()
	p, err := BuildRunPlan(cfg, PlanOptions{Tasks: benchmarks.SmokeIDs(), Preset: "full_coevolution", Iterations: 2,
		Seeds: []int64{42}, Agent: AgentLab, Offline: true, Concurrency: 2, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := ExecutePlan(context.Background(), onMemWorld(t, ExecOptions{Plan: p}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := LoadState(out.Rows[0].Dir)
	if err != nil || st == nil {
		t.Fatalf("state: %v", err)
	}
	spent := tokensByRole(st.Ledger)
	var total float64
	for role, tk := range spent.all {
		got, want := float64(p.EstimatedTokensByRole[role]), tk.in+tk.out
		total += want
		if got < want/1.5 || got > want*1.5 {
			t.Errorf("%s: estimated %v tokens, spent %v: not within a factor 1.5", role, got, want)
		}
	}
	if got := float64(p.EstimatedTokens); got < total/1.5 || got > total*1.5 {
		t.Errorf("estimated %v tokens, the run spent %v: not within a factor 1.5", got, total)
	}
	// Seven proposals in two iterations never fill a buffer of ten: no
	// batch, so no validation trial, planned or run.
	decisions, _ := filepath.Glob(filepath.Join(out.Rows[0].Dir, "artifacts", "validation", "*", rundir.DecisionFile))
	if len(decisions) == 0 && p.ValidationTrials != 0 {
		t.Errorf("planned %d validation trials; the run validated no batch", p.ValidationTrials)
	}
	t.Logf("estimated %d tokens (%v), spent %v", p.EstimatedTokens, p.EstimatedTokensByRole, total)
}
