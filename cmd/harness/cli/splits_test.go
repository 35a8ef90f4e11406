package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// An offline matrix with evolve, validation and held-out splits scores the
// initial and final skills of every row on the held-out tasks, and inspect
// --compare reports the three estimands of each row with intervals and
// Holm-adjusted p-values.
func TestMatrixWithSplitsEvaluatesHeldOutTasks(t *testing.T) {
	dockerForTest(t)
	cfgDir := t.TempDir()
	cfg := fmt.Sprintf("[executor_runtime]\ntask_cache_dir = %q\n[evaluation]\ntrials_per_task = 2\n"+
		"[validation]\ntrials_per_task = 1\nmax_trials_per_task = 1\n", t.TempDir())
	if err := os.WriteFile(filepath.Join(cfgDir, "default.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	const iterations = 2
	r := runCLI(t, engineFactory(), "matrix", "--task-set", "smoke", "--split", "2:2:2", "--preset", "no_feedback,full_coevolution",
		"--offline", "--iterations", fmt.Sprint(iterations), "--config-dir", cfgDir, "--out", out, "-j", "2")
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
	matrices, _ := filepath.Glob(filepath.Join(out, "*-matrix"))
	if len(matrices) != 1 {
		t.Fatalf("matrix directories: %v", matrices)
	}
	rows, err := rundir.ReadMetrics(matrices[0])
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		row        string
		checkpoint int32
	}
	eval := map[key]int{}
	heldOut := map[string]bool{"markdown-to-html": true, "orbital-period": true}
	for _, row := range rows {
		if row.RowPhase() != rundir.PhaseEval {
			if heldOut[row.TaskID] {
				t.Errorf("row %s trained on held-out task %s", row.Row, row.TaskID)
			}
			continue
		}
		if !heldOut[row.TaskID] {
			t.Errorf("row %s evaluated task %s, which is not held out", row.Row, row.TaskID)
		}
		if row.CheckpointIteration == nil {
			t.Fatalf("row %s: evaluation row with a NULL checkpoint_iteration", row.Row)
		}
		eval[key{row.Row, *row.CheckpointIteration}]++
	}
	for _, name := range []string{"no_feedback", "full_coevolution"} {
		for _, cp := range []int32{0, iterations} {
			if n := eval[key{name, cp}]; n != 2*2 {
				t.Errorf("row %s checkpoint %d: %d evaluation rows, want 4 (2 held-out tasks x 2 trials)", name, cp, n)
			}
		}
	}

	r = runCLI(t, nil, "inspect", matrices[0], "--compare", "--json")
	if r.code != ExitOK {
		t.Fatalf("inspect --compare: exit %d: %s", r.code, r.errOut)
	}
	var cmp inspect.Comparison
	if err := json.Unmarshal([]byte(r.out), &cmp); err != nil {
		t.Fatal(err)
	}
	if cmp.Headline != "held_out" {
		t.Errorf("headline %q, want held_out", cmp.Headline)
	}
	for _, row := range cmp.Rows {
		got := map[string]inspect.Estimate{}
		for _, e := range row.Estimates {
			got[e.Estimand] = e
		}
		for _, want := range []string{"whole_curve", "last_n", "held_out"} {
			e, ok := got[want]
			if !ok || e.Mean == nil || e.CILow == nil || e.CIHigh == nil {
				t.Errorf("row %s: estimand %s missing or without an interval: %+v", row.Row, want, e)
				continue
			}
			if row.Row != cmp.Baseline && (e.Diff == nil || e.Diff.PHolm == nil) {
				t.Errorf("row %s: estimand %s has no Holm-adjusted p-value against the baseline", row.Row, want)
			}
		}
		if h := got["held_out"]; h.VsInitial == nil {
			t.Errorf("row %s: the held-out estimate is not compared with the row's initial skills", row.Row)
		}
	}
}
