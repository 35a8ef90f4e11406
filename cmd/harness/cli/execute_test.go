package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
)

func TestProgressCountsTrialsAndSpend(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, &harness.Plan{Trials: 4, Rows: make([]harness.RowSpec, 2)}, false, true, time.Now)
	r := 0.5
	spend := llm.Usage{InputTokens: 100, OutputTokens: 20, CostUSD: 0.25, Retries: 3}
	for _, e := range []harness.Event{
		{Row: "a", Kind: "iteration_start", Iteration: 1},
		{Row: "a", Kind: "trial_start", Task: "t1"},
		{Row: "a", Kind: "trial_start", Task: "t2"},
		{Row: "a", Kind: "trial_end", Task: "t1"},
		{Row: "a", Kind: "trial_done", Task: "t1", Status: "scored", Reward: &r, Iteration: 1},
		// A trial whose plan failed is done without having started: it
		// takes no place from one in flight.
		{Row: "a", Kind: "trial_done", Task: "t3", Status: "agent_error", Iteration: 1},
		{Row: "a", Kind: "validation_trial_done", Task: "t1", Status: "scored"},
		{Row: "a", Kind: "run_done", Status: "completed", Spend: spend},
	} {
		p.event(e)
	}
	status := p.status()
	for _, want := range []string{"rows 1/2", "trials 2/4, 1 in flight, validation 1/~1", "scored 1", "120 tokens", "3 retries", "$0.2500", "eta"} {
		if !strings.Contains(status, want) {
			t.Errorf("status %q lacks %q", status, want)
		}
	}
	if !strings.Contains(buf.String(), "a iteration 1 t1: scored, reward 0.5") {
		t.Errorf("verbose trial line missing:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "row a: completed") {
		t.Errorf("row line missing:\n%s", buf.String())
	}
}

func TestProgressShowsEachTrialWarningOnce(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, &harness.Plan{Trials: 3, Rows: make([]harness.RowSpec, 1)}, false, false, time.Now)
	w := []string{"storage_mb = 2048 is not enforced"}
	for _, e := range []harness.Event{
		{Row: "a", Kind: "trial_done", Task: "t1", Status: "scored", Iteration: 1, Warnings: w},
		{Row: "a", Kind: "trial_done", Task: "t1", Status: "scored", Iteration: 2, Warnings: w},
		{Row: "a", Kind: "trial_done", Task: "t2", Status: "scored", Iteration: 1, Warnings: w},
		{Row: "a", Kind: "trial_done", Task: "t3", Status: "scored", Iteration: 1},
	} {
		p.event(e)
	}
	if got := strings.Count(buf.String(), "storage_mb = 2048 is not enforced"); got != 1 {
		t.Errorf("warning shown %d times, want once whatever the task:\n%s", got, buf.String())
	}
	var sum bytes.Buffer
	writeWarningCounts(&sum, p.warnings())
	if sum.String() != "warning (3 trial(s)): storage_mb = 2048 is not enforced\n" {
		t.Errorf("summary %q, want the warning once with its 3 trials", sum.String())
	}
}

// A resume that rebuilt a row's state.json says so on stderr, as a
// warning that names the row.
func TestProgressSaysAStateWasRebuilt(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, &harness.Plan{Trials: 3, Rows: make([]harness.RowSpec, 1)}, false, false, time.Now)
	p.event(harness.Event{Row: "a", Kind: harness.EventStateRebuilt, Message: "/runs/a/state.json was unreadable or missing and was rebuilt"})
	if !strings.Contains(buf.String(), "warning: row a: /runs/a/state.json was unreadable or missing and was rebuilt") {
		t.Errorf("progress output lacks the rebuild warning:\n%s", buf.String())
	}
}

