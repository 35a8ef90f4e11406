package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
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

// Checkpoint evaluation varies the skills and nothing else: the plan
// requests of checkpoint 0 and of the final checkpoint are the same but for
// the skill texts (no iteration, no run history, the same seed), and the k
// trials of one checkpoint each have a seed and a plan of their own.
func TestCheckpointEvaluationVariesOnlyTheSkills(t *testing.T) {
	const iterations, k = 4, 3
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b"}, iterations, func(c *config.Config) {
		c.Experiment.AdvisorBufferMax = 2
		c.Experiment.CoevoInterval = 2
	})
	withCallLog(t, tr)
	tr.run.HeldOut = []*benchmarks.Task{{ID: "h", Instruction: "Solve h. Write /app/out-h.txt."}}
	tr.run.EvalTrials = k
	tr.execute(t)

	plans := map[string]rundir.CallRecord{} // by trial id
	for _, c := range readCallLog(t, tr.run.Dir.Path) {
		if c.Kind == string(mediator.KindPlan) && strings.HasPrefix(c.Caller, "planner/e") {
			plans[strings.TrimPrefix(c.Caller, "planner/")] = c
		}
	}
	if len(plans) != 2*k {
		t.Fatalf("%d evaluation plan calls, want %d", len(plans), 2*k)
	}
	text := checkpointSkills(t, tr)
	if text[0] == text[iterations] {
		t.Fatal("the skills never changed: the test cannot tell the checkpoints apart")
	}
	for j := 1; j <= k; j++ {
		initial, final := plans[rundir.EvalTrialID(0, j, "h")], plans[rundir.EvalTrialID(iterations, j, "h")]
		if initial.Request.Seed != final.Request.Seed {
			t.Errorf("trial %d: seed %d at checkpoint 0, %d at the final one", j, initial.Request.Seed, final.Request.Seed)
		}
		a, b := requestText(initial, text[0]), requestText(final, text[iterations])
		if a != b {
			t.Errorf("trial %d: the requests differ beyond the skills:\ncheckpoint 0:\n%s\nfinal:\n%s", j, a, b)
		}
		if strings.Contains(a, "iteration") {
			t.Errorf("trial %d: an evaluation prompt names an iteration:\n%s", j, a)
		}
	}
	for _, cp := range []int{0, iterations} {
		seeds, plansOf := map[int64]bool{}, map[string]bool{}
		for _, spec := range tr.trials.specs {
			if strings.HasPrefix(spec.TrialID, fmt.Sprintf("e%04d-", cp)) {
				seeds[spec.Seed] = true
				plansOf[spec.Plan] = true
			}
		}
		if len(seeds) != k || len(plansOf) != k {
			t.Errorf("checkpoint %d: %d seeds and %d plans among its %d trials, want %d of each", cp, len(seeds), len(plansOf), k, k)
		}
	}
}

// checkpointSkills returns the executor and planner skill texts of each
// evaluated checkpoint, joined, from the evaluation rows' hashes.
func checkpointSkills(t *testing.T, tr *testRun) map[int]string {
	t.Helper()
	rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, r := range rows {
		if r.RowPhase() != rundir.PhaseEval {
			continue
		}
		var parts []string
		for role, hash := range map[conditions.Role]string{conditions.RoleExecutor: r.ExecutorSkillHash, conditions.RolePlanner: r.PlannerSkillHash} {
			content, err := skills.Restore(tr.run.Dir.Join(rundir.SnapshotsDir), role, hash)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, string(content))
		}
		sort.Strings(parts)
		out[int(*r.CheckpointIteration)] = strings.Join(parts, "\x00")
	}
	return out
}

// requestText is a plan request's messages with the checkpoint's skill
// texts taken out.
func requestText(c rundir.CallRecord, skillTexts string) string {
	var b strings.Builder
	for _, m := range c.Request.Messages {
		b.WriteString(m.Role + ": " + m.Content + "\n")
	}
	s := b.String()
	for _, skill := range strings.Split(skillTexts, "\x00") {
		s = strings.ReplaceAll(s, strings.TrimSpace(skill), "<skill>")
	}
	return s
}
