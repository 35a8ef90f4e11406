package inspect

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// runFixture is a finished run of two tasks over two iterations with a
// committed skill update (repeated on both rows of iteration 2, as the
// harness writes it), sidecar files and spend.
func runFixture(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, "20250301T120000Z-42-full_coevolution")
	writeManifest(t, dir, rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusCompleted,
		Preset: "full_coevolution", Condition: "learned_mediator", Policy: "executor,planner,mediator", Lab: "default",
		Seed: 42, Offline: true, Tasks: []string{"a", "b"}, Iterations: 3, CompletedIterations: 2})
	rows := rowsOf("run1", "full_coevolution", "learned_mediator", "executor,planner,mediator", 42,
		scored(1, "a", 1), trial{1, "b", "env_failure", nil},
		scored(2, "a", 0), scored(2, "b", 0.5), trial{2, "b", "agent_error", nil})
	for i := range rows {
		rows[i].Offline = true
		rows[i].PlannerInputTokens, rows[i].PlannerOutputTokens, rows[i].PlannerCostUSD = 100, 10, 0.5
		rows[i].ExecutorInputTokens, rows[i].ExecutorOutputTokens, rows[i].ExecutorCostUSD = 1000, 200, 1
		rows[i].CachedInputTokens = 600
		if rows[i].Iteration == 2 {
			rows[i].CoevoInputTokens, rows[i].CoevoCostUSD = 50, 0.25
		}
	}
	writeMetrics(t, dir, rows)
	writeUpdates(t, dir, 2,
		rundir.UpdateRow{RunID: "run1", Row: "full_coevolution", Seed: 42, Role: "executor", ProvenanceID: "executor/b-0001",
			OldHash: "aaaaaaaaaaaaaaaa", NewHash: "bbbbbbbbbbbbbbbb"},
		rundir.UpdateRow{RunID: "run1", Row: "full_coevolution", Seed: 42, Role: "planner", ProvenanceID: "planner/reflection-i0002",
			OldHash: "cc", NewHash: "dd"})
	writeLines(t, filepath.Join(dir, rundir.SkillUpdatesFile),
		`{"id":"executor/b-0001","role":"executor","flow":"advisor_gate","iteration":2,"rule":"posterior","numbers":{"p_better":0.9},"old_hash":"aaaaaaaaaaaaaaaa","new_hash":"bbbbbbbbbbbbbbbb","time":"2025-03-01T12:05:00Z"}`)
	writeLines(t, filepath.Join(dir, rundir.RejectedFile),
		`{"type":"batch","batch_id":"b-0000","iteration":1,"reason":"the Advisor rejected the batch","advice":"too vague","proposals":[{"id":"p1"},{"id":"p2"}]}`,
		`{"type":"candidate","batch_id":"b-0002","iteration":2,"reason":"validation rejected the candidate: no gain","proposals":[{"id":"p3"}],"decision":{"accept":false,"rule":"posterior","numbers":{"delta":-0.1}}}`,
		`{not json`)
	writeLines(t, filepath.Join(dir, rundir.HistoryFile),
		`{"type":"entry","entry":{"id":"e1","role":"planner","kind":"plan","task_id":"a","iteration":1}}`,
		`{"type":"entry","entry":{"id":"e2","role":"mediator","kind":"report","task_id":"a","iteration":1,"withheld":true}}`,
		`{"type":"reward","ids":["e1","e2"],"reward":0,"task_id":"a","iteration":2}`,
		`{"type":"entry","entry":{"id":"e3","role":"planner","kind":"plan","task_id":"b","iteration":1}}`,
		`{"type":"drop","ids":["e3"],"task_id":"b","iteration":2,"status":"env_failure"}`)
	return dir
}

