package inspect

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

func TestSeriesOfARun(t *testing.T) {
	series, err := Series(runFixture(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 1 || series[0].Row != "full_coevolution" || series[0].Runs != 1 {
		t.Fatalf("series = %+v", series)
	}
	its := series[0].Iterations
	if len(its) != 2 {
		t.Fatalf("iterations = %+v", its)
	}
	// Iteration 1: a scored 1, b an environment failure (left out).
	if !reflect.DeepEqual(taskValues(its[0]), [][]float64{{1}}) || its[0].EnvFailures != 1 || its[0].Trials != 2 {
		t.Errorf("iteration 1 = %+v", its[0])
	}
	// The two updates of iteration 2 are repeated on its three rows: two
	// new updates, counted once each.
	if its[0].NewSkillUpdates != 0 || its[1].NewSkillUpdates != 2 {
		t.Errorf("new skill updates = %d, %d, want 0, 2", its[0].NewSkillUpdates, its[1].NewSkillUpdates)
	}
	if s := series[0].Spend[4]; s.Role != "coevo" || s.InputTokens != 150 {
		t.Errorf("coevo spend = %+v", s)
	}
}

func TestSeriesPoolsSeeds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-matrix")
	a := rowsOf("s1", "full-seed1", "learned_mediator", "all", 1, scored(1, "a", 1))
	b := rowsOf("s2", "full-seed2", "learned_mediator", "all", 2, scored(1, "a", 0))
	writeMatrix(t, dir, []string{"full-seed1", "full-seed2"}, map[string][]rundir.MetricRow{"full-seed1": a, "full-seed2": b})
	// The first row is in the older format, its update on its metric rows;
	// the second records it in the updates table. The same provenance id
	// in another run is another update.
	writeLegacyPart(t, filepath.Join(dir, "full-seed1", rundir.MetricsDir, rundir.MetricsPartName(1)),
		[]legacyRow{{MetricRow: a[0], SkillUpdates: []rundir.SkillUpdate{{Role: "executor", ProvenanceID: "executor/b-1"}}}})
	writeUpdates(t, filepath.Join(dir, "full-seed2"), 1,
		rundir.UpdateRow{RunID: "m-matrix/s2", Row: "full-seed2", Seed: 2, Role: "executor", ProvenanceID: "executor/b-1"})
	series, err := Series(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 1 || series[0].Row != "full" || series[0].Runs != 2 {
		t.Fatalf("series = %+v", series)
	}
	it := series[0].Iterations[0]
	if !reflect.DeepEqual(taskValues(it), [][]float64{{0, 1}}) || it.NewSkillUpdates != 2 {
		t.Errorf("iteration = %+v", it)
	}
}

// Evaluation rows of a frozen checkpoint are not iterations of the
// learning curve, but their spend counts.
func TestSeriesLeavesOutEvaluationRows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-matrix")
	train := rowsOf("nf", "no_feedback", "no_feedback", "none", 1, scored(1, "a", 1), scored(2, "a", 0))
	eval := evalRows("nf", "no_feedback", "no_feedback", "none", 1, 2, scored(0, "x", 1))
	eval[0].ExecutorCostUSD = 0.5
	writeMatrix(t, dir, []string{"no_feedback"}, map[string][]rundir.MetricRow{"no_feedback": append(train, eval...)})
	series, err := Series(dir)
	if err != nil {
		t.Fatal(err)
	}
	rs := series[0]
	if len(rs.Iterations) != 2 || rs.Iterations[1].Iteration != 2 {
		t.Errorf("iterations %+v, want 1 and 2 only", rs.Iterations)
	}
	if rs.Spend[1].Role != "executor" || rs.Spend[1].CostUSD != 0.5 {
		t.Errorf("executor spend %+v, want the evaluation row's 0.5", rs.Spend[1])
	}
}

// taskValues lists each scored task's rewards, in task id order.
func taskValues(it IterationSeries) [][]float64 {
	var out [][]float64
	for _, r := range it.Tasks {
		out = append(out, r.AppendValues(nil))
	}
	return out
}

// Tasks come out in task id order, whatever order the scan met them in,
// with every pooled reward counted.
func TestSeriesOrdersTasksByID(t *testing.T) {
	dir := t.TempDir()
	writeManifest(t, dir, rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusCompleted, Condition: "learned_mediator"})
	rows := rowsOf("r", "full", "learned_mediator", "all", 1, scored(1, "c", 0.5), scored(1, "a", 1), scored(1, "b", 0), scored(1, "a", 0))
	writeMetrics(t, dir, rows)
	series, err := Series(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := taskValues(series[0].Iterations[0]), [][]float64{{0, 1}, {0}, {0.5}}; !reflect.DeepEqual(got, want) {
		t.Errorf("tasks = %v, want %v (a, b, c)", got, want)
	}
}

// One pass gives what Compare and Series give apart.
func TestCompareAndSeriesAgreesWithEachApart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-matrix")
	nf := rowsOf("nf", "no_feedback", "no_feedback", "none", 1, scored(1, "a", 0), scored(1, "b", 1), scored(2, "a", 1), scored(2, "b", 0.5))
	lm := rowsOf("lm", "learned", "learned_mediator", "all", 1, scored(1, "a", 1), scored(1, "b", 1), scored(2, "a", 1), scored(2, "b", 0))
	writeMatrix(t, dir, []string{"no_feedback", "learned"}, map[string][]rundir.MetricRow{"no_feedback": nf, "learned": lm})
	writeUpdates(t, filepath.Join(dir, "learned"), 1, rundir.UpdateRow{RunID: lm[0].RunID, Row: lm[0].Row, Seed: lm[0].Seed,
		Role: "executor", ProvenanceID: "executor/b-1"})
	cmp, series, err := CompareAndSeries(dir, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantCmp, err := Compare(dir, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSeries, err := Series(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cmp, wantCmp) {
		t.Errorf("comparison differs:\n%+v\nwant\n%+v", cmp, wantCmp)
	}
	if !reflect.DeepEqual(series, wantSeries) {
		t.Errorf("series differ:\n%+v\nwant\n%+v", series, wantSeries)
	}
}
