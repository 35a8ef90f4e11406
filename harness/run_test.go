package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/lab"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
)

// fakeTrials stands in for the Docker runner: it scores a trial from the
// task, the iteration and whether the executor skill carries the offline
// diligence advice, and marks its verifier output so tests can trace where
// each trial's evidence travels.
type fakeTrials struct {
	mu     sync.Mutex
	specs  []executor.TrialSpec
	reward map[string]float64 // per task; default 0.25
	// trialReward, per "task/iteration", overrides reward.
	trialReward map[string]float64
	status      map[string]executor.Status
	// warnings are added to every trace of a task.
	warnings map[string][]string
	delay    time.Duration
	// transcript makes every trial write a lab transcript of one failing
	// command, marked with its task and iteration.
	transcript bool
}

func (f *fakeTrials) Run(ctx context.Context, spec executor.TrialSpec) *executor.Trace {
	f.mu.Lock()
	f.specs = append(f.specs, spec)
	f.mu.Unlock()
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	tr := &executor.Trace{TaskID: spec.Task.ID, Iteration: spec.Iteration, TrialID: spec.TrialID, Agent: "fake",
		VerifierOutput: fmt.Sprintf("DIAG-%s-%d verifier output", spec.Task.ID, spec.Iteration), Warnings: f.warnings[spec.Task.ID]}
	// Like executor.Runner, the trace carries the wait before the trial.
	tr.Timings.Queue = spec.Queued
	if f.transcript {
		if err := writeFakeTranscript(spec); err != nil {
			tr.Status, tr.Errors = executor.StatusEnvFailure, []string{err.Error()}
			return tr
		}
		tr.JobDir, tr.TranscriptPath = spec.JobDir, lab.TranscriptFile
	}
	if st, ok := f.status[fmt.Sprintf("%s/%d", spec.Task.ID, spec.Iteration)]; ok {
		tr.Status = st
		tr.Errors = []string{"simulated " + string(st)}
		return tr
	}
	r, ok := f.reward[spec.Task.ID]
	if !ok {
		r = 0.25
	}
	if v, ok := f.trialReward[fmt.Sprintf("%s/%d", spec.Task.ID, spec.Iteration)]; ok {
		r = v
	}
	if strings.Contains(spec.ExecutorSkill, executor.DiligenceAdvice) {
		r = min(1, r+0.5)
	}
	tr.Status, tr.Reward = executor.StatusScored, &r
	// The failed test's name carries MARK (shown from verifier_feedback =
	// "tests" on); its assertion message and the verifier's output carry
	// DIAG (shown only under "diagnostics").
	tr.Tests = executor.Tests{Passed: 1, Failed: 1, Total: 2, Results: []executor.TestResult{
		{Name: "output exists", Status: "passed"},
		{Name: fmt.Sprintf("MARK-%s-%d out.txt exists", spec.Task.ID, spec.Iteration), Status: "failed",
			Message: fmt.Sprintf("DIAG-%s-%d: want 27.2852 days, got 27.4524381", spec.Task.ID, spec.Iteration)},
	}}
	tr.Errors = append(tr.Errors, executor.VerifierErrorPrefix+fmt.Sprintf("DIAG-%s-%d note", spec.Task.ID, spec.Iteration))
	return tr
}

func promptText(q llm.Request) string {
	var sb strings.Builder
	for _, m := range q.Messages {
		sb.WriteString(m.Content)
		sb.WriteString("\n")
	}
	return sb.String()
}

type testRun struct {
	run    *Run
	trials *fakeTrials
	rec    *llmtest.Recorder
}

