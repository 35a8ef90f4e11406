package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness"
)

// A run of an agent that calls no model needs no API key, with or without
// --offline, and its plan holds only that agent's trials: no model role,
// no tokens, no validation trials, no condition that would call a model.
func TestModelFreeAgentsNeedNoKeyAndPlanOnlyTheirTrials(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, agent := range []string{harness.AgentOracle, harness.AgentNop} {
		t.Run(agent, func(t *testing.T) {
			f := testFactory()
			f.Getenv = noEnv
			r := runCLI(t, f, "run", "--agent", agent, "--tasks", "orbital-period,csv-parser", "--dry-run", "--json")
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.errOut)
			}
			var p harness.Plan
			if err := json.Unmarshal([]byte(r.out), &p); err != nil {
				t.Fatalf("%v\n%s", err, r.out)
			}
			if p.Agent != agent || len(p.Rows) != 1 || p.Rows[0].Condition != conditions.NoFeedback || !p.Rows[0].Policy.IsNone() {
				t.Errorf("agent %s, rows %+v; want one no_feedback row without skill updates", p.Agent, p.Rows)
			}
			if p.EstimatedTokens != 0 || len(p.Models) != 0 || p.ValidationTrials != 0 || p.EvaluationTrials != 0 || p.EstimatedCostUSD != 0 {
				t.Errorf("plan calls models: %d tokens, models %v, %d validation and %d evaluation trials, $%v",
					p.EstimatedTokens, p.Models, p.ValidationTrials, p.EvaluationTrials, p.EstimatedCostUSD)
			}
			if p.Trials != 2*p.Iterations {
				t.Errorf("%d trials, want 2 tasks x %d iterations", p.Trials, p.Iterations)
			}

			// The run itself starts without a key too.
			started := false
			f.Execute = func(context.Context, *ValidatedPlan) error { started = true; return nil }
			r = runCLI(t, f, "run", "--agent", agent, "--tasks", "orbital-period", "--iterations", "1", "--out", t.TempDir())
			if r.code != ExitOK || !started {
				t.Errorf("run without a key: exit %d, started %v: %s", r.code, started, r.errOut)
			}
		})
	}
}

// A condition asked for explicitly with such an agent is kept, and the
// model calls it makes are planned and need their key like any other.
func TestModelFreeAgentKeepsAnExplicitCondition(t *testing.T) {
	f := testFactory()
	f.Getenv = func(string) string { return "" }
	r := runCLI(t, f, "run", "--agent", "oracle", "--tasks", "orbital-period", "--dry-run", "--condition", "static_mediator", "--skill-updates", "none")
	if r.code != ExitUsage || !strings.Contains(r.errOut, "OPENROUTER_API_KEY") || !strings.Contains(r.errOut, "mediator") {
		t.Errorf("static_mediator without a key: exit %d: %s", r.code, r.errOut)
	}
	r = runCLI(t, nil, "run", "--agent", "oracle", "--tasks", "orbital-period", "--dry-run", "--json", "--condition", "static_mediator", "--skill-updates", "none")
	var p harness.Plan
	if err := json.Unmarshal([]byte(r.out), &p); err != nil {
		t.Fatalf("%v\n%s%s", err, r.out, r.errOut)
	}
	if _, ok := p.Models[conditions.RoleMediator]; !ok || p.Rows[0].Condition != conditions.StaticMediator {
		t.Errorf("plan rows %+v models %v, want static_mediator with Mediator calls", p.Rows, p.Models)
	}
	if _, ok := p.Models[conditions.RolePlanner]; ok {
		t.Errorf("the oracle's plan counts Planner calls: %v", p.Models)
	}
}

// A run whose binary does not know its commit warns on stderr and says how
// to build one that does; a known commit adds no warning.
func TestRunWarnsOfABuildWithoutCommit(t *testing.T) {
	for _, commit := range []string{"unknown", "0123456789abcdef0123456789abcdef01234567"} {
		f := testFactory()
		f.Execute = func(context.Context, *ValidatedPlan) error { return nil }
		cmd := NewCmdRun(f, func(ctx context.Context, o *RunOptions) error {
			o.GitCommit = func() string { return commit }
			return runRun(ctx, o)
		})
		var errOut strings.Builder
		f.IO = IOStreams{Out: io.Discard, ErrOut: &errOut}
		cmd.SetArgs([]string{"--agent", "oracle", "--tasks", "orbital-period", "--iterations", "1", "--out", t.TempDir()})
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("commit %s: %v", commit, err)
		}
		warned := strings.Contains(errOut.String(), "make build")
		if warned != (commit == "unknown") {
			t.Errorf("commit %s: stderr %q", commit, errOut.String())
		}
	}
}
