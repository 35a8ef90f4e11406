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
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// truncateState cuts the run's state.json in half, as a full disk or a
// torn copy leaves it.
func truncateState(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, rundir.StateFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
}

func metricKeys(t *testing.T, dir string) []string {
	t.Helper()
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s/%d %s %s", r.TaskID, r.Iteration, r.Status, rewardString(r.Reward)))
	}
	slices.Sort(out)
	return out
}

func rewardString(r *float64) string {
	if r == nil {
		return "null"
	}
	return fmt.Sprint(*r)
}

// A resume that finds state.json truncated rebuilds it from run.json, the
// metric parts, the history and the call log, says so, and ends where the
// uninterrupted run ends: the same trials, the same prompts (the Mediator's
// reports rebuilt into the Planner's context), the same counts and spend.
func TestTruncatedStateIsRebuiltOnResume(t *testing.T) {
	tasks := []string{"a", "b"}
	whole := newTestRun(t, conditions.StaticMediator, conditions.PolicyNone, tasks, 3, nil)
	withCallLog(t, whole)
	whole.execute(t)

	cut := newTestRun(t, conditions.StaticMediator, conditions.PolicyNone, tasks, 2, nil)
	withCallLog(t, cut)
	cut.execute(t)
	truncateState(t, cut.run.Dir.Path)
	again := buildTestRun(cut.run.Config, cut.run.Dir, conditions.StaticMediator, conditions.PolicyNone, tasks, 3)
	withCallLog(t, again)
	var rebuilt []Event
	again.run.Events = func(e Event) {
		if e.Kind == EventStateRebuilt {
			rebuilt = append(rebuilt, e)
		}
	}
	res := again.execute(t)
	if res.Status != rundir.StatusCompleted || res.Iterations != 3 || len(again.trials.specs) != len(tasks) {
		t.Fatalf("resume after a truncated state.json: %+v with %d trials; want completed, 3 iterations, only iteration 3's trials", res, len(again.trials.specs))
	}
	if len(rebuilt) != 1 || !strings.Contains(rebuilt[0].Message, "rebuilt") || !strings.Contains(rebuilt[0].Message, rundir.StateFile) {
		t.Errorf("rebuild events %+v; want one that names state.json and says it was rebuilt", rebuilt)
	}
	d, err := rundir.Open(cut.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	if w := d.Manifest().Warnings; !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, "rebuilt") }) {
		t.Errorf("run.json warnings %q; want the rebuild recorded", w)
	}
	if got, want := metricKeys(t, d.Path), metricKeys(t, whole.run.Dir.Path); !slices.Equal(got, want) {
		t.Errorf("metric rows after the rebuild\n%q\nwant those of the uninterrupted run\n%q", got, want)
	}
	for _, task := range tasks {
		if got, want := again.planPrompt(t, task, 3), whole.planPrompt(t, task, 3); got != want {
			t.Errorf("plan prompt of %s at iteration 3 differs from the uninterrupted run's:\n%s\nwant\n%s", task, got, want)
		}
	}
	gotSt, wantSt := mustLoadState(t, d.Path), mustLoadState(t, whole.run.Dir.Path)
	if !maps.Equal(gotSt.Counts, wantSt.Counts) || gotSt.HistoryLines != wantSt.HistoryLines || !maps.Equal(gotSt.SkillHashes, wantSt.SkillHashes) {
		t.Errorf("state after the rebuild: counts %v, %d history lines, skills %v; want %v, %d, %v",
			gotSt.Counts, gotSt.HistoryLines, gotSt.SkillHashes, wantSt.Counts, wantSt.HistoryLines, wantSt.SkillHashes)
	}
	if got, want := gotSt.Ledger.Total.Tokens(), wantSt.Ledger.Total.Tokens(); got != want || got == 0 {
		t.Errorf("spend after the rebuild: %d tokens, want the uninterrupted run's %d", got, want)
	}
}