func newTestRun(t *testing.T, cond conditions.Condition, pol conditions.Policy, taskIDs []string, iterations int, tweak func(*config.Config)) *testRun {
	t.Helper()
	cfg := testConfig(t, tweak)
	d, err := rundir.Create(t.TempDir(), rundir.Spec{Manifest: rundir.Manifest{Kind: rundir.KindRun, Condition: string(cond),
		Policy: pol.String(), Seed: 7, Iterations: iterations, Tasks: taskIDs}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := skills.WriteDefaults(filepath.Join(d.Path, "skills")); err != nil {
		t.Fatal(err)
	}
	return buildTestRun(cfg, d, cond, pol, taskIDs, iterations)
}

func testConfig(t *testing.T, tweak func(*config.Config)) *config.Config {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg.SetOffline()
	if tweak != nil {
		tweak(cfg)
	}
	return cfg
}

func buildTestRun(cfg *config.Config, d *rundir.Dir, cond conditions.Condition, pol conditions.Policy, taskIDs []string, iterations int) *testRun {
	spec := RowSpec{Name: "row", Condition: cond, Policy: pol, Lab: "default", Seed: 7}
	var tasks []*benchmarks.Task
	for _, id := range taskIDs {
		tasks = append(tasks, &benchmarks.Task{ID: id, Instruction: "Solve " + id + ". Write /app/out-" + id + ".txt."})
	}
	rec := &llmtest.Recorder{Inner: llm.NewOffline(7)}
	ledger := llm.NewLedger(llm.Limits{})
	clients := &Clients{byRole: map[conditions.Role]*llm.Client{}, offline: true}
	for _, role := range conditions.ModelRoles() {
		m, _ := cfg.Model(role)
		clients.byRole[role] = &llm.Client{Provider: rec, Ledger: ledger, Role: string(role), Model: m.RecordedName(role)}
	}
	ft := &fakeTrials{reward: map[string]float64{}, status: map[string]executor.Status{}}
	run := &Run{Spec: spec, Config: cfg, Tasks: tasks, Iterations: iterations, AgentKind: AgentLab, Offline: true,
		Dir: d, Concurrency: 2, Trials: ft, NewAgent: func(string) executor.Agent { return executor.NopAgent{} },
		Clients: clients, Ledger: ledger}
	return &testRun{run: run, trials: ft, rec: rec}
}

func (tr *testRun) execute(t *testing.T) Result {
	t.Helper()
	res := tr.run.Iterate(context.Background())
	if res.Err != nil {
		t.Fatalf("run failed: %v", res.Err)
	}
	return res
}

// planPrompt returns the plan prompt of a task at an iteration.
func (tr *testRun) planPrompt(t *testing.T, task string, it int) string {
	t.Helper()
	for _, q := range tr.rec.ByKind(mediator.KindPlan) {
		if q.Caller == fmt.Sprintf("planner/i%04d-%s", it, task) {
			return promptText(q)
		}
	}
	t.Fatalf("no plan request for %s at iteration %d", task, it)
	return ""
}

func historyEntries(t *testing.T, dir string) []rundir.Entry {
	t.Helper()
	h, err := rundir.OpenHistory(filepath.Join(dir, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	return h.Entries(nil)
}

func TestPlannerSeesWhatTheConditionAllows(t *testing.T) {
	tests := []struct {
		cond      conditions.Condition
		crossTask bool
		check     func(t *testing.T, tr *testRun)
	}{
		{cond: conditions.NoFeedback, check: func(t *testing.T, tr *testRun) {
			for it := 1; it <= 3; it++ {
				if p := tr.planPrompt(t, "a", it); strings.Contains(p, "MARK-") || strings.Contains(p, "SHARED-NOTE") {
					t.Errorf("iteration %d: no_feedback planner saw earlier evidence:\n%s", it, p)
				}
			}
		}},
		{cond: conditions.FullTraces, check: func(t *testing.T, tr *testRun) {
			p := tr.planPrompt(t, "a", 3)
			for _, want := range []string{"MARK-a-1", "MARK-a-2"} {
				if !strings.Contains(p, want) {
					t.Errorf("full_traces prompt lacks %s", want)
				}
			}
			if strings.Contains(p, "MARK-b-") || strings.Contains(p, crossTaskHeader) {
				t.Errorf("full_traces prompt shows another task's trace without cross-task feedback:\n%s", p)
			}
			if strings.Contains(tr.planPrompt(t, "a", 1), "MARK-") {
				t.Error("the first iteration has no earlier traces to show")
			}
		}},
		{cond: conditions.FullTraces, crossTask: true, check: func(t *testing.T, tr *testRun) {
			p := tr.planPrompt(t, "a", 3)
			i := strings.Index(p, crossTaskHeader)
			if i < 0 {
				t.Fatalf("cross-task feedback lacks its header:\n%s", p)
			}
			if j := strings.Index(p, "MARK-b-"); j < i {
				t.Errorf("another task's feedback appears outside the cross-task section:\n%s", p)
			}
		}},
		{cond: conditions.SharedNotes, check: func(t *testing.T, tr *testRun) {
			for it := 1; it <= 3; it++ {
				p := tr.planPrompt(t, "a", it)
				if !strings.Contains(p, "SHARED-NOTE-42") || strings.Contains(p, "MARK-") {
					t.Errorf("iteration %d: shared_notes prompt should hold the notes and nothing else:\n%s", it, p)
				}
			}
		}},
		{cond: conditions.StaticMediator, check: checkReportContext},
		{cond: conditions.LearnedMediator, check: checkReportContext},
	}
	for _, tt := range tests {
		name := string(tt.cond)
		if tt.crossTask {
			name += "+cross_task"
		}
		t.Run(name, func(t *testing.T) {
			tr := newTestRun(t, tt.cond, conditions.PolicyNone, []string{"a", "b"}, 3, func(c *config.Config) {
				c.Experiment.SharedNotes = "SHARED-NOTE-42"
				c.Experiment.AllowCrossTaskFeedback = tt.crossTask
			})
			tr.execute(t)
			tt.check(t, tr)
		})
	}
}

// checkReportContext asserts that under a mediator condition the Planner
// sees exactly the previous non-withheld report of the same task.
func checkReportContext(t *testing.T, tr *testRun) {
	entries := historyEntries(t, tr.run.Dir.Path)
	for it := 2; it <= 3; it++ {
		p := tr.planPrompt(t, "a", it)
		var latest *rundir.Entry
		for i := range entries {
			e := &entries[i]
			if e.Kind == "report" && e.TaskID == "a" && e.Iteration < it && !e.Withheld {
				latest = e
			}
		}
		for _, e := range entries {
			if e.Kind != "report" || e.Content == "" {
				continue
			}
			shown := strings.Contains(p, e.Content)
			want := latest != nil && e.ID == latest.ID
			if shown != want && !(shown && latest != nil && e.Content == latest.Content) {
				t.Errorf("iteration %d: report %s (task %s, withheld %v) shown=%v, want %v", it, e.ID, e.TaskID, e.Withheld, shown, want)
			}
		}
	}
}

func TestConcurrentTasksKeepTheirOwnRewards(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyNone, []string{"a", "b", "c"}, 4, nil)
	tr.trials.reward = map[string]float64{"a": 0.1, "b": 0.5, "c": 0.9}
	tr.execute(t)
	for _, e := range historyEntries(t, tr.run.Dir.Path) {
		if e.Reward == nil {
			if e.Iteration < 4 {
				t.Errorf("entry %s never got its delayed reward", e.ID)
			}
			continue
		}
		if want := tr.trials.reward[e.TaskID]; *e.Reward != want {
			t.Errorf("entry %s of task %s got reward %v, want its own task's %v", e.ID, e.TaskID, *e.Reward, want)
		}
	}
	for _, task := range []string{"a", "b", "c"} {
		for it := 1; it <= 4; it++ {
			var rep map[string]any
			data, err := os.ReadFile(filepath.Join(tr.run.Dir.Path, "artifacts", "reports", task, fmt.Sprintf("%04d.json", it)))
			if err != nil {
				t.Fatal(err)
			}
			if err := llm.DecodeJSON(string(data), &rep); err != nil {
				t.Fatal(err)
			}
			if rep["trial_id"] != fmt.Sprintf("i%04d-%s", it, task) {
				t.Errorf("report of %s iteration %d came from trial %v", task, it, rep["trial_id"])
			}
		}
	}
}

// A plan is credited with the trial it planned and a Mediator report with
// the task's next trial, the one whose plan it informed.
func TestPlansAndReportsAreCreditedByKind(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyNone, []string{"a"}, 3, nil)
	tr.trials.trialReward = map[string]float64{"a/1": 1, "a/2": 0, "a/3": 0.5}
	tr.execute(t)
	want := map[string]float64{"plan/1": 1, "plan/2": 0, "plan/3": 0.5, "report/1": 0, "report/2": 0.5}
	seen := 0
	for _, e := range historyEntries(t, tr.run.Dir.Path) {
		w, ok := want[fmt.Sprintf("%s/%d", e.Kind, e.Iteration)]
		switch {
		case !ok && e.Reward != nil:
			t.Errorf("entry %s credited with %v, want no outcome yet", e.ID, *e.Reward)
		case ok && (e.Reward == nil || *e.Reward != w):
			t.Errorf("entry %s credited with %v, want %v", e.ID, e.Reward, w)
		case ok:
			seen++
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d expected entries were credited", seen, len(want))
	}
}

func TestEnvFailureHasNoRewardAndDropsPendingTags(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyNone, []string{"a", "b"}, 3, nil)
	tr.trials.status["a/2"] = executor.StatusEnvFailure
	tr.execute(t)
	rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("got %d metric rows, want 6", len(rows))
	}
	for _, r := range rows {
		if r.TaskID == "a" && r.Iteration == 2 {
			if r.Status != "env_failure" || r.Reward != nil || !r.EnvFailure {
				t.Errorf("env failure row = status %s reward %v env_failure %v; want env_failure, NULL, true", r.Status, r.Reward, r.EnvFailure)
			}
		} else if r.Reward == nil {
			t.Errorf("row %s/%d lost its reward", r.TaskID, r.Iteration)
		}
	}
	for _, e := range historyEntries(t, tr.run.Dir.Path) {
		// A plan is credited with its own trial, so only a/1's report
		// waited for the unusable trace.
		if e.TaskID == "a" && e.Iteration == 1 && e.Kind != rundir.EntryPlan && e.Reward != nil {
			t.Errorf("entry %s was tagged with reward %v although the next trace of its task was unusable", e.ID, *e.Reward)
		}
		if e.TaskID == "a" && e.Iteration == 2 && e.Kind == rundir.EntryPlan && e.Reward != nil {
			t.Errorf("plan %s was credited with %v although its own trial was unusable", e.ID, *e.Reward)
		}
		if e.TaskID == "a" && e.Iteration == 2 && e.Role == "mediator" {
			t.Errorf("the Mediator reported on an unusable trace: %s", e.ID)
		}
	}
}

func TestHumanNoteReachesPlannerFromNextIteration(t *testing.T) {
	tr := newTestRun(t, conditions.NoFeedback, conditions.PolicyNone, []string{"a"}, 3, nil)
	// Drop the note while the run goes on: after iteration 1's trial.
	notePath := filepath.Join(tr.run.Dir.Path, "notes", "steer.md")
	tr.run.Events = func(e Event) {
		if e.Kind == "iteration_done" && e.Iteration == 1 {
			os.WriteFile(notePath, []byte("HUMAN-NOTE: prefer awk"), 0o644)
			// Written a while ago: a note still being written waits.
			past := time.Now().Add(-time.Minute)
			os.Chtimes(notePath, past, past)
		}
	}
	tr.execute(t)
	if strings.Contains(tr.planPrompt(t, "a", 1), "HUMAN-NOTE") {
		t.Error("the note reached the Planner before it was written")
	}
	for it := 2; it <= 3; it++ {
		if !strings.Contains(tr.planPrompt(t, "a", it), "HUMAN-NOTE: prefer awk") {
			t.Errorf("iteration %d: the Planner did not see the human note", it)
		}
	}
	var found bool
	for _, e := range historyEntries(t, tr.run.Dir.Path) {
		found = found || (e.Role == "human" && e.Iteration == 2 && strings.Contains(e.Content, "prefer awk"))
	}
	if !found {
		t.Error("the human note is not recorded in history")
	}
}

func TestMetricsAreOneRowPerTaskPerIteration(t *testing.T) {
	tr := newTestRun(t, conditions.FullTraces, conditions.PolicyNone, []string{"a", "b"}, 3, nil)
	tr.execute(t)
	rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range rows {
		seen[fmt.Sprintf("%s/%d", r.TaskID, r.Iteration)]++
		if r.Condition != "full_traces" || r.SkillUpdatePolicy != "none" || !r.Offline || r.ExecutorSkillHash == "" {
			t.Errorf("row lacks its labels: %+v", r)
		}
	}
	if len(seen) != 6 {
		t.Fatalf("rows cover %d task-iterations, want 6: %v", len(seen), seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s has %d rows", k, n)
		}
	}
	var st State
	data, _ := os.ReadFile(filepath.Join(tr.run.Dir.Path, "state.json"))
	if err := llm.DecodeJSON(string(data), &st); err != nil || st.CompletedIteration != 3 {
		t.Errorf("state.json: completed %d, err %v", st.CompletedIteration, err)
	}
	if m := tr.run.Dir.Manifest(); m.Status != rundir.StatusCompleted {
		t.Errorf("run.json status %q", m.Status)
	}
}

func (tr *testRun) runStore() *skills.Store {
	return &skills.Store{Root: filepath.Join(tr.run.Dir.Path, "skills")}
}

func writeDefaultSkills(d *rundir.Dir) error {
	return skills.WriteDefaults(filepath.Join(d.Path, "skills"))
}

func TestTinyTokenBudgetStopsTheRunWithStateSaved(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b"}, 5, nil)
	tr.run.Ledger = llm.NewLedger(llm.Limits{MaxTokens: 3000})
	for _, role := range conditions.ModelRoles() {
		tr.run.Clients.byRole[role].Ledger = tr.run.Ledger
	}
	res := tr.run.Iterate(context.Background())
	if res.Status != rundir.StatusBudgetExhausted {
		t.Fatalf("status %q (err %v), want %s", res.Status, res.Err, rundir.StatusBudgetExhausted)
	}
	if !errors.Is(res.Err, llm.ErrBudgetExhausted) {
		t.Errorf("error %v does not wrap ErrBudgetExhausted", res.Err)
	}
	if res.Iterations >= 5 {
		t.Errorf("the run went on to iteration %d despite the budget", res.Iterations)
	}
	st, err := LoadState(tr.run.Dir.Path)
	if err != nil || st == nil {
		t.Fatalf("no state saved: %v", err)
	}
	if m := tr.run.Dir.Manifest(); m.Status != rundir.StatusBudgetExhausted {
		t.Errorf("run.json status %q", m.Status)
	}
	if st.Ledger.Total.Tokens() < 3000 {
		t.Logf("ledger total %d", st.Ledger.Total.Tokens())
	}
}

// failingProvider fails every call of one kind for good, as a model whose
// retries ran out would.
type failingProvider struct {
	llm.Provider
	kind llm.Kind
}

func (f failingProvider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if req.Kind == f.kind {
		return llm.Response{}, errors.New("HTTP 500 after 4 attempts")
	}
	return f.Provider.Complete(ctx, req)
}

func TestModelFailuresFailTheWorkNotTheRun(t *testing.T) {
	for _, kind := range []llm.Kind{mediator.KindPlan, mediator.KindReport, mediator.KindProposal, mediator.KindAdvice, mediator.KindSkillDraft, mediator.KindReflection} {
		t.Run(string(kind), func(t *testing.T) {
			tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b"}, 4, func(c *config.Config) {
				c.Experiment.AdvisorBufferMax = 2
				c.Experiment.CoevoInterval = 2
			})
			for _, cl := range tr.run.Clients.byRole {
				cl.Provider = failingProvider{Provider: cl.Provider, kind: kind}
			}
			res := tr.run.Iterate(context.Background())
			if res.Status != rundir.StatusCompleted || res.Iterations != 4 {
				t.Fatalf("run ended %s after %d iterations (%v); want completed after 4", res.Status, res.Iterations, res.Err)
			}
			rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
			if err != nil || len(rows) != 8 {
				t.Fatalf("%d metric rows (%v), want 8", len(rows), err)
			}
			if kind == mediator.KindPlan {
				for _, r := range rows {
					if r.Status != "agent_error" || r.Reward != nil {
						t.Errorf("a trial without a plan is status %s reward %v; want agent_error and no reward", r.Status, r.Reward)
					}
				}
			}
		})
	}
}

