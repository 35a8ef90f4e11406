package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/harness/stats"
)

// evalRows are evaluation rows of one checkpoint: each trial's iteration
// field is only used to place it in its own Parquet part (1000 plus the
// checkpoint), apart from the training parts.
func evalRows(runID, row, condition, policy string, seed int64, ckpt int32, trials ...trial) []rundir.MetricRow {
	for i := range trials {
		trials[i].iteration = 1000 + int(ckpt)
	}
	out := rowsOf(runID, row, condition, policy, seed, trials...)
	for i := range out {
		out[i].Phase, out[i].CheckpointIteration = rundir.PhaseEval, ptr(ckpt)
	}
	return out
}

// trainCurve gives a task its rewards over iterations 1..len(rewards).
func trainCurve(task string, rewards ...float64) []trial {
	out := make([]trial, len(rewards))
	for i, r := range rewards {
		out[i] = scored(i+1, task, r)
	}
	return out
}

// twelve is 0 in iterations 1-2 and v in 3-12.
func twelve(v float64) []float64 {
	out := make([]float64, 12)
	for i := 2; i < 12; i++ {
		out[i] = v
	}
	return out
}

// The held-out fixture: training on tasks a and b over 12 iterations, and
// evaluation rows on held-out tasks x, y and z with 2 trials each.
//
//	train (iterations 1-2 all 0)  a 3-12   b 3-12
//	no_feedback                   1        0        whole 10/24, last 10: 0.5
//	full                          1        1        whole 20/24, last 10: 1
//	static                        1        0        (no evaluation rows)
//
//	held-out         checkpoint   x      y      z      mean
//	no_feedback      0            1,0    0,0    1,1    0.5  (its final checkpoint is 0)
//	full             0            1,0    0,0    1,0    1/3
//	full             12           1,1    1,0    1,1    2.5/3 (+ an agent_error, an env failure)
func heldOutFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m-matrix")
	curve := func(run, row, cond, policy string, a, b float64) []rundir.MetricRow {
		return rowsOf(run, row, cond, policy, 7, append(trainCurve("a", twelve(a)...), trainCurve("b", twelve(b)...)...)...)
	}
	nf := curve("nf", "no_feedback", "no_feedback", "none", 1, 0)
	nf = append(nf, evalRows("nf", "no_feedback", "no_feedback", "none", 7, 0,
		scored(0, "x", 1), scored(0, "x", 0), scored(0, "y", 0), scored(0, "y", 0), scored(0, "z", 1), scored(0, "z", 1))...)
	full := curve("f", "full", "learned_mediator", "all", 1, 1)
	full = append(full, evalRows("f", "full", "learned_mediator", "all", 7, 0,
		scored(0, "x", 1), scored(0, "x", 0), scored(0, "y", 0), scored(0, "y", 0), scored(0, "z", 1), scored(0, "z", 0))...)
	full = append(full, evalRows("f", "full", "learned_mediator", "all", 7, 12,
		scored(0, "x", 1), scored(0, "x", 1), scored(0, "y", 1), scored(0, "y", 0), scored(0, "z", 1), scored(0, "z", 1),
		trial{0, "z", "agent_error", nil}, trial{0, "y", "env_failure", ptr(0.0)})...)
	writeMatrix(t, dir, []string{"no_feedback", "full", "static"}, map[string][]rundir.MetricRow{
		"no_feedback": nf, "full": full, "static": curve("s", "static", "static_mediator", "none", 1, 0),
	})
	return dir
}

func estimateOf(t *testing.T, r RowComparison, name string) Estimate {
	t.Helper()
	for _, e := range r.Estimates {
		if e.Estimand == name {
			return e
		}
	}
	t.Fatalf("row %s has no %s estimate: %+v", r.Row, name, r.Estimates)
	return Estimate{}
}

