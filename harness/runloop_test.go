package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
)

// scriptedFailure fails the calls fail picks and passes the rest on.
type scriptedFailure struct {
	llm.Provider
	fail func(req llm.Request) error
}

func (p scriptedFailure) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := p.fail(req); err != nil {
		return llm.Response{}, err
	}
	return p.Provider.Complete(ctx, req)
}

func (tr *testRun) failCalls(fail func(req llm.Request) error) {
	for _, cl := range tr.run.Clients.byRole {
		cl.Provider = scriptedFailure{Provider: cl.Provider, fail: fail}
	}
}

var errSimulatedBudget = fmt.Errorf("%w: simulated", llm.ErrBudgetExhausted)

func mustLoadState(t *testing.T, dir string) *State {
	t.Helper()
	st, err := LoadState(dir)
	if err != nil || st == nil {
		t.Fatalf("state of %s: %v, %v", dir, st, err)
	}
	return st
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// testMatrix builds a matrix plan (nop agent, offline) and the execution
// Execute would make for it, with fake trials instead of a backend.
func testMatrix(t *testing.T, cfg *config.Config, o PlanOptions, force bool) (*planExecution, *fakeTrials) {
	t.Helper()
	o.Agent, o.Offline = AgentNop, true
	p, err := BuildMatrixPlan(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []*benchmarks.Task
	for _, id := range p.Tasks {
		tasks = append(tasks, &benchmarks.Task{ID: id, Instruction: "Solve " + id + "."})
	}
	ft := &fakeTrials{reward: map[string]float64{}, status: map[string]executor.Status{}}
	ex := &planExecution{opts: ExecOptions{Plan: p, ForceResume: force, Providers: providers.New}, cfg: cfg, tasks: tasks, trials: ft,
		ledger: llm.NewLedger(llm.Limits{})}
	return ex, ft
}

func runTestMatrix(t *testing.T, cfg *config.Config, o PlanOptions) *Outcome {
	t.Helper()
	ex, _ := testMatrix(t, cfg, o, false)
	out, err := ex.matrix(context.Background())
	if err != nil || out.Err != nil {
		t.Fatalf("matrix: %v, %v", err, out)
	}
	return out
}

// A state that cannot be trusted, nor rebuilt (full_traces keeps its trace
// summaries only there), stops every later resume too, instead of letting
// one start the run over and wipe its history.
func TestUntrustedStateRefusesEveryResume(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(dir string) error
	}{
		{"corrupt state.json", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"version": 1, "completed_iter`), 0o644)
		}},
		{"state.json gone after completed iterations", func(dir string) error {
			return os.Remove(filepath.Join(dir, "state.json"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTestRun(t, conditions.FullTraces, conditions.PolicyNone, []string{"a"}, 2, nil)
			tr.execute(t)
			dir := tr.run.Dir.Path
			history := readFile(t, filepath.Join(dir, rundir.HistoryFile))
			if err := tt.spoil(dir); err != nil {
				t.Fatal(err)
			}
			for attempt := 1; attempt <= 2; attempt++ {
				again := buildTestRun(tr.run.Config, tr.run.Dir, conditions.FullTraces, conditions.PolicyNone, []string{"a"}, 3)
				res := again.run.Iterate(context.Background())
				if !errors.Is(res.Err, rundir.ErrCorruptState) || !strings.Contains(res.Err.Error(), "start a new run") {
					t.Fatalf("resume %d: %v; want a refusal that says how to recover", attempt, res.Err)
				}
				if n := len(again.trials.specs); n != 0 {
					t.Errorf("resume %d ran %d trials", attempt, n)
				}
			}
			if got := readFile(t, filepath.Join(dir, rundir.HistoryFile)); !bytes.Equal(got, history) {
				t.Errorf("history changed:\n%s\nwas\n%s", got, history)
			}
			if n := countParts(dir); n != 2 {
				t.Errorf("%d metric parts left, want 2", n)
			}
		})
	}
}

func TestMatrixResumeStopsOnAnUntrustedRowState(t *testing.T) {
	cfg := testConfig(t, nil)
	o := PlanOptions{Tasks: []string{"a"}, Rows: BaselineRows()[:2], Iterations: 1, Seeds: []int64{7}, Concurrency: 2, OutDir: t.TempDir()}
	out := runTestMatrix(t, cfg, o)
	// The full_traces row: its state cannot be rebuilt from its other
	// records.
	rowDir := out.Rows[1].Dir
	// An interrupted matrix: neither row is completed.
	for _, ro := range out.Rows {
		d, err := rundir.Open(ro.Dir)
		if err != nil {
			t.Fatal(err)
		}
		d.UpdateManifest(func(m *rundir.Manifest) { m.Status = rundir.StatusInterrupted })
	}
	if err := os.WriteFile(filepath.Join(rowDir, "state.json"), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		ex, ft := testMatrix(t, cfg, PlanOptions{Resume: out.Dir, Iterations: 2, Concurrency: 2}, false)
		_, err := ex.matrix(context.Background())
		if !errors.Is(err, rundir.ErrCorruptState) {
			t.Fatalf("resume %d: %v; want rundir.ErrCorruptState", attempt, err)
		}
		if n := len(ft.specs); n != 0 {
			t.Errorf("resume %d ran %d trials", attempt, n)
		}
	}
	if n := countParts(rowDir); n != 1 {
		t.Errorf("the row has %d metric parts, want its 1", n)
	}
}

func TestMatrixResumeRefusesAChangedConfigurationBeforeAnyRow(t *testing.T) {
	cfg := testConfig(t, nil)
	o := PlanOptions{Tasks: []string{"a"}, Rows: BaselineRows()[:2], Iterations: 1, Seeds: []int64{7}, Concurrency: 2, OutDir: t.TempDir()}
	out := runTestMatrix(t, cfg, o)
	// The second row's creation was cut short by a crash.
	if err := os.RemoveAll(out.Rows[1].Dir); err != nil {
		t.Fatal(err)
	}
	manifest := readFile(t, filepath.Join(out.Dir, rundir.ManifestFile))

	changed := testConfig(t, func(c *config.Config) { c.Experiment.RewardMode = "binary" })
	ex, ft := testMatrix(t, changed, PlanOptions{Resume: out.Dir, Concurrency: 2}, false)
	res, err := ex.matrix(context.Background())
	if err != nil || !errors.Is(res.Err, ErrConfigChanged) {
		t.Fatalf("resume with a changed configuration: %v, %+v; want ErrConfigChanged", err, res)
	}
	if n := len(ft.specs); n != 0 {
		t.Errorf("the refused resume ran %d trials", n)
	}
	if _, err := os.Stat(out.Rows[1].Dir); !os.IsNotExist(err) {
		t.Errorf("the refused resume created row %s", out.Rows[1].Name)
	}
	if got := readFile(t, filepath.Join(out.Dir, rundir.ManifestFile)); !bytes.Equal(got, manifest) {
		t.Errorf("the refused resume rewrote the matrix run.json:\n%s", got)
	}

	forced, ft := testMatrix(t, changed, PlanOptions{Resume: out.Dir, Concurrency: 2}, true)
	if res, err := forced.matrix(context.Background()); err != nil || res.Err != nil || len(ft.specs) != 1 {
		t.Errorf("forced resume: %v, %+v, %d trials; want the missing row's one trial", err, res, len(ft.specs))
	}
	md, err := rundir.Open(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := md.Manifest(); m.ConfigFingerprint != config.Fingerprint(changed) || len(m.ForcedResumes) != 1 {
		t.Errorf("matrix run.json after a forced resume: fingerprint %s, forced_resumes %+v; want the new fingerprint recorded",
			m.ConfigFingerprint, m.ForcedResumes)
	}
}

func TestMatrixResumeExtendsCompletedRows(t *testing.T) {
	cfg := testConfig(t, nil)
	o := PlanOptions{Tasks: []string{"a", "b"}, Rows: BaselineRows()[:2], Iterations: 1, Seeds: []int64{7}, Concurrency: 2, OutDir: t.TempDir()}
	out := runTestMatrix(t, cfg, o)
	ex, ft := testMatrix(t, cfg, PlanOptions{Resume: out.Dir, Iterations: 2, Concurrency: 2}, false)
	for _, s := range ex.opts.Plan.ResumeSkips {
		if !strings.Contains(s, "resumes at iteration 2") {
			t.Errorf("plan says %q", s)
		}
	}
	res, err := ex.matrix(context.Background())
	if err != nil || res.Err != nil {
		t.Fatalf("extended resume: %v, %+v", err, res)
	}
	for _, ro := range res.Rows {
		if ro.Status != rundir.StatusCompleted || ro.Result.Iterations != 2 {
			t.Errorf("row %s: %s after %d iterations, want completed after 2", ro.Name, ro.Status, ro.Result.Iterations)
		}
		d, _ := rundir.Open(ro.Dir)
		if m := d.Manifest(); m.Iterations != 2 || m.CompletedIterations != 2 {
			t.Errorf("row %s run.json: iterations %d, completed %d; want 2 and 2", ro.Name, m.Iterations, m.CompletedIterations)
		}
	}
	if n := len(ft.specs); n != 4 {
		t.Errorf("%d trials, want iteration 2 of 2 tasks in 2 rows", n)
	}
	md, _ := rundir.Open(out.Dir)
	if m := md.Manifest(); m.Iterations != 2 {
		t.Errorf("matrix run.json iterations %d, want the extended 2", m.Iterations)
	}
}

// The wall clock of a matrix goes on from where it stopped: rows that ran
// one after the other add up.
func TestMatrixResumeKeepsTheWallClock(t *testing.T) {
	cfg := testConfig(t, nil)
	o := PlanOptions{Tasks: []string{"a"}, Rows: BaselineRows()[:2], Iterations: 2, Seeds: []int64{7}, Concurrency: 1, OutDir: t.TempDir()}
	ex, ft := testMatrix(t, cfg, o, false)
	ft.delay = 40 * time.Millisecond
	out, err := ex.matrix(context.Background())
	if err != nil || out.Err != nil {
		t.Fatalf("matrix: %v, %+v", err, out)
	}
	var rows time.Duration
	for _, ro := range out.Rows {
		rows += mustLoadState(t, ro.Dir).Ledger.Elapsed
	}
	again, _ := testMatrix(t, cfg, PlanOptions{Resume: out.Dir, Concurrency: 1}, false)
	md, _ := rundir.Open(out.Dir)
	if err := again.restoreMatrixLedger(md, again.opts.Plan.Rows); err != nil {
		t.Fatal(err)
	}
	if got := again.ledger.Snapshot().Elapsed; got < rows {
		t.Errorf("restored matrix wall clock %s, want at least the rows' %s", got, rows)
	}
}

// A budget stop leaves its iteration unfinished, like an interruption:
// nothing of it is checkpointed, and a resume with a larger budget runs it
// again whole, co-evolution included, so the dataset has no holes.
func TestBudgetStopRerunsTheIterationOnResume(t *testing.T) {
	tests := []struct {
		name    string
		stopsAt int
		setup   func(tr *testRun)
	}{
		{"the Advisor meets the budget", 2, func(tr *testRun) {
			tr.failCalls(func(req llm.Request) error {
				if req.Kind == mediator.KindAdvice {
					return errSimulatedBudget
				}
				return nil
			})
		}},
		{"a trial meets the budget", 2, func(tr *testRun) {
			tr.trials.status["b/2"] = executor.StatusBudgetExhausted
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tweak := func(c *config.Config) { c.Experiment.AdvisorBufferMax = 4 }
			tr := newTestRun(t, conditions.LearnedMediator, conditions.Policy{Executor: true}, []string{"a", "b"}, 3, tweak)
			tt.setup(tr)
			res := tr.run.Iterate(context.Background())
			if res.Status != rundir.StatusBudgetExhausted {
				t.Fatalf("status %s (%v), want a budget stop", res.Status, res.Err)
			}
			// The offline Planner's proposals (two per iteration, as the
			// reports name a missing output) fill the buffer of 4 in
			// iteration 2.
			st := mustLoadState(t, tr.run.Dir.Path)
			done := tt.stopsAt - 1
			if res.Iterations != done || st.CompletedIteration != done || countParts(tr.run.Dir.Path) != done {
				t.Errorf("after the stop: result %d iterations, state %d, %d metric parts; want %d: the stopped iteration is not kept",
					res.Iterations, st.CompletedIteration, countParts(tr.run.Dir.Path), done)
			}

			again := buildTestRun(tr.run.Config, tr.run.Dir, conditions.LearnedMediator, conditions.Policy{Executor: true}, []string{"a", "b"}, 3)
			if res := again.execute(t); res.Status != rundir.StatusCompleted || res.Iterations != 3 {
				t.Fatalf("resume: %+v", res)
			}
			rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
			if err != nil {
				t.Fatal(err)
			}
			var cells []string
			for _, r := range rows {
				cells = append(cells, fmt.Sprintf("%d/%s/%s", r.Iteration, r.TaskID, r.Status))
			}
			slices.Sort(cells)
			want := []string{"1/a/scored", "1/b/scored", "2/a/scored", "2/b/scored", "3/a/scored", "3/b/scored"}
			if !slices.Equal(cells, want) {
				t.Errorf("metrics after the resume = %v, want every cell once and scored: %v", cells, want)
			}
			if n := len(again.rec.ByKind(mediator.KindAdvice)); n != 1 {
				t.Errorf("the resumed run asked the Advisor %d times, want once (the batch of iteration 3)", n)
			}
			if st := mustLoadState(t, tr.run.Dir.Path); st.Batches != 1 {
				t.Errorf("batches decided = %d, want 1", st.Batches)
			}
		})
	}
}

// A Planner that fails leaves no trial to reward the task's pending
// entries with, so they are dropped, not rewarded later by another attempt.
func TestPlannerFailureDropsPendingEntries(t *testing.T) {
	tests := []struct {
		err    error
		status rundir.TrialStatus
	}{
		{errors.New("HTTP 500 after 4 attempts"), executor.StatusAgentError},
		{errSimulatedBudget, executor.StatusBudgetExhausted},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyNone, []string{"a", "b"}, 3, nil)
			tr.failCalls(func(req llm.Request) error {
				if req.Kind == mediator.KindPlan && req.Caller == "planner/i0002-a" {
					return tt.err
				}
				return nil
			})
			tr.run.Iterate(context.Background())
			dir := tr.run.Dir.Path
			var dropped bool
			for _, rec := range readJSONL[rundir.HistoryRecord](t, filepath.Join(dir, rundir.HistoryFile)) {
				dropped = dropped || (rec.Type == "drop" && rec.TaskID == "a" && rec.Iteration == 2 && rec.Status == tt.status && len(rec.IDs) > 0)
			}
			if !dropped {
				t.Errorf("no drop record for task a at iteration 2 with status %s", tt.status)
			}
			for _, e := range historyEntries(t, dir) {
				if e.TaskID == "a" && e.Iteration == 1 && e.Kind != rundir.EntryPlan && e.Reward != nil {
					t.Errorf("entry %s got reward %v from an attempt its plan never fed", e.ID, *e.Reward)
				}
			}
		})
	}
}

