package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// After its last iteration a row scores its initial and its final skills on
// the held-out tasks, and writes those rows as evaluation rows; a resume
// redoes only a checkpoint whose part is missing.
func TestHeldOutEvaluationScoresInitialAndFinalSkills(t *testing.T) {
	const iterations, k = 8, 2
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b", "c"}, iterations, func(c *config.Config) {
		c.Experiment.AdvisorBufferMax = 3
		c.Experiment.CoevoInterval = 2
	})
	tr.run.HeldOut = []*benchmarks.Task{{ID: "h", Instruction: "Solve h. Write /app/out-h.txt."}}
	tr.run.EvalTrials = k
	tr.execute(t)
	st := mustLoadState(t, tr.run.Dir.Path)
	rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	byCheckpoint := map[int32][]rundir.MetricRow{}
	train := 0
	for _, r := range rows {
		switch r.RowPhase() {
		case rundir.PhaseEval:
			if r.CheckpointIteration == nil {
				t.Fatalf("evaluation row of task %s has a NULL checkpoint_iteration", r.TaskID)
			}
			byCheckpoint[*r.CheckpointIteration] = append(byCheckpoint[*r.CheckpointIteration], r)
			if r.TaskID != "h" {
				t.Errorf("evaluation row of task %s: only held-out tasks are evaluated", r.TaskID)
			}
		default:
			train++
			if r.TaskID == "h" {
				t.Error("the held-out task was trained on")
			}
		}
	}
	if train != 3*iterations || len(byCheckpoint[0]) != k || len(byCheckpoint[iterations]) != k || len(byCheckpoint) != 2 {
		t.Fatalf("%d training rows, %d evaluation rows of checkpoint 0 and %d of checkpoint %d (%d checkpoints); want %d and %d each",
			train, len(byCheckpoint[0]), len(byCheckpoint[iterations]), iterations, len(byCheckpoint), 3*iterations, k)
	}
	final := byCheckpoint[iterations][0]
	if final.ExecutorSkillHash != st.SkillHashes[conditions.RoleExecutor] || final.PlannerSkillHash != st.SkillHashes[conditions.RolePlanner] {
		t.Errorf("final checkpoint rows carry skills %s/%s, the run ended with %s/%s", final.ExecutorSkillHash, final.PlannerSkillHash,
			st.SkillHashes[conditions.RoleExecutor], st.SkillHashes[conditions.RolePlanner])
	}
	if initial := byCheckpoint[0][0]; initial.ExecutorSkillHash == final.ExecutorSkillHash {
		t.Fatalf("the executor skill never changed (%s): the test cannot tell the checkpoints apart", initial.ExecutorSkillHash)
	}
	// The fake verifier rewards the diligence advice the run adopted, so
	// the final skills score higher on the held-out task: the trials ran
	// with each checkpoint's own executor skill.
	if a, b := *byCheckpoint[0][0].Reward, *final.Reward; b <= a {
		t.Errorf("held-out reward %v with the initial skills, %v with the final ones; want the final higher", a, b)
	}
	for _, spec := range tr.trials.specs {
		if strings.HasPrefix(spec.TrialID, "e") && spec.Task.ID != "h" {
			t.Errorf("evaluation trial %s ran task %s", spec.TrialID, spec.Task.ID)
		}
	}

	// Resume after losing the final checkpoint's part: only it is redone.
	part := filepath.Join(tr.run.Dir.MetricsDir(), rundir.EvalPartName(iterations))
	if err := os.Remove(part); err != nil {
		t.Fatal(err)
	}
	d, err := rundir.Open(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	again := buildTestRun(tr.run.Config, d, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b", "c"}, iterations)
	again.run.HeldOut, again.run.EvalTrials = tr.run.HeldOut, k
	again.execute(t)
	var rerun []string
	for _, spec := range again.trials.specs {
		rerun = append(rerun, spec.TrialID)
	}
	if len(rerun) != k || !strings.HasPrefix(rerun[0], "e0008-") {
		t.Errorf("the resume ran %v; want only the final checkpoint's %d evaluation trials", rerun, k)
	}
	if _, err := os.Stat(part); err != nil {
		t.Errorf("the final checkpoint's part was not written again: %v", err)
	}
}