func TestResumeRefusesAChangedConfiguration(t *testing.T) {
	tr := newTestRun(t, conditions.NoFeedback, conditions.PolicyNone, []string{"a"}, 2, nil)
	tr.execute(t)
	changed := testConfig(t, func(c *config.Config) { c.Experiment.RewardMode = "binary" })
	again := buildTestRun(changed, tr.run.Dir, conditions.NoFeedback, conditions.PolicyNone, []string{"a"}, 3)
	res := again.run.Iterate(context.Background())
	if !errors.Is(res.Err, ErrConfigChanged) || !strings.Contains(res.Err.Error(), "--force") {
		t.Fatalf("resume with a changed configuration: %v; want a refusal that mentions --force", res.Err)
	}
	if m, _ := rundir.Open(tr.run.Dir.Path); m.Manifest().Status != rundir.StatusCompleted {
		t.Errorf("a refused resume changed run.json to %q", m.Manifest().Status)
	}
	forced := buildTestRun(changed, tr.run.Dir, conditions.NoFeedback, conditions.PolicyNone, []string{"a"}, 3)
	forced.run.ForceResume = true
	if res := forced.run.Iterate(context.Background()); res.Err != nil || res.Iterations != 3 {
		t.Fatalf("forced resume: %+v", res)
	}
	if got := len(forced.trials.specs); got != 1 {
		t.Errorf("the forced resume ran %d trials, want only iteration 3's", got)
	}
	// The records say which configuration ran from which iteration on.
	d, err := rundir.Open(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	m := d.Manifest()
	wantFP := config.Fingerprint(changed)
	if m.ConfigFingerprint != wantFP || len(m.ForcedResumes) != 1 || m.ForcedResumes[0].FromIteration != 3 ||
		m.ForcedResumes[0].Was != config.Fingerprint(tr.run.Config) || m.ForcedResumes[0].Now != wantFP {
		t.Fatalf("run.json after a forced resume: fingerprint %s, forced_resumes %+v", m.ConfigFingerprint, m.ForcedResumes)
	}
	if cfg, err := d.ResolvedConfig(); err != nil || cfg.Experiment.RewardMode != "binary" {
		t.Errorf("config.toml after a forced resume: %v, %v; want the new configuration", cfg, err)
	}
	kept, err := config.Parse(readFile(t, filepath.Join(d.Path, m.ForcedResumes[0].KeptConfig)), "kept")
	if err != nil || config.Fingerprint(kept) != config.Fingerprint(tr.run.Config) {
		t.Errorf("the earlier configuration was not kept: %v", err)
	}
	if st := mustLoadState(t, d.Path); st.ConfigFingerprint != wantFP {
		t.Errorf("state fingerprint %s, want the new one", st.ConfigFingerprint)
	}
	// A later plain resume with the new configuration goes through.
	later := buildTestRun(changed, tr.run.Dir, conditions.NoFeedback, conditions.PolicyNone, []string{"a"}, 4)
	if res := later.run.Iterate(context.Background()); res.Err != nil || res.Iterations != 4 {
		t.Fatalf("plain resume after a forced one: %+v", res)
	}
}

// Resuming a finished run does nothing and still reports every iteration
// done, not zero.
func TestResumeOfACompletedRunRunsNothing(t *testing.T) {
	tr := newTestRun(t, conditions.NoFeedback, conditions.PolicyNone, []string{"a", "b"}, 2, nil)
	if res := tr.execute(t); res.Iterations != 2 || res.Trials != 4 {
		t.Fatalf("first run: %+v", res)
	}
	again := buildTestRun(tr.run.Config, tr.run.Dir, conditions.NoFeedback, conditions.PolicyNone, []string{"a", "b"}, 2)
	res := again.execute(t)
	if res.Status != "completed" || res.Iterations != 2 || res.Trials != 0 || len(again.trials.specs) != 0 {
		t.Errorf("resume of a completed run: %+v, %d trials started; want completed, 2 iterations, no trials", res, len(again.trials.specs))
	}
}

// Trace warnings (task settings a sandbox could not honour) are counted per
// task and message in run.json, over completed iterations.
func TestTrialWarningsAreCountedInTheManifest(t *testing.T) {
	tr := newTestRun(t, conditions.NoFeedback, conditions.PolicyNone, []string{"a", "b"}, 3, nil)
	tr.trials.warnings = map[string][]string{"a": {"storage_mb = 10 is not enforced"}}
	tr.execute(t)
	d, err := rundir.Open(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a: storage_mb = 10 is not enforced": 3}
	if got := d.Manifest().TrialWarnings; !maps.Equal(got, want) {
		t.Errorf("run.json trial_warnings = %v, want %v", got, want)
	}
	rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		want := []string{}
		if row.TaskID == "a" {
			want = []string{"storage_mb = 10 is not enforced"}
		}
		if !slices.Equal(row.Warnings, want) {
			t.Errorf("metrics row %s/%d warnings = %q, want %q", row.TaskID, row.Iteration, row.Warnings, want)
		}
	}
}
