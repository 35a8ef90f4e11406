package inspect

import (
	"reflect"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

func TestTasksMatchesHandComputedFixture(t *testing.T) {
	g, err := Tasks(compareFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"full_coevolution", "no_feedback", "static_mediator"}; !reflect.DeepEqual(g.Rows, want) {
		t.Fatalf("rows = %v, want the plan order %v", g.Rows, want)
	}
	if len(g.Tasks) != 3 || g.Tasks[0].Task != "a" || g.Tasks[2].Task != "c" {
		t.Fatalf("tasks = %+v, want a, b, c", g.Tasks)
	}
	// static_mediator b: one env failure (its stray 0 never counts) and a 1.
	b := g.Tasks[1].Cells[2]
	approx(t, "static b mean", b.MeanReward, 1)
	if b.Trials != 2 || b.Scored != 1 || b.EnvFailures != 1 || b.Failures() != 1 || b.Statuses["env_failure"] != 1 {
		t.Errorf("static b = %+v, want 2 trials, 1 scored, 1 env failure", b)
	}
	// static_mediator c: 1, 0 and an agent error.
	c := g.Tasks[2].Cells[2]
	approx(t, "static c mean", c.MeanReward, 0.5)
	if c.Trials != 3 || c.Failures() != 1 || c.Statuses["agent_error"] != 1 {
		t.Errorf("static c = %+v, want 3 trials, 1 agent error", c)
	}
	approx(t, "no_feedback a mean", g.Tasks[0].Cells[1].MeanReward, 0.5)
	if want := []rundir.TrialStatus{rundir.TrialAgentError, rundir.TrialEnvFailure, rundir.TrialScored}; !reflect.DeepEqual(g.Statuses(), want) {
		t.Errorf("statuses = %v, want %v", g.Statuses(), want)
	}
}

func TestTasksLeavesUnscoredCellsEmpty(t *testing.T) {
	dir := t.TempDir()
	writeMatrix(t, dir, []string{"x", "y"}, map[string][]rundir.MetricRow{
		"x": rowsOf("m/x", "x", "no_feedback", "none", 1, trial{1, "a", "env_failure", nil}),
		"y": rowsOf("m/y", "y", "no_feedback", "none", 1, scored(1, "b", 1)),
	})
	g, err := Tasks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if g.Tasks[0].Cells[0].MeanReward != nil {
		t.Errorf("a task with only an env failure has mean %v, want none", *g.Tasks[0].Cells[0].MeanReward)
	}
	if g.Tasks[1].Cells[0].Trials != 0 || g.Tasks[1].Cells[0].Statuses == nil {
		t.Errorf("a task the row never ran = %+v, want an empty cell", g.Tasks[1].Cells[0])
	}
}

func TestTasksLeavesOutHeldOutEvaluation(t *testing.T) {
	dir := t.TempDir()
	rows := rowsOf("m/x", "x", "no_feedback", "none", 1, scored(1, "a", 1))
	eval := rowsOf("m/x", "x", "no_feedback", "none", 1, scored(1, "held", 0))
	eval[0].Phase = rundir.PhaseEval
	writeMatrix(t, dir, []string{"x"}, map[string][]rundir.MetricRow{"x": append(rows, eval...)})
	g, err := Tasks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Tasks) != 1 || g.Tasks[0].Task != "a" {
		t.Errorf("tasks = %+v, want only the training task a", g.Tasks)
	}
}