func TestInterruptSavesTheSpend(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyNone, []string{"a", "b"}, 3, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr.run.Events = func(e Event) {
		if e.Kind == "trial_done" && e.Iteration == 2 {
			cancel()
		}
	}
	if res := tr.run.Iterate(ctx); res.Status != rundir.StatusInterrupted {
		t.Fatalf("status %s (%v), want interrupted", res.Status, res.Err)
	}
	st := mustLoadState(t, tr.run.Dir.Path)
	spent := tr.run.Ledger.Snapshot()
	if st.CompletedIteration != 1 {
		t.Errorf("checkpoint at iteration %d, want 1", st.CompletedIteration)
	}
	if st.Ledger.Total != spent.Total || st.Ledger.Elapsed <= 0 {
		t.Errorf("saved spend %+v, want all that was spent, %+v", st.Ledger.Total, spent.Total)
	}
	// A resume starts from that spend.
	again := buildTestRun(tr.run.Config, tr.run.Dir, conditions.LearnedMediator, conditions.PolicyNone, []string{"a", "b"}, 3)
	again.run.Iterate(ctx)
	if got := again.run.Ledger.Total(); got != spent.Total {
		t.Errorf("resumed ledger %+v, want %+v", got, spent.Total)
	}
}

func TestProposalNamesOnlyExistingEntries(t *testing.T) {
	for _, cond := range []conditions.Condition{conditions.FullTraces, conditions.LearnedMediator} {
		t.Run(string(cond), func(t *testing.T) {
			tr := newTestRun(t, cond, conditions.Policy{Executor: true}, []string{"a", "b"}, 2, func(c *config.Config) {
				c.Experiment.AdvisorBufferMax = 100
			})
			tr.execute(t)
			st := mustLoadState(t, tr.run.Dir.Path)
			if len(st.Buffer) == 0 {
				t.Fatal("no proposal was made; the test needs some")
			}
			ids := map[string]bool{}
			for _, e := range historyEntries(t, tr.run.Dir.Path) {
				ids[e.ID] = true
			}
			for _, p := range st.Buffer {
				var report bool
				for _, id := range p.EntryIDs {
					if !ids[id] {
						t.Errorf("proposal %s names %s, which is not in the history", p.ID, id)
					}
					report = report || strings.HasSuffix(id, "/report")
				}
				if want := cond.MediatorRuns(); report != want {
					t.Errorf("proposal %s names a report: %v, want %v (%v)", p.ID, report, want, p.EntryIDs)
				}
			}
		})
	}
}

