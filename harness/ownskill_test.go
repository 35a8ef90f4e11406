package harness

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/skills"
)

// namedAgent is an agent that says which student it was made for.
type namedAgent struct {
	executor.NopAgent
	student string
}

// ownSkillLab gives the default lab two students on two models; weak
// holds its own executor skill when own is set.
func ownSkillLab(own bool) func(*config.Config) {
	return func(c *config.Config) {
		heteroLab(config.AssignRotate)(c)
		lab := c.Labs[config.DefaultLab]
		lab.Students.ByID["weak"] = config.Student{Model: "cheap", OwnSkill: own}
		c.Labs[config.DefaultLab] = lab
		c.Experiment.AdvisorBufferMax = 2
		c.Experiment.CoevoInterval = 2
	}
}

// newOwnSkillRun is a full-coevolution row of the own-skill lab whose
// agents record the student they were made for.
func newOwnSkillRun(t *testing.T, own bool, iterations int) *testRun {
	t.Helper()
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b", "c"}, iterations, ownSkillLab(own))
	tr.run.NewAgent = func(student string) executor.Agent { return namedAgent{student: student} }
	return tr
}

func skillHash(t *testing.T, root string) string {
	t.Helper()
	s, err := (&skills.Store{Root: root}).Read(conditions.RoleExecutor)
	if err != nil {
		t.Fatal(err)
	}
	return s.Hash
}

func TestOwnSkillEvolvesApartAndIsGatedOnItsStudentsModel(t *testing.T) {
	tr := newOwnSkillRun(t, true, 8)
	tr.execute(t)
	dir := tr.run.Dir.Path
	updates := readJSONL[Provenance](t, filepath.Join(dir, rundir.SkillUpdatesFile))
	// Every version each executor skill had: its first and each adopted.
	versions := map[string]map[string]bool{"": {}, "weak": {}}
	ownAdopted := 0
	for _, u := range updates {
		if u.Role != string(conditions.RoleExecutor) {
			continue
		}
		versions[u.Student][u.OldHash], versions[u.Student][u.NewHash] = true, true
		if u.Student == "weak" {
			ownAdopted++
			if !strings.HasPrefix(u.BatchID, "s2b") || !strings.HasPrefix(u.OldSnapshot, rundir.StudentSnapshotsDir("weak")) {
				t.Errorf("own-skill update %s has batch %s and snapshot %s, want its own", u.ID, u.BatchID, u.OldSnapshot)
			}
		}
	}
	if ownAdopted == 0 {
		t.Fatal("no candidate for the weak student's own skill was adopted")
	}
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Each line's skill is its own: in some iteration the weak student's
	// trials used a version the lab's students did not.
	byIteration := map[int32]map[string]string{}
	for _, r := range rows {
		line := ""
		if r.Student == "weak" {
			line = "weak"
		}
		if !versions[line][r.ExecutorSkillHash] {
			t.Errorf("row %s of student %s used executor skill %s, not a version of its skill", r.TrialID, r.Student, short(r.ExecutorSkillHash))
		}
		if byIteration[r.Iteration] == nil {
			byIteration[r.Iteration] = map[string]string{}
		}
		byIteration[r.Iteration][r.Student] = r.ExecutorSkillHash
	}
	apart := false
	for _, h := range byIteration {
		apart = apart || h["weak"] != h["strong"]
	}
	if !apart {
		t.Errorf("the weak student always used the lab's skill version: %v", byIteration)
	}
	// The gate measured the own skill's candidates with the weak student's
	// agent, and the lab's with the validator.
	gated, ownGated := 0, 0
	for _, s := range tr.trials.specs {
		c, err := rundir.ParseCaller(s.Caller)
		if err != nil || c.Kind != rundir.CallerValidation {
			continue
		}
		gated++
		got := s.Agent.(namedAgent).student
		want := "validator"
		if strings.HasPrefix(s.TrialID, "vs2b") {
			want = "weak"
			ownGated++
		}
		if got != want {
			t.Errorf("validation trial %s ran the agent of %q, want %q", s.TrialID, got, want)
		}
	}
	if gated == 0 || ownGated == 0 {
		t.Errorf("%d validation trials ran, %d of them for the weak student's own skill; want some of each", gated, ownGated)
	}
}

