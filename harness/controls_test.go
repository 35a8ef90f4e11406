package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
)

// memTasks writes n small tasks for the in-memory world: each names one
// input the image holds and one output the agent must create.
func memTasks(t *testing.T, n int) []*benchmarks.Task {
	t.Helper()
	root := t.TempDir()
	var out []*benchmarks.Task
	for i := range n {
		id := fmt.Sprintf("ctl-%02d", i)
		dir := filepath.Join(root, id)
		files := map[string]string{
			"task.toml":              "version = \"1.0\"\n\n[metadata]\ncategory = \"control\"\n",
			"instruction.md":         fmt.Sprintf("Count the lines of /app/data/in-%02d.txt and write the count to /app/out/count-%02d.txt.\n", i, i),
			"environment/Dockerfile": "FROM harness-base:bookworm\nCOPY app /app\n",
			fmt.Sprintf("environment/app/data/in-%02d.txt", i): "a\nb\nc\n",
			"tests/test.sh": "test -s /app/out/count.txt\n",
		}
		for rel, body := range files {
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		task, err := benchmarks.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, task)
	}
	return out
}

func taskIDs(tasks []*benchmarks.Task) []string {
	ids := make([]string, len(tasks))
	for i, tk := range tasks {
		ids[i] = tk.ID
	}
	return ids
}

// withAdvice is the shipped executor skill with the diligence advice added.
func withAdvice(t *testing.T) (current, candidate string) {
	t.Helper()
	dir := t.TempDir()
	if err := skills.WriteDefaults(dir); err != nil {
		t.Fatal(err)
	}
	s, err := (&skills.Store{Root: dir}).Read(conditions.RoleExecutor)
	if err != nil {
		t.Fatal(err)
	}
	current = string(s.Content)
	return current, strings.TrimRight(current, "\n") + "\n" + executor.DiligenceAdvice + "\n"
}

// The positive control of the gate: the one edit with a true effect in the
// offline world, planted as a candidate, is adopted under the default gate
// on a validation split of its default size.
func TestPositiveControlGateAdoptsTheDiligenceAdvice(t *testing.T) {
	tasks := memTasks(t, 13)
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{tasks[0].ID}, 1, nil)
	tr.run.Tasks, tr.run.ValidateSplit = tasks[:1], tasks[1:]
	tr.run.Trials = newTrialRunner(memWorld{}, tr.run.Config)
	newAgent, err := agentFactory(tr.run.Config, AgentLab, "default", tr.run.Clients)
	if err != nil {
		t.Fatal(err)
	}
	tr.run.NewAgent = newAgent
	current, candidate := withAdvice(t)
	dir := t.TempDir()
	d, err := tr.run.validate(context.Background(), tr.run.labLine(), "b001", "b001", []mediator.Proposal{{TaskID: tasks[0].ID}}, current, candidate, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Accept {
		t.Fatalf("the gate rejected the diligence advice: %+v", d)
	}
}

// controlMatrix runs a two-row no_feedback matrix over memTasks, its rows
// alike but for what plant changes in the second row's skills before any
// trial, and returns the held-out difference of the second row to the
// first, as inspect --compare reports it.
func controlMatrix(t *testing.T, seeds [2]int64, plant func(skillsDir string)) inspect.Diff {
	t.Helper()
	tasks := memTasks(t, 10)
	cfg := e2eConfig(t)
	cfg.SetOffline()
	rows := []MatrixRow{{Name: "first", Preset: "no_feedback", Seeds: []int64{seeds[0]}},
		{Name: "second", Preset: "no_feedback", Seeds: []int64{seeds[1]}}}
	for i := range rows {
		pr, err := conditions.LookupPreset(rows[i].Preset)
		if err != nil {
			t.Fatal(err)
		}
		rows[i].Condition, rows[i].Policy = pr.Condition, pr.Policy
	}
	p, err := BuildMatrixPlan(cfg, PlanOptions{Name: "control", Tasks: taskIDs(tasks[:2]), Rows: rows,
		Split: SplitOptions{HeldOut: taskIDs(tasks[2:])}, Iterations: 1, Agent: AgentLab, Offline: true,
		Concurrency: 2, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	opts := ExecOptions{Plan: p, Tasks: tasks[:2], HeldOut: tasks[2:], Backend: memWorld{}, Providers: providers.New}
	// A cancelled first pass creates both rows and runs nothing; the
	// second row's skills are changed before the resume runs them.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := ExecutePlan(cancelled, opts)
	if err != nil && !errors.Is(err, ErrInterrupted) {
		t.Fatal(err)
	}
	// The first pass may have opened a row (a cancelled context races the
	// row's turn) and checkpointed its skills before any trial; that
	// checkpoint goes, so the resume starts the row from the planted skills.
	second := filepath.Join(out.Dir, "second")
	for _, rel := range []string{rundir.StateFile, rundir.SnapshotsDir} {
		if err := os.RemoveAll(filepath.Join(second, rel)); err != nil {
			t.Fatal(err)
		}
	}
	plant(filepath.Join(second, rundir.SkillsDir))
	resumed, err := BuildMatrixPlan(cfg, PlanOptions{Resume: out.Dir, Offline: true, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	opts.Plan = resumed
	if out, err = ExecutePlan(context.Background(), opts); err != nil || out.Status != rundir.StatusCompleted {
		t.Fatalf("resume: %v, %+v", err, out)
	}
	cmp, err := inspect.Compare(out.Dir, inspect.CompareOptions{Baseline: "first"})
	if err != nil {
		t.Fatal(err)
	}
	d := heldOutDiff(t, cmp, "second")
	t.Logf("held-out difference %.3f over %d tasks, p %v, significant %v", d.Mean, d.Tasks, deref(d.P), d.Significant)
	return d
}

// heldOutDiff finds row's held-out difference to the baseline.
func heldOutDiff(t *testing.T, cmp *inspect.Comparison, row string) inspect.Diff {
	t.Helper()
	for _, r := range cmp.Rows {
		for _, e := range r.Estimates {
			if r.Row == row && e.Estimand == inspect.HeldOut && e.Diff != nil {
				return *e.Diff
			}
		}
	}
	t.Fatalf("no held-out difference for row %s", row)
	return inspect.Diff{}
}

// The positive control of the comparison: two rows alike but for the
// diligence advice in the second one's executor skill; the held-out
// difference is significant and positive.
func TestPositiveControlCompareFindsTheDiligenceAdvice(t *testing.T) {
	d := controlMatrix(t, [2]int64{42, 42}, func(dir string) {
		p := filepath.Join(dir, string(conditions.RoleExecutor), "SKILL.md")
		_, candidate := withAdvice(t)
		if err := os.WriteFile(p, []byte(candidate), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if !d.Significant || d.Mean <= 0 {
		t.Errorf("held-out difference %+v: want a significant improvement", d)
	}
}

// The null control: two rows alike in everything (their seeds draw
// independently); the comparison finds no significant difference.
func TestNullControlCompareFindsNothing(t *testing.T) {
	d := controlMatrix(t, [2]int64{42, 43}, func(string) {})
	if d.Significant {
		t.Errorf("held-out difference %+v between identical rows reported significant", d)
	}
}
