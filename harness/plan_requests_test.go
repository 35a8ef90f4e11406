package harness

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// The dry run's estimate comes from what each role sends, and an offline
// full_coevolution run of the smoke set, every trial played by the offline
// agent in the in-memory world, spends within a factor 1.5 of it, in all
// and for each role that spends. With the shipped settings two iterations
// bring too few proposals to fill a batch, and the plan expects none.
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
	checkEstimate(t, p, out.Rows[0].Dir)
}

// checkEstimate holds the plan's tokens in all, and by role for every
// role spending at least a twentieth of them, and its validation trials
// within a factor 1.5 of what the run in dir spent. A role spending less
// makes a call or two in so short a run, a count the plan's expectation
// cannot match.
func checkEstimate(t *testing.T, p *Plan, dir string) {
	t.Helper()
	st, err := LoadState(dir)
	if err != nil || st == nil {
		t.Fatalf("state: %v", err)
	}
	spent := tokensByRole(st.Ledger).all
	var total float64
	for _, tk := range spent {
		total += tk.in + tk.out
	}
	for role, tk := range spent {
		got, want := float64(p.EstimatedTokensByRole[role]), tk.in+tk.out
		if want >= total/20 && (got < want/1.5 || got > want*1.5) {
			t.Errorf("%s: estimated %v tokens, spent %v: not within a factor 1.5", role, got, want)
		}
	}
	if got := float64(p.EstimatedTokens); got < total/1.5 || got > total*1.5 {
		t.Errorf("estimated %v tokens, the run spent %v: not within a factor 1.5", got, total)
	}
	// A validation trial keeps its trace in <batch>/<arm>/<task>/k<i>.
	traces, _ := filepath.Glob(filepath.Join(dir, rundir.ValidationBatchDir("*"), "*", "*", "*", rundir.TraceFile))
	validated := len(traces)
	if got, want := float64(p.ValidationTrials), float64(validated); got < want/1.5 || got > want*1.5 {
		t.Errorf("planned %v validation trials, the run had %v", got, want)
	}
	t.Logf("estimated %d tokens (%v), spent %v; validation trials %d planned, %d run", p.EstimatedTokens, p.EstimatedTokensByRole, total,
		p.ValidationTrials, validated)
}

// fakeModel answers every role through the fake endpoint as a terse,
// cooperative model would, leaving usage out so the client counts what it
// sent: the Executor runs one command, then submits; the Planner proposes
// an edit after about half the trials; the other roles answer their schema.
func fakeModel(t *testing.T) *llmtest.Server {
	srv := llmtest.NewServer(t)
	srv.Handle(func(q llmtest.Request) llmtest.Reply {
		if len(q.Chat.Tools) > 0 {
			for _, m := range q.Chat.Messages {
				if m.Role == "tool" {
					return llmtest.ToolCall("submit-1", "submit", `{"summary":"Ran the command and submitted."}`).WithoutUsage()
				}
			}
			return llmtest.ToolCall("run-1", "run_command", `{"command":"ls /app"}`).WithoutUsage()
		}
		var rf struct {
			JSONSchema struct {
				Name string `json:"name"`
			} `json:"json_schema"`
		}
		_ = json.Unmarshal(q.Chat.ResponseFormat, &rf)
		answers := map[string]any{
			"plan":   map[string]any{"plan": "1. List /app.\n2. Read the inputs the instruction names.\n3. Write the outputs.\n4. Submit."},
			"report": map[string]any{"abstraction_level": "trace", "withheld": false, "content": "The Executor submitted without writing its output.", "reasoning": "a lesson for the Planner"},
			"proposal": map[string]any{"propose": len(q.Raw)%2 == 0, "old_content": "", "new_content": "- Write every output before you submit.",
				"reasoning": "outputs were missing"},
			"advice":      map[string]any{"approve": true, "feedback": "Keep it short."},
			"skill_draft": map[string]any{"content": "---\nname: executor\ndescription: How to work on a task.\n---\n\n# Executor\n\n- Write every output before you submit.\n"},
			"reflection":  map[string]any{"no_change": true, "content": "", "reasoning": "no pattern"},
		}
		a, ok := answers[rf.JSONSchema.Name]
		if !ok {
			t.Errorf("request with no tools and unknown schema %q", rf.JSONSchema.Name)
			return llmtest.Status(400, "unexpected request")
		}
		return llmtest.JSON(a).WithoutUsage()
	})
	return srv
}

