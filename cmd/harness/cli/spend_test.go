package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// endpointConfig writes a configuration directory whose every model role
// calls the fake server, priced at usdPerMTok for input and output, reading
// its key from keyEnv (none when empty), with maxRetries retries.
func endpointConfig(t *testing.T, srv *llmtest.Server, usdPerMTok float64, keyEnv string, maxRetries int) string {
	t.Helper()
	var toml strings.Builder
	fmt.Fprintf(&toml, "[executor_runtime]\ntask_cache_dir = %q\n", t.TempDir())
	for _, role := range conditions.ModelRoles() {
		fmt.Fprintf(&toml, "[models.%s]\nbase_url = %q\napi_key_env = %q\nmodel = \"test/%s-model\"\nmax_retries = %d\n"+
			"price_input_per_mtok = %g\nprice_output_per_mtok = %g\ncontext_tokens = 65536\n",
			role, srv.URL(), keyEnv, role, maxRetries, usdPerMTok, usdPerMTok)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "default.toml"), []byte(toml.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fakeEngine is a Factory with the in-memory scoring backend and the
// configured (OpenAI-compatible) providers.
func fakeEngine() *Factory {
	f := testFactory()
	backend := &scoringBackend{rewards: map[string]float64{"csv-parser": 1, "log-analysis": 0.5}}
	f.Sandbox = func(context.Context, config.ExecutorRuntime) (SandboxBackend, error) { return backend, nil }
	f.Providers = providers.New
	return f
}

// onlyRun returns the one run directory under out.
func onlyRun(t *testing.T, out string) string {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(out, "*-*"))
	if len(runs) != 1 {
		t.Fatalf("run directories under %s: %v", out, runs)
	}
	return runs[0]
}

// savedLedger is the spend a run saved: its checkpoint's ledger with the
// spend journal since added.
func savedLedger(t *testing.T, dir string) llm.LedgerSnapshot {
	t.Helper()
	st, err := harness.LoadState(dir)
	if err != nil || st == nil {
		t.Fatalf("state of %s: %v, %v", dir, st, err)
	}
	return st.Ledger
}

// callLines decodes a run's call log.
func callLines(t *testing.T, dir string) []rundir.CallRecord {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, rundir.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []rundir.CallRecord
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c rundir.CallRecord
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		out = append(out, c)
	}
	return out
}

// Against an endpoint that reports no usage, every answer is charged at an
// estimate, so a dollar budget stops the run within one call of its limit,
// and the estimate is marked in the ledger, the call log and the metrics.
func TestBudgetBindsAnEndpointWithoutUsage(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.Text(strings.Repeat("Here is prose, not the JSON asked for. ", 20)).WithoutUsage()
	})
	cfgDir := endpointConfig(t, srv, 100, "", 0)

	// Unbounded, one iteration: the row says how much of it was estimated.
	out := t.TempDir()
	r := runCLI(t, fakeEngine(), "run", "--tasks", "csv-parser", "--agent", "lab", "--iterations", "1", "-j", "1",
		"--condition", "no_feedback", "--skill-updates", "none", "--config-dir", cfgDir, "--out", out)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	rows, err := rundir.ReadMetrics(onlyRun(t, out))
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	row := rows[0]
	tokens := row.PlannerInputTokens + row.PlannerOutputTokens + row.ExecutorInputTokens + row.ExecutorOutputTokens
	if row.EstimatedTokens == 0 || row.EstimatedTokens != tokens || row.PlannerCostUSD <= 0 {
		t.Errorf("row: %d estimated of %d tokens, planner $%v; want every token estimated and priced", row.EstimatedTokens, tokens, row.PlannerCostUSD)
	}
	perCall := 0.0
	for _, c := range callLines(t, onlyRun(t, out)) {
		if c.Usage.EstimatedTokens == 0 || c.Usage.EstimatedTokens != c.Usage.Tokens() {
			t.Errorf("call %s: usage %+v, want every token estimated", c.Caller, c.Usage)
		}
		perCall = max(perCall, c.Usage.CostUSD)
	}

	// A budget of a few calls over many iterations stops the run there.
	const budget = 0.5
	out = t.TempDir()
	before := srv.Count()
	r = runCLI(t, fakeEngine(), "run", "--tasks", "csv-parser", "--agent", "lab", "--iterations", "50", "-j", "1",
		"--condition", "no_feedback", "--skill-updates", "none", "--config-dir", cfgDir, "--out", out,
		"--budget-usd", fmt.Sprint(budget))
	if r.code != ExitBudget {
		t.Fatalf("exit %d, want %d (budget)\n%s%s", r.code, ExitBudget, r.out, r.errOut)
	}
	dir := onlyRun(t, out)
	ledger := savedLedger(t, dir)
	spent := ledger.Total.CostUSD
	if spent < budget || spent > budget+perCall*1.5 {
		t.Errorf("spent $%.4f with a budget of $%.2f; want it reached and passed by at most one call (about $%.4f)", spent, budget, perCall)
	}
	calls := callLines(t, dir)
	sum := 0.0
	sent := 0
	for _, c := range calls {
		sum += c.Usage.CostUSD
		if c.Attempts > 0 {
			sent++
		}
	}
	if d := sum - spent; d > 1e-9 || d < -1e-9 {
		t.Errorf("the call log charges $%.6f, the ledger $%.6f", sum, spent)
	}
	if got := srv.Count() - before; got != sent || ledger.Total.Calls != int64(sent) {
		t.Errorf("server saw %d requests, call log %d sent calls, ledger %d calls; want all equal", got, sent, ledger.Total.Calls)
	}
}

// A call that exhausts its retries is counted and charged what was sent, in
// the ledger and in its trial's row.
func TestExhaustedRetriesAreInTheLedgerAndTheRow(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Handle(func(q llmtest.Request) llmtest.Reply {
		if q.Chat.Model == "test/planner-model" {
			return llmtest.ServerError()
		}
		return llmtest.Text("done")
	})
	cfgDir := endpointConfig(t, srv, 100, "", 1)
	out := t.TempDir()
	r := runCLI(t, fakeEngine(), "run", "--tasks", "csv-parser", "--agent", "lab", "--iterations", "1",
		"--condition", "no_feedback", "--skill-updates", "none", "--config-dir", cfgDir, "--out", out)
	// No trial could be scored, which the command reports as a failure.
	if r.code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, ExitFailed, r.out, r.errOut)
	}
	dir := onlyRun(t, out)
	rows, err := rundir.ReadMetrics(dir)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	row := rows[0]
	if row.Status != "agent_error" || row.ModelFailures != 1 || row.ModelRetries != 1 || row.ModelCalls != 1 ||
		row.PlannerInputTokens == 0 || row.EstimatedTokens != row.PlannerInputTokens {
		t.Errorf("row: status %s, %d calls, %d failures, %d retries, planner %d input tokens (%d estimated); "+
			"want agent_error and one failed call with one retry, its two attempts charged at an estimate",
			row.Status, row.ModelCalls, row.ModelFailures, row.ModelRetries, row.PlannerInputTokens, row.EstimatedTokens)
	}
	u := savedLedger(t, dir).ByCaller["planner/i0001-csv-parser"]
	if u.Calls != 1 || u.Failures != 1 || u.Retries != 1 || u.InputTokens != row.PlannerInputTokens {
		t.Errorf("ledger for the planner: %+v; want 1 call, 1 failure, 1 retry and the row's %d tokens", u, row.PlannerInputTokens)
	}
}
