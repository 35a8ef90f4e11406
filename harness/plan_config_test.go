package harness

import (
	"context"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
)

// The command-line overrides are applied once, when the plan is built, and
// the plan's configuration is what the run records; the caller's stays as
// it was.
func TestPlanConfigCarriesTheOverrides(t *testing.T) {
	cfg := rundirTestConfig(t)
	cfg.ExecutorRuntime.MaxContainers = 8
	before := config.Fingerprint(cfg)
	usd, tokens := 12.5, int64(9000)
	p, err := BuildRunPlan(cfg, PlanOptions{Tasks: []string{"a"}, Iterations: 3, Seeds: []int64{7}, Offline: true,
		Concurrency: 2, BudgetUSD: &usd, BudgetTokens: &tokens})
	if err != nil {
		t.Fatal(err)
	}
	got := p.Config()
	if got.Budget.MaxUSD != usd || got.Budget.MaxTokens != tokens || p.BudgetUSD != usd || p.BudgetTokens != tokens {
		t.Errorf("budgets: config $%v %d tokens, plan $%v %d tokens", got.Budget.MaxUSD, got.Budget.MaxTokens, p.BudgetUSD, p.BudgetTokens)
	}
	if got.ExecutorRuntime.Concurrency != 2 || got.ExecutorRuntime.MaxContainers != 2 {
		t.Errorf("runtime: concurrency %d, max_containers %d; want 2 and 2", got.ExecutorRuntime.Concurrency, got.ExecutorRuntime.MaxContainers)
	}
	if got.Experiment.Iterations != 3 || got.Experiment.Seed != 7 {
		t.Errorf("experiment: %d iterations, seed %d", got.Experiment.Iterations, got.Experiment.Seed)
	}
	for _, role := range conditions.ModelRoles() {
		if m, err := got.Model(role); err == nil && m.Provider != config.ProviderOffline {
			t.Errorf("%s is played by %s, want offline", role, m.Provider)
		}
	}
	if config.Fingerprint(cfg) != before {
		t.Error("building the plan changed the caller's configuration")
	}
	if p.Config() == p.Config() {
		t.Error("Config returns the plan's own copy, not a fresh one")
	}
}

func TestRunTrialRefusesTheLab(t *testing.T) {
	_, err := RunTrial(context.Background(), TrialOptions{Config: rundirTestConfig(t), Agent: AgentLab})
	if err == nil {
		t.Fatal("the lab ran without model clients")
	}
}