// Against a model endpoint the dry run assumes each agent uses half its
// call cap; with a cap of four and an agent that makes two calls, the
// estimate of what the roles send comes within a factor 1.5 of a
// full_coevolution run's spend against the fake server. Two iterations
// fill no batch: how many trials a gate decision spends depends on the
// edit (see docs/statistics.md), which no plan knows.
func TestDryRunTokensMatchTheFakeServersSpend(t *testing.T) {
	const env = "HARNESS_TEST_FAKE_KEY"
	t.Setenv(env, "sk-fake")
	srv := fakeModel(t)
	cfg := e2eConfig(t)
	for role, m := range cfg.Models {
		m.Provider, m.BaseURL, m.Model, m.APIKeyEnv, m.MaxRetries = config.ProviderOpenAI, srv.URL(), "fake-model", env, 0
		cfg.Models[role] = m
	}
	lab := cfg.Labs[config.DefaultLab]
	lab.MaxModelCalls, lab.ConcludeMargin = 4, 1
	cfg.Labs[config.DefaultLab] = lab
	p, err := BuildRunPlan(cfg, PlanOptions{Tasks: benchmarks.SmokeIDs(), Preset: "full_coevolution", Iterations: 2,
		Seeds: []int64{42}, Agent: AgentLab, Concurrency: 2, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := ExecutePlan(context.Background(), onMemWorld(t, ExecOptions{Plan: p}))
	if err != nil {
		t.Fatal(err)
	}
	checkEstimate(t, p, out.Rows[0].Dir)
}

// The dry run's model of a tournament (the extra drafts, the judge's
// comparisons in both orders, the validated candidates) comes within a
// factor 1.5 of what an offline full_coevolution run with tournaments spends.
func TestDryRunTokensMatchTheSpendOfATournament(t *testing.T) {
	cfg := e2eConfig(t)
	cfg.SetOffline()
	cfg.Experiment.AdvisorBufferMax = 2
	cfg.Tournament = config.Tournament{NCandidates: 3, ValidateTop: 1}
	p, err := BuildRunPlan(cfg, PlanOptions{Tasks: benchmarks.SmokeIDs(), Preset: "full_coevolution", Iterations: 3,
		Seeds: []int64{42}, Agent: AgentLab, Offline: true, Concurrency: 2, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.Notes, func(n string) bool {
		return strings.HasPrefix(n, "tournament: each approved batch yields 3 candidates")
	}) {
		t.Errorf("the dry run does not describe the tournament: %q", p.Notes)
	}
	if p.EstimatedTokensByRole[conditions.RoleJudge] == 0 {
		t.Fatal("the dry run expects no judge tokens")
	}
	out, err := ExecutePlan(context.Background(), onMemWorld(t, ExecOptions{Plan: p}))
	if err != nil {
		t.Fatal(err)
	}
	checkEstimate(t, p, out.Rows[0].Dir)
}

// A network row's share and intake decisions are priced: each barrier in
// its iterations adds a share decision per neighbour it sends to and an
// intake decision per neighbour sending to it, to the Mediator alone; a
// row that makes none is priced as without a network.
func TestDryRunPricesTheDiffusionCalls(t *testing.T) {
	cfg := e2eConfig(t)
	cfg.SetOffline()
	mediator := func(d *DiffusionCalls) (int64, map[conditions.Role]int64) {
		t.Helper()
		o := PlanOptions{Tasks: []string{"a"}, Rows: BaselineRows()[2:3], Iterations: 4, Seeds: []int64{1}, Agent: AgentLab, Offline: true,
			Concurrency: 1, OutDir: t.TempDir()}
		if d != nil {
			o.Diffusion = func(RowSpec) DiffusionCalls { return *d }
		}
		p, err := BuildMatrixPlan(cfg, o)
		if err != nil {
			t.Fatal(err)
		}
		return p.EstimatedTokensByRole[conditions.RoleMediator], p.EstimatedTokensByRole
	}
	base, baseRoles := mediator(nil)
	added := func(d DiffusionCalls) int64 {
		got, roles := mediator(&d)
		for role, n := range roles {
			if role != conditions.RoleMediator && n != baseRoles[role] {
				t.Errorf("%+v: %s estimated %d tokens, %d without the network", d, role, n, baseRoles[role])
			}
		}
		return got - base
	}
	if n := added(DiffusionCalls{Interval: 1}); n != 0 {
		t.Errorf("a row with no share or intake decisions adds %d Mediator tokens, want 0", n)
	}
	share, both := added(DiffusionCalls{Interval: 1, Share: 1}), added(DiffusionCalls{Interval: 1, Share: 1, Intake: 1})
	// One share decision carries the protocol and the executor skill.
	if share < 4*2000 {
		t.Errorf("4 share decisions add %d Mediator tokens, want at least 4 x 2000 (the protocol and the executor skill each)", share)
	}
	if both <= share {
		t.Errorf("intake decisions add nothing: %d with them, %d without", both, share)
	}
	if two := added(DiffusionCalls{Interval: 1, Share: 2}); two < 2*share-2 || two > 2*share+2 {
		t.Errorf("two neighbours add %d Mediator tokens, want twice one's %d", two, share)
	}
	// Every second iteration: 2 barriers in 4 iterations.
	if half := added(DiffusionCalls{Interval: 2, Share: 1}); half < share/2-2 || half > share/2+2 {
		t.Errorf("a barrier every 2 iterations adds %d Mediator tokens, want half of %d", half, share)
	}
}