// A task that failed without a row fails the iteration even when another
// task stopped on the budget: no iteration is checkpointed with a row missing.
func TestErrorBesideABudgetStopFailsTheIteration(t *testing.T) {
	tr := newTestRun(t, conditions.NoFeedback, conditions.PolicyNone, []string{"a", "b"}, 2, nil)
	tr.trials.status["a/1"] = executor.StatusBudgetExhausted
	// The trace of b cannot be written.
	if err := os.MkdirAll(filepath.Join(tr.run.Dir.Path, "artifacts", "traces", "b", "0001.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := tr.run.Iterate(context.Background())
	if res.Status != rundir.StatusFailed {
		t.Errorf("status %s (%v), want failed", res.Status, res.Err)
	}
	if st := mustLoadState(t, tr.run.Dir.Path); st.CompletedIteration != 0 || countParts(tr.run.Dir.Path) != 0 {
		t.Errorf("iteration 1 checkpointed (state %d, %d parts) with task b's row missing", st.CompletedIteration, countParts(tr.run.Dir.Path))
	}
}

// A note is read once its file is written: an empty file, or one still
// being written, waits for a later iteration.
func TestHumanNoteIsReadOnlyOnceWritten(t *testing.T) {
	tr := newTestRun(t, conditions.NoFeedback, conditions.PolicyNone, []string{"a"}, 3, nil)
	notes := filepath.Join(tr.run.Dir.Path, "notes")
	past := time.Now().Add(-time.Minute)
	write := func(name, text string, settled bool) {
		path := filepath.Join(notes, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Error(err)
		}
		if settled {
			os.Chtimes(path, past, past)
		}
	}
	tr.run.Events = func(e Event) {
		if e.Kind != "iteration_done" {
			return
		}
		switch e.Iteration {
		case 1:
			write("empty.md", "", true)
			write("fresh.md", "FRESH-NOTE", false)
		case 2:
			write("empty.md", "LATE-NOTE", true)
			os.Chtimes(filepath.Join(notes, "fresh.md"), past, past)
		}
	}
	tr.execute(t)
	if p := tr.planPrompt(t, "a", 2); strings.Contains(p, "FRESH-NOTE") || strings.Contains(p, "Notes from the researchers") {
		t.Error("iteration 2 read a note still being written, or an empty one")
	}
	p := tr.planPrompt(t, "a", 3)
	for _, want := range []string{"FRESH-NOTE", "LATE-NOTE"} {
		if !strings.Contains(p, want) {
			t.Errorf("iteration 3 lacks %s:\n%s", want, p)
		}
	}
}

// The spend is on disk after every trial, so a process killed outright
// (no chance to save on the way out) loses none of it; the checkpoint
// does not move.
func TestSpendIsSavedAfterEveryTrial(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyNone, []string{"a"}, 2, nil)
	var afterIt1, midIt2 *State
	tr.run.Events = func(e Event) {
		switch {
		case e.Kind == "iteration_done" && e.Iteration == 1:
			afterIt1 = mustLoadState(t, tr.run.Dir.Path)
		case e.Kind == "trial_done" && e.Iteration == 2:
			midIt2 = mustLoadState(t, tr.run.Dir.Path)
		}
	}
	tr.execute(t)
	if afterIt1 == nil || midIt2 == nil {
		t.Fatal("events not seen")
	}
	if midIt2.CompletedIteration != 1 || midIt2.Ledger.Total.Calls <= afterIt1.Ledger.Total.Calls {
		t.Errorf("state during iteration 2: checkpoint %d, %d calls; want checkpoint 1 and more than the %d calls of iteration 1",
			midIt2.CompletedIteration, midIt2.Ledger.Total.Calls, afterIt1.Ledger.Total.Calls)
	}
}