func TestExecutePlanExitCodes(t *testing.T) {
	// The mapping from outcomes to exit codes is what scripts rely on.
	tests := []struct {
		out  harness.Outcome
		want int
	}{
		{harness.Outcome{Status: rundir.StatusCompleted, Trials: 4, Scored: 4}, ExitOK},
		{harness.Outcome{Status: rundir.StatusCompleted, Trials: 4, Scored: 3, EnvFailures: 1}, ExitEnvFailures},
		{harness.Outcome{Status: rundir.StatusCompleted, Trials: 4, Scored: 0}, ExitFailed},
		{harness.Outcome{Status: rundir.StatusCompleted, Trials: 4, EnvFailures: 4}, ExitEnvFailures},
		{harness.Outcome{Status: rundir.StatusBudgetExhausted, Trials: 2, Scored: 2}, ExitBudget},
		{harness.Outcome{Status: rundir.StatusInterrupted, Trials: 1, Scored: 1}, ExitInterrupted},
		{harness.Outcome{Status: rundir.StatusFailed, Err: errors.New("boom")}, ExitFailed},
		{harness.Outcome{Status: rundir.StatusFailed, Err: harness.ErrConfigChanged}, ExitUsage},
		{harness.Outcome{Status: rundir.StatusCompleted, Trials: 8, Scored: 4, Rows: []harness.RowOutcome{
			{Name: "ok", Result: harness.Result{Trials: 4, Scored: 4}},
			{Name: "dead-endpoint", Result: harness.Result{Trials: 4}},
		}}, ExitFailed},
		{harness.Outcome{Status: rundir.StatusCompleted, Trials: 8, Scored: 4, EnvFailures: 4, Rows: []harness.RowOutcome{
			{Name: "ok", Result: harness.Result{Trials: 4, Scored: 4}},
			{Name: "no-engine", Result: harness.Result{Trials: 4, EnvFailures: 4}},
		}}, ExitEnvFailures},
		{harness.Outcome{Status: rundir.StatusCompleted, Trials: 8, Scored: 5, Rows: []harness.RowOutcome{
			{Name: "a", Result: harness.Result{Trials: 4, Scored: 4}},
			{Name: "b", Result: harness.Result{Trials: 4, Scored: 1}},
		}}, ExitOK},
	}
	for _, tt := range tests {
		t.Run(string(tt.out.Status), func(t *testing.T) {
			var out bytes.Buffer
			err := outcomeError(&tt.out, &out, false)
			if got := ExitCode(err); got != tt.want {
				t.Errorf("exit %d (%v), want %d", got, err, tt.want)
			}
		})
	}
}

func TestRunWithAMissingTaskExits2AndCreatesNothing(t *testing.T) {
	cfgDir := t.TempDir()
	cache := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "default.toml"), []byte("[executor_runtime]\ntask_cache_dir = \""+cache+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	r := runCLI(t, engineFactory(), "run", "--tasks", "no-such-task", "--offline", "--iterations", "1",
		"--config-dir", cfgDir, "--out", out)
	if r.code != ExitUsage {
		t.Fatalf("exit %d, want %d\n%s", r.code, ExitUsage, r.errOut)
	}
	if !strings.Contains(r.errOut, "no-such-task") {
		t.Errorf("the error does not name the task: %s", r.errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--out was created although nothing could run")
	}
}

func TestRunRefusesToStartWithoutItsKeys(t *testing.T) {
	t.Setenv("OPENROUTER_API_KEY", "")
	out := filepath.Join(t.TempDir(), "out")
	r := runCLI(t, engineFactory(), "run", "--tasks", "orbital-period", "--iterations", "1", "--out", out)
	if r.code != ExitUsage || !strings.Contains(r.errOut, "OPENROUTER_API_KEY") {
		t.Fatalf("exit %d, stderr %q; want exit 2 naming the variable", r.code, r.errOut)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("--out was created although the run could not start")
	}
}

func TestWriteOutcomeSaysWhatTheCountsCover(t *testing.T) {
	tests := []struct {
		resumed bool
		want    string
	}{
		{false, "d: completed (4 trials, 0 environment failures)"},
		{true, "d: completed (4 trials in this session, 0 environment failures)"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		writeOutcome(&buf, &harness.Outcome{Dir: "d", Status: rundir.StatusCompleted, Resumed: tt.resumed, Trials: 4, Scored: 4,
			Rows: []harness.RowOutcome{{Name: "r1", Status: "interrupted", Error: "interrupted"}, {Name: "r2", Status: "failed", Error: "boom"}}})
		if strings.Contains(buf.String(), "iterations  interrupted") || !strings.Contains(buf.String(), "failed") || !strings.Contains(buf.String(), "  boom") {
			t.Errorf("row lines:\n%s", buf.String())
		}
		if first, _, _ := strings.Cut(buf.String(), "\n"); first != tt.want {
			t.Errorf("resumed=%v: %q, want %q", tt.resumed, first, tt.want)
		}
	}
}

// The elapsed time and the estimate come from the clock the progress is
// handed, so they follow the factory's clock rather than the wall's.
func TestProgressReadsItsClock(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := start
	p := newProgress(&bytes.Buffer{}, &harness.Plan{Trials: 4, Rows: make([]harness.RowSpec, 1)}, false, false, func() time.Time { return now })
	r := 1.0
	p.event(harness.Event{Row: "a", Kind: "trial_done", Task: "t1", Status: "scored", Reward: &r, Iteration: 1})
	p.event(harness.Event{Row: "a", Kind: "trial_done", Task: "t2", Status: "scored", Reward: &r, Iteration: 1})
	now = start.Add(90 * time.Second)
	if status := p.status(); !strings.Contains(status, "elapsed 1m30s, eta 1m30s") {
		t.Errorf("status %q, want elapsed 1m30s and eta 1m30s (two of four trials done)", status)
	}
}