// Where a part of the checkpoint is kept nowhere else, the resume refuses,
// naming state.json and what could not be rebuilt, and changes nothing.
func TestUnrebuildableStateIsRefusedWithTheReason(t *testing.T) {
	tests := []struct {
		name string
		cond conditions.Condition
		pol  conditions.Policy
		want string
	}{
		{"trace summaries", conditions.FullTraces, conditions.PolicyNone, "trace summaries"},
		{"skill evolution", conditions.LearnedMediator, conditions.PolicyAll, "skill evolution"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTestRun(t, tt.cond, tt.pol, []string{"a", "b"}, 2, func(c *config.Config) {
				c.Experiment.AdvisorBufferMax = 1
				c.Experiment.CoevoInterval = 1
			})
			tr.execute(t)
			dir := tr.run.Dir.Path
			truncateState(t, dir)
			again := buildTestRun(tr.run.Config, tr.run.Dir, tt.cond, tt.pol, []string{"a", "b"}, 3)
			res := again.run.Iterate(context.Background())
			if !errors.Is(res.Err, rundir.ErrCorruptState) || !strings.Contains(res.Err.Error(), tt.want) ||
				!strings.Contains(res.Err.Error(), "cannot be rebuilt") {
				t.Fatalf("resume: %v; want a refusal that says the state cannot be rebuilt because of %s", res.Err, tt.want)
			}
			if n := len(again.trials.specs); n != 0 {
				t.Errorf("the refused resume ran %d trials", n)
			}
			if _, err := os.Stat(filepath.Join(dir, rundir.StateFile)); !os.IsNotExist(err) {
				t.Errorf("a state.json was written although the rebuild was refused: %v", err)
			}
		})
	}
}

// A matrix resume rebuilds a row's truncated state.json when the row is
// opened to run (under its lock), says so once, and the row completes.
func TestMatrixResumeRebuildsARowState(t *testing.T) {
	cfg := testConfig(t, nil)
	o := PlanOptions{Tasks: []string{"a", "b"}, Rows: BaselineRows()[:1], Iterations: 1, Seeds: []int64{7}, Concurrency: 2, OutDir: t.TempDir()}
	out := runTestMatrix(t, cfg, o)
	rowDir := out.Rows[0].Dir
	d, err := rundir.Open(rowDir)
	if err != nil {
		t.Fatal(err)
	}
	d.UpdateManifest(func(m *rundir.Manifest) { m.Status = rundir.StatusInterrupted })
	truncateState(t, rowDir)
	ex, ft := testMatrix(t, cfg, PlanOptions{Resume: out.Dir, Iterations: 2, Concurrency: 2}, false)
	var rebuilt []Event
	ex.opts.Events = func(e Event) {
		if e.Kind == EventStateRebuilt {
			rebuilt = append(rebuilt, e)
		}
	}
	res, err := ex.matrix(context.Background())
	if err != nil || res.Err != nil {
		t.Fatalf("matrix resume: %v, %v", err, res.Err)
	}
	if n := len(ft.specs); n != 2 {
		t.Errorf("the resume ran %d trials, want iteration 2's 2", n)
	}
	if len(rebuilt) != 1 || rebuilt[0].Row != out.Rows[0].Name {
		t.Errorf("rebuild events %+v, want one for row %s", rebuilt, out.Rows[0].Name)
	}
	if n := countParts(rowDir); n != 2 {
		t.Errorf("the row has %d metric parts, want 2", n)
	}
	if st := mustLoadState(t, rowDir); st.CompletedIteration != 2 || st.Counts[rundir.TrialScored] != 4 {
		t.Errorf("row state after the resume: iteration %d, counts %v; want 2 and 4 scored", st.CompletedIteration, st.Counts)
	}
}

// A rebuilt checkpoint holds the fingerprint of the configuration the run
// started with, so a resume under another one is refused as it is with an
// intact state.json.
func TestRebuiltStateStillRefusesAChangedConfiguration(t *testing.T) {
	tr := newTestRun(t, conditions.NoFeedback, conditions.PolicyNone, []string{"a"}, 1, nil)
	tr.execute(t)
	truncateState(t, tr.run.Dir.Path)
	changed := testConfig(t, func(c *config.Config) { c.Experiment.RewardMode = "binary" })
	again := buildTestRun(changed, tr.run.Dir, conditions.NoFeedback, conditions.PolicyNone, []string{"a"}, 2)
	res := again.run.Iterate(context.Background())
	if !errors.Is(res.Err, ErrConfigChanged) {
		t.Fatalf("resume under a changed configuration after a rebuild: %v; want ErrConfigChanged", res.Err)
	}
	if n := len(again.trials.specs); n != 0 {
		t.Errorf("the refused resume ran %d trials", n)
	}
}