func TestCompareEstimands(t *testing.T) {
	c, err := Compare(heldOutFixture(t), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Headline != HeldOut || c.LastN != DefaultLastN {
		t.Errorf("headline %q last_n %d, want held_out (some row has evaluation rows) and %d", c.Headline, c.LastN, DefaultLastN)
	}
	tests := []struct {
		row, estimand string
		mean          float64
		diff          *float64 // nil: none (the baseline, or no baseline data)
		from, to      int
	}{
		{"no_feedback", WholeCurve, 10.0 / 24, nil, 1, 12},
		{"no_feedback", LastN, 0.5, nil, 3, 12},
		{"no_feedback", HeldOut, 0.5, nil, 0, 0},
		{"full", WholeCurve, 20.0 / 24, ptr(10.0 / 24), 1, 12},
		{"full", LastN, 1, ptr(0.5), 3, 12},
		// x 1 - 0.5, y 0.5 - 0, z 1 - 1: env failure and agent error left out.
		{"full", HeldOut, 2.5 / 3, ptr(1.0 / 3), 0, 0},
		{"static", LastN, 0.5, ptr(0.0), 3, 12},
	}
	for _, tc := range tests {
		t.Run(tc.row+"/"+tc.estimand, func(t *testing.T) {
			e := estimateOf(t, rowByName(t, c, tc.row), tc.estimand)
			approx(t, "mean", e.Mean, tc.mean)
			if e.FromIteration != tc.from || e.ToIteration != tc.to {
				t.Errorf("iterations %d-%d, want %d-%d", e.FromIteration, e.ToIteration, tc.from, tc.to)
			}
			if tc.diff == nil {
				if e.Diff != nil {
					t.Errorf("diff %+v, want none", e.Diff)
				}
				return
			}
			if e.Diff == nil || e.Diff.Against != "no_feedback" {
				t.Fatalf("diff %+v, want one against no_feedback", e.Diff)
			}
			approx(t, "diff", &e.Diff.Mean, *tc.diff)
		})
	}

	full := rowByName(t, c, "full")
	held := estimateOf(t, full, HeldOut)
	if held.Checkpoint == nil || *held.Checkpoint != 12 || held.Tasks != 3 || held.Scored != 6 {
		t.Errorf("held-out checkpoint %v tasks %d scored %d, want 12, 3, 6", held.Checkpoint, held.Tasks, held.Scored)
	}
	// The headline repeats the held-out estimate.
	if full.MeanReward != held.Mean || full.Diff != held.Diff || full.CILow != held.CILow {
		t.Errorf("headline %v/%v does not repeat the held-out estimate", full.MeanReward, full.Diff)
	}
	// Its interval is the t interval over the per-task differences 0.5, 0.5, 0.
	want, _ := stats.MeanCI([]float64{0.5, 0.5, 0}, 0.95)
	approx(t, "diff ci low", held.Diff.CILow, want.Low)
	approx(t, "diff ci high", held.Diff.CIHigh, math.Min(want.High, 1))
	// Against its own initial skills: 0.5 on each task; 3 tasks all the
	// same sign give the sign-flip p 2/8.
	vi := held.VsInitial
	if vi == nil || vi.Against != "initial checkpoint" || vi.Test != "sign-flip" {
		t.Fatalf("vs_initial = %+v", vi)
	}
	approx(t, "vs initial", &vi.Mean, 0.5)
	approx(t, "vs initial p", vi.P, 0.25)
	approx(t, "vs initial holm (a family of one)", vi.PHolm, 0.25)
	// The baseline's final checkpoint is its initial one: nothing to compare.
	if nf := estimateOf(t, rowByName(t, c, "no_feedback"), HeldOut); nf.VsInitial != nil {
		t.Errorf("no_feedback vs_initial = %+v, want none (final checkpoint 0)", nf.VsInitial)
	}
	// static has no evaluation rows: no headline, and a warning.
	static := rowByName(t, c, "static")
	if static.MeanReward != nil || !containsSubstring(static.Warnings, "no held_out estimate") {
		t.Errorf("static: headline %v, warnings %q", static.MeanReward, static.Warnings)
	}
	if full.EnvFailures != 1 || full.Unscored != 1 {
		t.Errorf("full env failures %d unscored %d, want 1 and 1", full.EnvFailures, full.Unscored)
	}
}

func TestCompareLastNOption(t *testing.T) {
	c, err := Compare(heldOutFixture(t), CompareOptions{LastN: 11})
	if err != nil {
		t.Fatal(err)
	}
	// Iterations 2-12: full's a and b are 0 once and 1 ten times.
	e := estimateOf(t, rowByName(t, c, "full"), LastN)
	approx(t, "last 11", e.Mean, 10.0/11)
	if e.FromIteration != 2 || c.LastN != 11 {
		t.Errorf("from %d, last_n %d, want 2 and 11", e.FromIteration, c.LastN)
	}
	// Without evaluation rows the headline is last_n.
	dir := filepath.Join(t.TempDir(), "m-matrix")
	writeMatrix(t, dir, []string{"no_feedback"}, map[string][]rundir.MetricRow{
		"no_feedback": rowsOf("nf", "no_feedback", "no_feedback", "none", 1, trainCurve("a", 0, 1, 1)...),
	})
	c, err = Compare(dir, CompareOptions{LastN: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Rows[0]
	if c.Headline != LastN || len(r.Estimates) != 2 {
		t.Fatalf("headline %q with %d estimates, want last_n and 2", c.Headline, len(r.Estimates))
	}
	approx(t, "headline", r.MeanReward, 1)
	approx(t, "whole curve", estimateOf(t, r, WholeCurve).Mean, 2.0/3)
}

// Seeds are a level above tasks: the difference's interval comes from the
// seeds x tasks table (the baseline, with one seed, pooled).
func TestCompareSeedsAreALevel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-matrix")
	seedRows := func(seed int64, a, b, c float64) []rundir.MetricRow {
		name := fmt.Sprintf("full-seed%d", seed)
		return rowsOf(name, name, "learned_mediator", "all", seed,
			scored(1, "a", a), scored(2, "a", 1), scored(1, "b", b), scored(2, "b", 0), scored(1, "c", c), scored(2, "c", 1))
	}
	writeMatrix(t, dir, []string{"no_feedback", "full-seed1", "full-seed2", "full-seed3"}, map[string][]rundir.MetricRow{
		"no_feedback": rowsOf("nf", "no_feedback", "no_feedback", "none", 1,
			scored(1, "a", 0), scored(2, "a", 1), scored(1, "b", 0), scored(2, "b", 0), scored(1, "c", 0), scored(2, "c", 0)),
		"full-seed1": seedRows(1, 1, 1, 1),
		"full-seed2": seedRows(2, 0, 0, 0),
		"full-seed3": seedRows(3, 1, 0, 1),
	})
	c, err := Compare(dir, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rowByName(t, c, "full")
	// Task means per seed: a (1, .5, 1), b (.5, 0, 0), c (1, .5, 1); the
	// baseline's a .5, b 0, c 0.
	cells := [][]float64{{0.5, 0.5, 1}, {0, 0, 0.5}, {0.5, 0, 1}}
	want, err := stats.TwoWayCI(cells, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Diff
	if d == nil || d.Seeds != 3 || d.Test != "t" || d.Tasks != 3 {
		t.Fatalf("diff %+v, want one over 3 seeds x 3 tasks by the t test", d)
	}
	approx(t, "diff", &d.Mean, want.Mean)
	approx(t, "diff ci low", d.CILow, math.Max(want.Low, -1))
	approx(t, "p", d.P, want.P())
	value, _ := stats.TwoWayCI([][]float64{{1, 0.5, 1}, {0.5, 0, 0.5}, {1, 0, 1}}, 0.95)
	approx(t, "value ci high", r.CIHigh, math.Min(value.High, 1))
}

// holmFixture: eight tasks with one trial each; the baseline passes only
// t7. r1 passes all eight (seven better: sign-flip p 4/256), r2 t0-t4 and
// t7 (five better: p 16/256), r3 t0-t2 (three better, one worse: p 10/16).
func holmFixture(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "m-matrix")
	row := func(name string, rewards ...float64) []rundir.MetricRow {
		var trials []trial
		for i, r := range rewards {
			trials = append(trials, scored(1, fmt.Sprintf("t%d", i), r))
		}
		return rowsOf(name, name, "learned_mediator", "all", 1, trials...)
	}
	runs := map[string][]rundir.MetricRow{
		"no_feedback": row("no_feedback", 0, 0, 0, 0, 0, 0, 0, 1),
		"r1":          row("r1", 1, 1, 1, 1, 1, 1, 1, 1),
		"r2":          row("r2", 1, 1, 1, 1, 1, 0, 0, 1),
		"r3":          row("r3", 1, 1, 1, 0, 0, 0, 0, 0),
	}
	for i := range runs["no_feedback"] {
		runs["no_feedback"][i].Condition, runs["no_feedback"][i].SkillUpdatePolicy = "no_feedback", "none"
	}
	writeMatrix(t, dir, []string{"no_feedback", "r1", "r2", "r3"}, runs)
	return dir
}

func TestCompareHolmAcrossRows(t *testing.T) {
	c, err := Compare(holmFixture(t), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Sorted p 4/256, 16/256, 10/16 times 3, 2, 1, kept non-decreasing.
	tests := []struct {
		row      string
		p, holm  float64
		decision bool
	}{
		{"r1", 4.0 / 256, 12.0 / 256, true},
		{"r2", 16.0 / 256, 32.0 / 256, false},
		{"r3", 10.0 / 16, 10.0 / 16, false},
	}
	for _, tc := range tests {
		for _, name := range []string{WholeCurve, LastN} {
			d := estimateOf(t, rowByName(t, c, tc.row), name).Diff
			if d == nil {
				t.Fatalf("%s %s: no diff", tc.row, name)
			}
			approx(t, tc.row+" p", d.P, tc.p)
			approx(t, tc.row+" holm", d.PHolm, tc.holm)
			if d.Significant != tc.decision {
				t.Errorf("%s %s: significant %v, want %v", tc.row, name, d.Significant, tc.decision)
			}
		}
	}
	if c.Alpha != 0.05 {
		t.Errorf("alpha = %v, want 0.05", c.Alpha)
	}
}

func TestCompareProbabilityOfImprovement(t *testing.T) {
	c, err := Compare(holmFixture(t), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// r1 beats the baseline on seven tasks and ties on t7: (7 + 0.5)/8;
	// r3 wins three, loses one, ties four: (3 + 2)/8.
	approx(t, "r1 poi", rowByName(t, c, "r1").Diff.PoI, 7.5/8)
	approx(t, "r3 poi", rowByName(t, c, "r3").Diff.PoI, 5.0/8)
}

func TestComparePowerStatement(t *testing.T) {
	dir := holmFixture(t)
	tests := []struct {
		effect float64
		under  bool
	}{
		{0.1, true},
		{0.99, false},
	}
	for _, tc := range tests {
		c, err := Compare(dir, CompareOptions{EffectOfInterest: tc.effect})
		if err != nil {
			t.Fatal(err)
		}
		p := c.Power
		if p == nil || p.Tasks != 8 || p.Trials != 1 || p.Seeds != 1 || p.Estimand != LastN {
			t.Fatalf("power %+v, want 8 tasks x 1 trial x 1 seed on last_n", p)
		}
		// One trial per task: the variance is the per-task spread of the
		// differences, averaged over r1, r2 and r3.
		if p.MinDetectable == nil || p.PowerAtEffect == nil || p.Test != "sign-flip" {
			t.Fatalf("power %+v: want a sign-flip statement with an MDE and the power at the effect", p)
		}
		if p.Underpowered != tc.under || containsSubstring(c.Warnings, "underpowered") != tc.under {
			t.Errorf("effect %v: underpowered %v (mdd %.3f), warnings %q", tc.effect, p.Underpowered, *p.MinDetectable, c.Warnings)
		}
		if p.EffectOfInterest != tc.effect || !(*p.MinDetectable > 0.1 && *p.MinDetectable < 0.99) {
			t.Errorf("effect %v mdd %v", p.EffectOfInterest, *p.MinDetectable)
		}
		if (*p.PowerAtEffect < 0.8) != tc.under {
			t.Errorf("effect %v: power %v there, underpowered %v", tc.effect, *p.PowerAtEffect, tc.under)
		}
	}
}

// Trials that are not the agent's doing never count as zeros, whatever
// the reward column holds; rows of a phase this version does not know are
// left out of every estimand, with a warning.
func TestCompareLeavesOutNonAgentTrials(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-matrix")
	rows := rowsOf("nf", "no_feedback", "no_feedback", "none", 1,
		scored(1, "a", 1), trial{2, "a", "interrupted", ptr(0.0)}, scored(1, "b", 1), scored(2, "b", 0))
	other := rowsOf("nf", "no_feedback", "no_feedback", "none", 1, scored(3, "a", 0), scored(3, "b", 0))
	for i := range other {
		other[i].Phase = "validation"
	}
	writeMatrix(t, dir, []string{"no_feedback"}, map[string][]rundir.MetricRow{"no_feedback": append(rows, other...)})
	c, err := Compare(dir, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Rows[0]
	// a: 1 (the interrupted 0 left out), b: 0.5.
	approx(t, "mean", r.MeanReward, 0.75)
	if r.Unscored != 1 || !containsSubstring(r.Warnings, `2 metric rows of phase "validation" left out of every estimand`) {
		t.Errorf("unscored %d, warnings %q", r.Unscored, r.Warnings)
	}
}

func TestCompareEstimandsInJSONAndText(t *testing.T) {
	c, err := Compare(heldOutFixture(t), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, c); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Headline  string           `json:"headline"`
		Estimands []map[string]any `json:"estimands"`
		Power     map[string]any   `json:"power"`
		Rows      []struct {
			Row       string `json:"row"`
			Estimates []struct {
				Estimand  string         `json:"estimand"`
				Diff      map[string]any `json:"diff"`
				VsInitial map[string]any `json:"vs_initial"`
			} `json:"estimates"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// Three held-out tasks and one seed: the sign-flip test cannot reject,
	// and the statement says so instead of printing a number.
	if doc.Headline != "held_out" || len(doc.Estimands) != 3 || doc.Power["test"] != "sign-flip" ||
		doc.Power["min_detectable_diff"] != nil || !strings.HasPrefix(fmt.Sprint(doc.Power["note"]), "3 tasks: the sign-flip test cannot reach") {
		t.Errorf("headline %q, %d estimands, power %v", doc.Headline, len(doc.Estimands), doc.Power)
	}
	for _, r := range doc.Rows {
		if r.Row != "full" {
			continue
		}
		if len(r.Estimates) != 3 {
			t.Fatalf("full has %d estimates, want 3", len(r.Estimates))
		}
		for _, key := range []string{"mean", "ci_low", "ci_high", "p", "test", "p_holm", "significant", "poi", "min_detectable_diff"} {
			if _, ok := r.Estimates[2].Diff[key]; !ok {
				t.Errorf("held-out diff JSON lacks %q", key)
			}
			if _, ok := r.Estimates[2].VsInitial[key]; !ok {
				t.Errorf("vs_initial JSON lacks %q", key)
			}
		}
	}
	var text bytes.Buffer
	if err := c.WriteText(&text, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"headline: held-out mean", "\nfull\theld_out vs initial\tcheckpoint 12\t3\t1\t",
		"\nfull\tlast_n\t3-12\t2\t1\t1.000\t", "significant at 5% family-wise", "\nPower\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// A seed keeps only the iterations that can still be among the last N,
// yet the last-N sample holds every reward of them, whatever order the
// iterations arrive in.
func TestSeedKeepsTheLastNWindow(t *testing.T) {
	a := newRowAgg("r")
	a.lastN = 3
	sa := a.seed(1)
	for _, it := range []int32{1, 2, 5, 3, 4, 6, 7, 8, 9, 10, 9, 10, 8} {
		sa.addTrain(it, "a", float64(it%2), true)
	}
	sa.addTrain(11, "b", 0, false) // an unscored trial still moves the window
	if n := len(sa.train["a"].recent); n > 2*3+1 {
		t.Errorf("kept %d iterations, want at most 7", n)
	}
	s := a.sampleOf(LastN, 3, false)
	// Iterations 9, 10 and 11: 9 twice (1, 1), 10 twice (0, 0).
	if got, want := s.seeds[0]["a"], []float64{0, 0, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("last 3 of task a = %v, want %v", got, want)
	}
	if s.from != 9 || s.to != 11 {
		t.Errorf("window %d-%d, want 9-11", s.from, s.to)
	}
	whole := a.sampleOf(WholeCurve, 3, false)
	if got := len(whole.seeds[0]["a"]); got != 13 {
		t.Errorf("whole curve holds %d rewards of task a, want 13", got)
	}
}

// A one-seed matrix says what its intervals hold fixed, warns on the one
// seed, and states power for the sign-flip test even where that test can
// never reach significance.
func TestCompareOneSeedStatesItsLimits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-matrix")
	row := func(name string, rewards ...float64) []rundir.MetricRow {
		var trials []trial
		for i, r := range rewards {
			trials = append(trials, scored(1, fmt.Sprintf("t%d", i), r))
		}
		return rowsOf(name, name, "learned_mediator", "all", 1, trials...)
	}
	runs := map[string][]rundir.MetricRow{
		"no_feedback": row("no_feedback", 0, 0, 0, 0, 1),
		"r1":          row("r1", 1, 1, 1, 1, 1),
	}
	writeMatrix(t, dir, []string{"no_feedback", "r1"}, runs)
	c, err := Compare(dir, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rowByName(t, c, "r1")
	const cond = "across tasks, one run: run-to-run variance not estimated"
	if r.Diff == nil || r.Diff.ConditionalOn != cond || estimateOf(t, r, LastN).ConditionalOn != cond {
		t.Errorf("conditional_on not stated: diff %+v", r.Diff)
	}
	if !containsSubstring(c.Warnings, "one seed (no_feedback, r1)") {
		t.Errorf("no one-seed warning: %q", c.Warnings)
	}
	p := c.Power
	if p == nil || p.Test != "sign-flip" || p.MinDetectable != nil || p.PowerAtEffect == nil || *p.PowerAtEffect != 0 ||
		!strings.Contains(p.Note, "5 tasks: the sign-flip test cannot reach p < 0.05") {
		t.Fatalf("power %+v: want a statement that 5 tasks cannot reach significance", p)
	}
	if !containsSubstring(c.Warnings, "5 tasks: the sign-flip test cannot reach p < 0.05") {
		t.Errorf("warnings %q do not name the impossible design", c.Warnings)
	}
	var text strings.Builder
	if err := c.WriteText(&text, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{cond, "no difference to no_feedback can be detected", "5 tasks: the sign-flip test cannot reach p < 0.05"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}
}

// The IQM and the probability of improvement carry stratified bootstrap
// intervals: the tasks fixed, the trials redrawn.
func TestCompareRobustEstimatesHaveIntervals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-matrix")
	var base, better []trial
	for i := range 8 {
		id := fmt.Sprintf("t%d", i)
		for k := range 4 {
			base = append(base, scored(k+1, id, float64((i+k)%3/2)))
			better = append(better, scored(k+1, id, float64(min(1, (i+k)%3))))
		}
	}
	writeMatrix(t, dir, []string{"no_feedback", "r1"}, map[string][]rundir.MetricRow{
		"no_feedback": rowsOf("no_feedback", "no_feedback", "no_feedback", "none", 1, base...),
		"r1":          rowsOf("r1", "r1", "learned_mediator", "all", 1, better...),
	})
	c, err := Compare(dir, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := estimateOf(t, rowByName(t, c, "r1"), WholeCurve)
	if e.IQM == nil || e.IQMLow == nil || e.IQMHigh == nil || !(*e.IQMLow <= *e.IQM && *e.IQM <= *e.IQMHigh && *e.IQMLow < *e.IQMHigh) {
		t.Errorf("iqm %v, interval [%v, %v]", e.IQM, e.IQMLow, e.IQMHigh)
	}
	d := e.Diff
	if d == nil || d.PoI == nil || d.PoILow == nil || d.PoIHigh == nil || !(*d.PoILow <= *d.PoI && *d.PoI <= *d.PoIHigh && *d.PoILow < *d.PoIHigh) {
		t.Errorf("poi interval missing or not around the poi: %+v", d)
	}
}

// A trial the agent itself broke scores 0 in every estimate, as in the
// gate; one whose model API failed says nothing about the skill and is
// left out.
func TestAgentErrorsCountAsTheGateCountsThem(t *testing.T) {
	tests := []struct {
		name  string
		cause string
		mean  float64 // held-out mean of the final checkpoint over x and y
	}{
		{"agent's own error scores 0", "agent: the tool loop crashed", (1 + 0.5) / 2},
		{"model failure is left out", "model: chat completion failed after 3 attempts", 1},
		{"no cause is left out", "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m-matrix")
			rows := rowsOf("r", "full", "learned_mediator", "all", 7, trainCurve("a", 0, 1)...)
			rows = append(rows, evalRows("r", "full", "learned_mediator", "all", 7, 0,
				scored(0, "x", 0), scored(0, "x", 0), scored(0, "y", 0), scored(0, "y", 0))...)
			final := evalRows("r", "full", "learned_mediator", "all", 7, 2,
				scored(0, "x", 1), scored(0, "x", 1), scored(0, "y", 1), trial{0, "y", "agent_error", nil})
			final[len(final)-1].Cause = rundir.Nullable(tt.cause)
			writeMatrix(t, dir, []string{"full"}, map[string][]rundir.MetricRow{"full": append(rows, final...)})
			c, err := Compare(dir, CompareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			approx(t, "held-out mean", estimateOf(t, rowByName(t, c, "full"), HeldOut).Mean, tt.mean)
		})
	}
}

func TestAgentFaultRule(t *testing.T) {
	tests := []struct {
		status rundir.TrialStatus
		cause  string
		want   bool
	}{
		{rundir.TrialAgentError, "agent: panic in tool", true},
		{rundir.TrialAgentError, "model: 503 after retries", false},
		{rundir.TrialAgentError, "", false},
		{rundir.TrialAgentTimeout, "agent: did not finish", false},
		{rundir.TrialScored, "", false},
	}
	for _, tt := range tests {
		if got := rundir.AgentFault(tt.status, tt.cause); got != tt.want {
			t.Errorf("AgentFault(%q, %q) = %v, want %v", tt.status, tt.cause, got, tt.want)
		}
	}
}