func TestRunView(t *testing.T) {
	dir := runFixture(t, t.TempDir())
	v, err := ReadRunView(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != "completed" || v.IterationsDone != 2 || v.IterationsPlanned != 3 || !v.Offline {
		t.Errorf("header: status %s, iterations %d/%d, offline %v", v.Status, v.IterationsDone, v.IterationsPlanned, v.Offline)
	}
	if v.Trials != 5 || v.Scored != 3 || v.EnvFailures != 1 || v.Unscored != 1 {
		t.Errorf("trials/scored/env/unscored = %d/%d/%d/%d, want 5/3/1/1", v.Trials, v.Scored, v.EnvFailures, v.Unscored)
	}
	// a: 1, 0 -> 0.5; b: 0.5 -> 0.5; macro 0.5
	approx(t, "mean_reward", v.MeanReward, 0.5)
	wantStatuses := map[rundir.TrialStatus]int{"scored": 3, "env_failure": 1, "agent_error": 1}
	if !reflect.DeepEqual(v.Statuses, wantStatuses) {
		t.Errorf("statuses = %v, want %v", v.Statuses, wantStatuses)
	}

	if len(v.Iterations) != 2 {
		t.Fatalf("iterations = %+v", v.Iterations)
	}
	// Iteration 1: only a scored (1); the env failure is not a zero.
	approx(t, "iteration 1 mean", v.Iterations[0].MeanReward, 1)
	// Iteration 2: a 0, b 0.5 -> 0.25; two distinct updates though each
	// appears on three rows.
	approx(t, "iteration 2 mean", v.Iterations[1].MeanReward, 0.25)
	if v.Iterations[1].SkillUpdates != 2 || v.Iterations[0].SkillUpdates != 0 {
		t.Errorf("skill updates per iteration = %d, %d, want 0, 2", v.Iterations[0].SkillUpdates, v.Iterations[1].SkillUpdates)
	}
	if v.Iterations[1].Statuses["agent_error"] != 1 || v.Iterations[0].EnvFailures != 1 {
		t.Errorf("per-iteration statuses: %+v", v.Iterations)
	}

	// Timeline: the provenance line first, then the update only metrics know.
	if len(v.SkillUpdates) != 2 {
		t.Fatalf("skill updates = %+v", v.SkillUpdates)
	}
	if u := v.SkillUpdates[0]; u.ID != "executor/b-0001" || u.Source != "provenance" || u.Rule != "posterior" || u.Flow != "advisor_gate" {
		t.Errorf("first update = %+v", u)
	}
	if u := v.SkillUpdates[1]; u.ID != "planner/reflection-i0002" || u.Source != "metrics" || u.Iteration != 2 || u.Role != "planner" {
		t.Errorf("second update = %+v", u)
	}

	if len(v.Rejected) != 2 || v.Rejected[0].Proposals != 2 || v.Rejected[1].Rule != "posterior" || v.Rejected[1].Numbers["delta"] != -0.1 {
		t.Errorf("rejected = %+v", v.Rejected)
	}
	if !containsSubstring(v.Warnings, "damaged lines skipped: 1") {
		t.Errorf("warnings %q lack the damaged rejection line", v.Warnings)
	}
	if !containsSubstring(v.Warnings, "offline results") {
		t.Errorf("warnings %q lack the offline note", v.Warnings)
	}

	wantHistory := HistoryCounts{Entries: map[string]int{"planner/plan": 2, "mediator/report": 1}, Withheld: 1, Rewarded: 2, Dropped: 1}
	if !reflect.DeepEqual(v.History, wantHistory) {
		t.Errorf("history = %+v, want %+v", v.History, wantHistory)
	}

	// 5 rows x (110 planner + 1200 executor) + 3 rows x 50 coevo tokens.
	if v.TotalTokens != 5*1310+150 {
		t.Errorf("total tokens = %d, want %d", v.TotalTokens, 5*1310+150)
	}
	spend := map[string]RoleSpend{}
	for _, s := range v.Spend {
		spend[s.Role] = s
	}
	if spend["executor"].InputTokens != 5000 || spend["coevo"].CostUSD != 0.75 || spend["planner"].OutputTokens != 50 {
		t.Errorf("spend by role = %+v", v.Spend)
	}
	if v.CachedInputTokens != 5*600 {
		t.Errorf("cached input tokens = %d, want %d", v.CachedInputTokens, 5*600)
	}
}

func TestRunViewText(t *testing.T) {
	v, err := ReadRunView(runFixture(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := v.WriteText(&buf, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Run 20250301T120000Z-42-full_coevolution (completed)",
		"iterations 2/3, tasks 2, trials 5 (3 scored, 1 env failures, 1 unscored), mean reward 0.500",
		"iteration\ttrials\tscored\tenv failures\tmean reward",
		"2\t3\t2\t0\t0.250\t2\t",
		"agent_error\t1",
		"2\texecutor\texecutor/b-0001\tadvisor_gate\tposterior\taaaaaaaaaaaa\tbbbbbbbbbbbb",
		"1\tbatch\tb-0000\t2\tthe Advisor rejected the batch",
		"executor\t5000\t1000\t$5.00",
		"(3000 input tokens cached)",
		"! offline results",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestRunRefusesAMatrix(t *testing.T) {
	_, err := ReadRunView(compareFixture(t))
	if err == nil || !strings.Contains(err.Error(), "is a matrix") {
		t.Errorf("err = %v, want one pointing to --compare", err)
	}
}

func TestRunErrors(t *testing.T) {
	root := t.TempDir()
	notRun := filepath.Join(root, "plain")
	os.MkdirAll(notRun, 0o755)
	broken := filepath.Join(root, "broken")
	writeLines(t, filepath.Join(broken, "run.json"), "{")
	tests := []struct {
		dir  string
		want string
	}{
		{filepath.Join(root, "missing"), "does not exist"},
		{notRun, "has no run.json"},
		{broken, "is not valid JSON"},
	}
	for _, tc := range tests {
		if _, err := ReadRunView(tc.dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadRunView(%s): err = %v, want %q", tc.dir, err, tc.want)
		}
	}
}

func TestList(t *testing.T) {
	root := t.TempDir()
	runFixture(t, root)
	matrix := filepath.Join(root, "20250302T000000Z-42-fixture-matrix")
	writeMatrix(t, matrix, []string{"no_feedback", "full_coevolution"}, map[string][]rundir.MetricRow{
		"no_feedback":      rowsOf("m/nf", "no_feedback", "no_feedback", "none", 42, scored(1, "a", 1), scored(1, "b", 0)),
		"full_coevolution": rowsOf("m/fc", "full_coevolution", "learned_mediator", "all", 42, scored(1, "a", 1), scored(1, "b", 1)),
	})
	os.MkdirAll(filepath.Join(root, "task-cache"), 0o755) // not a run: skipped
	writeLines(t, filepath.Join(root, "20250303T000000Z-1-broken", "run.json"), "{")

	list, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("listed %d directories, want 3: %+v", len(list), list)
	}
	run, mat, broken := list[0], list[1], list[2]

	if run.Kind != "run" || run.Rows != 1 || run.Tasks != 2 || run.IterationsDone != 2 || run.IterationsPlanned != 3 ||
		run.Trials != 5 || run.EnvFailures != 1 || run.SkillUpdates != 2 || !run.Offline || run.Name != "full_coevolution" {
		t.Errorf("run summary = %+v", run)
	}
	approx(t, "run mean", run.MeanReward, 0.5)
	if run.Tokens != 5*1310+150 || math.Abs(run.CostUSD-(5*1.5+0.75)) > 1e-9 {
		t.Errorf("run spend = %d tokens, $%v", run.Tokens, run.CostUSD)
	}

	// Matrix: 2 rows of 2 planned iterations each, 2 done each; tasks
	// pooled over rows: a (1, 1) -> 1, b (0, 1) -> 0.5, macro 0.75.
	if mat.Kind != "matrix" || mat.Rows != 2 || mat.IterationsDone != 4 || mat.IterationsPlanned != 4 || mat.Trials != 4 {
		t.Errorf("matrix summary = %+v", mat)
	}
	approx(t, "matrix mean", mat.MeanReward, 0.75)

	if broken.Status != "unreadable" || !strings.Contains(broken.Error, "not valid JSON") {
		t.Errorf("broken directory = %+v", broken)
	}

	var buf bytes.Buffer
	if err := WriteListText(&buf, list, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "20250301T120000Z-42-full_coevolution\trun\tcompleted\t1\t2\t2/3\t5\t1\t0.500\t2\t6700\t$8.25\tyes") {
		t.Errorf("list text:\n%s", buf.String())
	}
}

func TestListOfAMatrixListsItsRows(t *testing.T) {
	dir := compareFixture(t)
	list, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range list {
		ids = append(ids, d.ID)
	}
	if !reflect.DeepEqual(ids, []string{"full_coevolution", "no_feedback", "static_mediator"}) {
		t.Errorf("rows listed = %v", ids)
	}
}

func TestListErrors(t *testing.T) {
	root := t.TempDir()
	if _, err := List(filepath.Join(root, "nothing")); err == nil || !strings.Contains(err.Error(), "nothing has run here yet") {
		t.Errorf("missing root: err = %v", err)
	}
	run := runFixture(t, root)
	if _, err := List(run); err == nil || !strings.Contains(err.Error(), "is a run directory") {
		t.Errorf("run as root: err = %v", err)
	}
}

func TestRunViewListsTrialWarnings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "20250301T120000Z-7-no_feedback")
	writeManifest(t, dir, rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusCompleted, Condition: "no_feedback",
		Iterations: 2, CompletedIterations: 2, Tasks: []string{"x"},
		TrialWarnings: map[string]int{"x: storage_mb = 10 is not enforced": 2, "y: storage_mb = 10 is not enforced": 3},
		ForcedResumes: []rundir.ForcedResume{{FromIteration: 2, KeptConfig: "config.before-20250301T130000Z.toml"}}})
	writeMetrics(t, dir, rowsOf("r", "no_feedback", "no_feedback", "none", 7, scored(1, "x", 1), scored(2, "x", 0)))
	v, err := ReadRunView(dir)
	if err != nil {
		t.Fatal(err)
	}
	// One line for a warning every task had, with its trials counted.
	if n := len(slices.DeleteFunc(slices.Clone(v.Warnings), func(w string) bool { return !strings.Contains(w, "storage_mb") })); n != 1 {
		t.Errorf("warnings %q: the storage warning shows %d times, want once", v.Warnings, n)
	}
	for _, want := range []string{"storage_mb = 10 is not enforced: 5 trial(s) of 2 task(s) (see their traces)",
		"the configuration changed at a forced resume: iterations from 2 on ran under config.toml (earlier ones: config.before-20250301T130000Z.toml)"} {
		if !slices.Contains(v.Warnings, want) {
			t.Errorf("warnings %q lack %q", v.Warnings, want)
		}
	}
}

// Held-out evaluation rows are counted apart from the training iterations,
// in the run view and in what --follow prints of their part.
func TestEvaluationRowsStayOutOfTheTrainingView(t *testing.T) {
	run := filepath.Join(t.TempDir(), "r")
	writeManifest(t, run, rundir.Manifest{Kind: rundir.KindRun, Name: "r", Iterations: 1, CompletedIterations: 1, Tasks: []string{"a"}})
	one, zero := 1.0, 0.0
	train := []rundir.MetricRow{{RunID: "r", Row: "r", Iteration: 1, TaskID: "a", Status: "scored", Reward: &zero}}
	eval := []rundir.MetricRow{
		{RunID: "r", Row: "r", Iteration: 1, TaskID: "h", Status: "scored", Reward: &one, Phase: rundir.PhaseEval, CheckpointIteration: ptr(int32(1))},
		{RunID: "r", Row: "r", Iteration: 1, TaskID: "h", Status: "scored", Reward: &one, Phase: rundir.PhaseEval, CheckpointIteration: ptr(int32(1))},
	}
	metrics := filepath.Join(run, rundir.MetricsDir)
	if err := os.MkdirAll(metrics, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteMetricsPart(metrics, 1, train); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteEvalPart(metrics, 1, eval); err != nil {
		t.Fatal(err)
	}
	v, err := ReadRunView(run)
	if err != nil {
		t.Fatal(err)
	}
	if v.Trials != 1 || len(v.Iterations) != 1 || v.Iterations[0].Trials != 1 || *v.MeanReward != 0 {
		t.Errorf("training view: %d trials, iterations %+v, mean %v; want the one training trial only", v.Trials, v.Iterations, *v.MeanReward)
	}
	if len(v.Evaluation) != 1 || v.Evaluation[0].Checkpoint != 1 || v.Evaluation[0].Trials != 2 || *v.Evaluation[0].MeanReward != 1 {
		t.Errorf("evaluation %+v, want checkpoint 1 with 2 trials of mean 1", v.Evaluation)
	}
	line, err := summarizePart(filepath.Join(metrics, rundir.EvalPartName(1)))
	if err != nil || !strings.Contains(line, "held-out evaluation of the skills after iteration 1") {
		t.Errorf("follow line %q (%v)", line, err)
	}
}

// One pass over a matrix gives the matrix's summary and its rows' as
// Summarize and List give them apart.
func TestSummarizeMatrixAgreesWithSummarizeAndList(t *testing.T) {
	dir := compareFixture(t)
	sum, rows, err := SummarizeMatrix(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantSum, err := Summarize(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantRows, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sum, wantSum) {
		t.Errorf("matrix summary = %+v\nwant %+v", sum, wantSum)
	}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("rows = %+v\nwant %+v", rows, wantRows)
	}
	if _, _, err := SummarizeMatrix(runFixture(t, t.TempDir())); err == nil || !strings.Contains(err.Error(), "not a matrix") {
		t.Errorf("a run directory gave %v, want it refused as not a matrix", err)
	}
}