func TestResumeRestoresEveryStudentsSkill(t *testing.T) {
	whole := newOwnSkillRun(t, true, 8)
	whole.execute(t)
	cut := newOwnSkillRun(t, true, 4)
	cut.execute(t)
	dir := cut.run.Dir.Path
	// Both skills are changed behind the checkpoint's back, as a crash
	// after an adoption and before the checkpoint would leave them.
	for _, root := range []string{rundir.SkillsDir, rundir.StudentSkillsDir("weak")} {
		p := filepath.Join(dir, root, "executor", "SKILL.md")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(b, []byte("\nAn edit no checkpoint knows.\n")...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resumed := buildTestRun(cut.run.Config, cut.run.Dir, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b", "c"}, 8)
	resumed.run.NewAgent = whole.run.NewAgent
	if res := resumed.run.Iterate(context.Background()); res.Err != nil {
		t.Fatalf("resume failed: %v", res.Err)
	}
	for _, root := range []string{rundir.SkillsDir, rundir.StudentSkillsDir("weak")} {
		want := skillHash(t, filepath.Join(whole.run.Dir.Path, root))
		if got := skillHash(t, filepath.Join(dir, root)); got != want {
			t.Errorf("%s after the resume is %s, want %s as in the uninterrupted run", root, short(got), short(want))
		}
	}
	a, b := comparableRows(t, whole.run.Dir.Path), comparableRows(t, dir)
	if len(a) != len(b) {
		t.Fatalf("%d rows resumed, %d uninterrupted", len(b), len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("row %d differs:\nuninterrupted %s\nresumed       %s", i, a[i], b[i])
		}
	}
}

// comparableRows are a run's metric rows as (trial, student, skill hash,
// reward) lines, in trial order.
func comparableRows(t *testing.T, dir string) []string {
	t.Helper()
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, strings.Join([]string{r.TrialID, r.Student, r.ExecutorSkillHash, rewardText(r.Reward)}, " "))
	}
	return out
}

func TestSharedSkillStudentsHoldNoSkillOfTheirOwn(t *testing.T) {
	tr := newOwnSkillRun(t, false, 4)
	tr.execute(t)
	dir := tr.run.Dir.Path
	if _, err := os.Stat(filepath.Join(dir, rundir.StudentsDir)); !os.IsNotExist(err) {
		t.Errorf("a run without own skills has %s (%v)", rundir.StudentsDir, err)
	}
	st, err := LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Students) != 0 {
		t.Errorf("state records own skills %v", st.Students)
	}
	for _, u := range readJSONL[Provenance](t, filepath.Join(dir, rundir.SkillUpdatesFile)) {
		if u.Student != "" || strings.HasPrefix(u.BatchID, "s") {
			t.Errorf("update %s names a student's skill", u.ID)
		}
	}
}

func rewardText(r *float64) string {
	if r == nil {
		return "-"
	}
	return strconv.FormatFloat(*r, 'g', -1, 64)
}

// A state.json rebuilt without skill evolution still knows each student's
// own skill, so the resume goes on with it.
func TestRebuiltStateKeepsTheStudentsOwnSkills(t *testing.T) {
	tasks := []string{"a", "b"}
	cut := newTestRun(t, conditions.StaticMediator, conditions.PolicyNone, tasks, 2, ownSkillLab(true))
	cut.execute(t)
	dir := cut.run.Dir.Path
	want := mustLoadState(t, dir).Students["weak"]
	if want == nil || want.SkillHash == "" {
		t.Fatalf("the checkpoint records no own skill of the weak student: %+v", want)
	}
	truncateState(t, dir)
	again := buildTestRun(cut.run.Config, cut.run.Dir, conditions.StaticMediator, conditions.PolicyNone, tasks, 3)
	again.execute(t)
	got := mustLoadState(t, dir).Students["weak"]
	if got == nil || got.SkillHash != want.SkillHash {
		t.Errorf("after the rebuild the weak student's skill is %+v, want %s", got, short(want.SkillHash))
	}
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Iteration == 3 && r.Student == "weak" && r.ExecutorSkillHash != want.SkillHash {
			t.Errorf("resumed row %s used executor skill %s, want the weak student's own %s", r.TrialID, short(r.ExecutorSkillHash), short(want.SkillHash))
		}
	}
}

// Held-out evaluation gives each student's trials the skill that student
// used: its own, as the last checkpoint left it.
func TestHeldOutEvaluationUsesTheStudentsOwnSkill(t *testing.T) {
	// By iteration 3 the lab's skill has changed and the weak student's
	// own not yet, so the two tell apart.
	const iterations = 3
	tr := newOwnSkillRun(t, true, iterations)
	tr.run.HeldOut = []*benchmarks.Task{{ID: "h", Instruction: "Solve h. Write /app/out-h.txt."}}
	tr.run.EvalTrials = 2
	tr.execute(t)
	st := mustLoadState(t, tr.run.Dir.Path)
	want := map[string]string{"strong": st.SkillHashes[conditions.RoleExecutor], "weak": st.Students["weak"].SkillHash}
	if want["strong"] == want["weak"] {
		t.Fatalf("the lab's and the weak student's skills are both %s at the end; the test needs them apart", short(want["weak"]))
	}
	rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if r.RowPhase() != rundir.PhaseEval || r.CheckpointIteration == nil || *r.CheckpointIteration != iterations {
			continue
		}
		seen[r.Student] = true
		if r.ExecutorSkillHash != want[r.Student] {
			t.Errorf("final evaluation row %s of student %s used executor skill %s, want %s", r.TrialID, r.Student, short(r.ExecutorSkillHash), short(want[r.Student]))
		}
	}
	if !seen["strong"] || !seen["weak"] {
		t.Errorf("final evaluation rows of students %v, want both", seen)
	}
	finalID := rundir.EvalTrialID(iterations, 2, "h")
	for _, s := range tr.trials.specs {
		if s.TrialID == finalID && skills.Hash([]byte(s.ExecutorSkill)) != want["weak"] {
			t.Errorf("final evaluation trial %s of the weak student ran skill %s, want its own %s", s.TrialID, short(skills.Hash([]byte(s.ExecutorSkill))), short(want["weak"]))
		}
	}
}
