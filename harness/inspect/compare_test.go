package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// The hand-computed fixture: three rows x three tasks x two iterations.
//
//	no_feedback       a: 1, 0        b: 0, 0          c: 1, 1
//	full_coevolution  a: 1, 1        b: 0, 1          c: 1, 1
//	static_mediator   a: 0.5, 0.5    b: env, 1        c: 1, 0   (+ one agent_error on c)
//
// The environment failure on static b also carries a stray reward of 0 in
// its row; counted as a zero it would pull b's mean to 0.5.
func compareFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "20250301T120000Z-42-fixture-matrix")
	static := rowsOf("m/static_mediator", "static_mediator", "static_mediator", "none", 42,
		scored(1, "a", 0.5), scored(2, "a", 0.5),
		trial{1, "b", "env_failure", ptr(0.0)}, scored(2, "b", 1),
		scored(1, "c", 1), scored(2, "c", 0), trial{2, "c", "agent_error", nil})
	writeMatrix(t, dir, []string{"full_coevolution", "no_feedback", "static_mediator"}, map[string][]rundir.MetricRow{
		"no_feedback": rowsOf("m/no_feedback", "no_feedback", "no_feedback", "none", 42,
			scored(1, "a", 1), scored(2, "a", 0), scored(1, "b", 0), scored(2, "b", 0), scored(1, "c", 1), scored(2, "c", 1)),
		"full_coevolution": rowsOf("m/full_coevolution", "full_coevolution", "learned_mediator", "executor,planner,mediator", 42,
			scored(1, "a", 1), scored(2, "a", 1), scored(1, "b", 0), scored(2, "b", 1), scored(1, "c", 1), scored(2, "c", 1)),
		"static_mediator": static,
	})
	return dir
}

func approx(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = null, want %v", what, want)
		return
	}
	// Means of a few small numbers: equal up to the last bits of rounding.
	if math.Abs(*got-want) > 1e-12 {
		t.Errorf("%s = %v, want %v", what, *got, want)
	}
}

func rowByName(t *testing.T, c *Comparison, name string) RowComparison {
	t.Helper()
	for _, r := range c.Rows {
		if r.Row == name {
			return r
		}
	}
	t.Fatalf("no row %q in %+v", name, c.Rows)
	return RowComparison{}
}

func TestCompareMatchesHandComputedFixture(t *testing.T) {
	dir := compareFixture(t)
	c, err := Compare(dir, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Baseline != "no_feedback" || c.BaselineReason != "no_feedback row" {
		t.Errorf("baseline = %q (%s), want no_feedback (no_feedback row)", c.Baseline, c.BaselineReason)
	}
	if got := []string{c.Rows[0].Row, c.Rows[1].Row, c.Rows[2].Row}; !reflect.DeepEqual(got, []string{"full_coevolution", "no_feedback", "static_mediator"}) {
		t.Errorf("rows in %v, want plan order", got)
	}
	if c.Resamples != 2000 || c.Level != 0.95 {
		t.Errorf("defaults: B=%d level=%v, want 2000 and 0.95", c.Resamples, c.Level)
	}

	tests := []struct {
		row      string
		mean     float64 // macro mean: mean of per-task means
		diff     *float64
		scored   int
		env      int
		unscored int
	}{
		// task means 0.5, 0, 1 -> (0.5+0+1)/3
		{"no_feedback", 0.5, nil, 6, 0, 0},
		// task means 1, 0.5, 1 -> 2.5/3; paired diffs a 0.5, b 0.5, c 0 -> 1/3
		{"full_coevolution", 2.5 / 3, ptr(1.0 / 3), 6, 0, 0},
		// task means 0.5, 1 (env failure left out), 0.5 -> 2/3;
		// paired diffs a 0, b 1, c -0.5 -> 0.5/3
		{"static_mediator", 2.0 / 3, ptr(0.5 / 3), 5, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.row, func(t *testing.T) {
			r := rowByName(t, c, tc.row)
			approx(t, "mean_reward", r.MeanReward, tc.mean)
			if r.Scored != tc.scored || r.EnvFailures != tc.env || r.Unscored != tc.unscored || r.Tasks != 3 {
				t.Errorf("scored/env/unscored/tasks = %d/%d/%d/%d, want %d/%d/%d/3",
					r.Scored, r.EnvFailures, r.Unscored, r.Tasks, tc.scored, tc.env, tc.unscored)
			}
			if r.CILow == nil || r.CIHigh == nil || *r.CILow > *r.MeanReward || *r.MeanReward > *r.CIHigh {
				t.Errorf("interval %s does not hold the mean %s", interval(r.CILow, r.CIHigh), num(r.MeanReward))
			}
			if tc.diff == nil {
				if r.Diff != nil {
					t.Errorf("baseline row has a diff %+v", r.Diff)
				}
				return
			}
			if r.Diff == nil {
				t.Fatal("no paired difference")
			}
			approx(t, "diff", &r.Diff.Mean, *tc.diff)
			if r.Diff.Against != "no_feedback" || r.Diff.Tasks != 3 {
				t.Errorf("diff against %q over %d tasks, want no_feedback over 3", r.Diff.Against, r.Diff.Tasks)
			}
			if r.Diff.CILow == nil || r.Diff.CIHigh == nil || *r.Diff.CILow > r.Diff.Mean || r.Diff.Mean > *r.Diff.CIHigh {
				t.Errorf("diff interval %s does not hold %v", interval(r.Diff.CILow, r.Diff.CIHigh), r.Diff.Mean)
			}
		})
	}
}

func TestCompareIsReproducible(t *testing.T) {
	dir := compareFixture(t)
	a, err := Compare(dir, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compare(dir, CompareOptions{Resamples: 2000, Level: 0.95, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two comparisons with the same options differ:\n%+v\n%+v", a, b)
	}
}

func TestComparePassAtK(t *testing.T) {
	// At k = 2 (fixed: chosen, k would be 3, the trials y ran):
	// x: n=4, c=2 -> pass@2 = 1 - C(2,2)/C(4,2) = 5/6, pass^2 = C(2,2)/C(4,2) = 1/6
	// y: n=2, c=1 (an env failure leaves two scored trials; 0.99 is no
	//    success, 1-1e-12 is one) -> pass@2 = 1 - C(1,2)/C(2,2) = 1, pass^2 = 0
	// averages over tasks: 11/12 and 1/12.
	dir := filepath.Join(t.TempDir(), "20250301T120000Z-7-full_coevolution")
	writeManifest(t, dir, rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusCompleted,
		Condition: "learned_mediator", Iterations: 4, CompletedIterations: 4, Tasks: []string{"x", "y"}})
	writeMetrics(t, dir, rowsOf("r", "full_coevolution", "learned_mediator", "all", 7,
		scored(1, "x", 1), scored(2, "x", 0), scored(3, "x", 1), scored(4, "x", 0),
		scored(1, "y", 0.99), trial{2, "y", "env_failure", nil}, scored(3, "y", 1-1e-12)))
	c, err := Compare(dir, CompareOptions{K: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := rowByName(t, c, "full_coevolution")
	if c.K != 2 || r.PassKSkipped != 0 || c.PassKTasks != 2 || c.PassKLeftOut != 0 {
		t.Fatalf("k = %d, %d tasks skipped, pass_k_tasks %d, pass_k_left_out %d, want 2, 0, 2, 0",
			c.K, r.PassKSkipped, c.PassKTasks, c.PassKLeftOut)
	}
	approx(t, "pass_at_k", r.PassAtK, 11.0/12)
	approx(t, "pass_hat_k", r.PassHatK, 1.0/12)
	if c.BaselineReason != "first row (no no_feedback row)" {
		t.Errorf("baseline reason = %q", c.BaselineReason)
	}
}

func TestComparePassAtKNeedsSeveralTrials(t *testing.T) {
	c, err := Compare(compareFixture(t), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Every task ran at least twice in every row: k = 2 for all rows.
	if c.K != 2 {
		t.Fatalf("k = %d, want 2", c.K)
	}
	// static_mediator's task b has a single scored trial (its other was an
	// environment failure), so b is left out of every row's pass@2 and
	// pass^2: all three rows average over a and c.
	if c.PassKTasks != 2 || c.PassKLeftOut != 1 {
		t.Errorf("pass_k_tasks %d, pass_k_left_out %d, want 2 and 1", c.PassKTasks, c.PassKLeftOut)
	}
	if want := "pass@2 and pass^2 over 2 tasks with at least 2 scored trials in every row; 1 task left out"; !containsSubstring(c.Warnings, want) {
		t.Errorf("warnings %q lack %q", c.Warnings, want)
	}
	tests := []struct {
		row            string
		at, hat        float64
		skipped, short int
	}{
		// a n=2 c=1 -> pass@2 1 - C(1,2)/C(2,2) = 1, pass^2 C(1,2)/C(2,2) = 0;
		// c n=2 c=2 -> 1, 1. (b, n=2 c=0, would have pulled pass@2 to 2/3.)
		{"no_feedback", (1 + 1) / 2.0, (0 + 1) / 2.0, 1, 0},
		// a n=2 c=2 -> 1, 1; c n=2 c=2 -> 1, 1.
		{"full_coevolution", 1, 1, 1, 0},
		// a n=2 c=0 (0.5 is no success) -> 0, 0; c n=2 c=1 -> 1, 0.
		{"static_mediator", (0 + 1) / 2.0, 0, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.row, func(t *testing.T) {
			r := rowByName(t, c, tc.row)
			approx(t, "pass_at_k", r.PassAtK, tc.at)
			approx(t, "pass_hat_k", r.PassHatK, tc.hat)
			if r.PassKSkipped != tc.skipped || r.PassKShort != tc.short {
				t.Errorf("pass_k_skipped %d, pass_k_short %d, want %d and %d", r.PassKSkipped, r.PassKShort, tc.skipped, tc.short)
			}
			warn := "1 task (of those scored in some row) with fewer than 2 scored trials here: left out of every row's pass@2 and pass^2"
			if containsSubstring(r.Warnings, warn) != (tc.short > 0) {
				t.Errorf("warnings %q: want %q only on the row short of trials", r.Warnings, warn)
			}
		})
	}
}

// One k for every row: the fewest trials any task had in any row (scored
// or not), at most DefaultMaxK. Tasks with fewer scored trials than k in
// some row are left out of every row's pass@k and pass^k.
func TestComparePassKUsesOneKForAllRows(t *testing.T) {
	// trials of one task: n rewards of 1, then env failures.
	task := func(name string, n, env int) []trial {
		var out []trial
		for i := range n {
			out = append(out, scored(i+1, name, 1))
		}
		for i := range env {
			out = append(out, trial{n + i + 1, name, "env_failure", nil})
		}
		return out
	}
	tests := []struct {
		name             string
		nf, full         []trial
		k                int
		nfSkip, fullSkip int
		values           bool
	}{
		{
			// Six trials each, one more than DefaultMaxK; one env failure
			// in full leaves five scored. Each trial is an iteration, so
			// a few suffice: the cap, not the count, sets k here.
			name: "an env failure does not move k",
			nf:   append(task("a", DefaultMaxK+1, 0), task("b", DefaultMaxK+1, 0)...),
			full: append(task("a", DefaultMaxK, 1), task("b", DefaultMaxK+1, 0)...),
			k:    5, values: true,
		},
		{
			// Three trials per task; full's b lost two to the environment:
			// b is left out of both rows.
			name: "a task with too few scored trials in one row is left out of every row",
			nf:   append(task("a", 3, 0), task("b", 3, 0)...),
			full: append(task("a", 3, 0), task("b", 1, 2)...),
			k:    3, nfSkip: 1, fullSkip: 1, values: true,
		},
		{
			// no_feedback ran its tasks twice, full four times: k = 2 for both.
			name: "the row with fewest trials sets k",
			nf:   append(task("a", 2, 0), task("b", 2, 0)...),
			full: append(task("a", 4, 0), task("b", 4, 0)...),
			k:    2, values: true,
		},
		{
			// Every task of full lost all but one trial: nothing to average,
			// in either row.
			name: "no task with k scored trials",
			nf:   append(task("a", 3, 0), task("b", 3, 0)...),
			full: append(task("a", 1, 2), task("b", 1, 2)...),
			k:    3, nfSkip: 2, fullSkip: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m-matrix")
			writeMatrix(t, dir, []string{"no_feedback", "full"}, map[string][]rundir.MetricRow{
				"no_feedback": rowsOf("nf", "no_feedback", "no_feedback", "none", 1, tc.nf...),
				"full":        rowsOf("f", "full", "learned_mediator", "all", 1, tc.full...),
			})
			c, err := Compare(dir, CompareOptions{Resamples: 10})
			if err != nil {
				t.Fatal(err)
			}
			if c.K != tc.k {
				t.Errorf("k = %d, want %d", c.K, tc.k)
			}
			nf, full := rowByName(t, c, "no_feedback"), rowByName(t, c, "full")
			if nf.PassKSkipped != tc.nfSkip || full.PassKSkipped != tc.fullSkip {
				t.Errorf("skipped %d/%d, want %d/%d", nf.PassKSkipped, full.PassKSkipped, tc.nfSkip, tc.fullSkip)
			}
			for _, r := range []RowComparison{nf, full} {
				if (r.PassAtK != nil) != tc.values || (r.PassHatK != nil) != tc.values {
					t.Errorf("%s: pass@k %s pass^k %s, want values %v", r.Row, num(r.PassAtK), num(r.PassHatK), tc.values)
				}
				if r.PassAtK != nil {
					approx(t, r.Row+" pass@k", r.PassAtK, 1) // every scored trial succeeded
				}
			}
			var text bytes.Buffer
			if err := c.WriteText(&text, false); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("\tpass@%d\tpass^%d\n", tc.k, tc.k)
			if !strings.Contains(text.String(), want) {
				t.Errorf("header lacks %q:\n%s", want, text.String())
			}
		})
	}
}

// Every row's pass@k and pass^k average over the same tasks: those with at
// least k scored trials in every row. Averaged over each row's own such
// tasks, a row whose lost trials fell on a hard task dropped that task and
// looked better than a row that ran it.
func TestComparePassKOverTasksCommonToEveryRow(t *testing.T) {
	// run lays out one task's trials, one per iteration: a reward, or env
	// for an environment failure.
	const env = -1.0
	run := func(name string, rewards ...float64) []trial {
		out := make([]trial, len(rewards))
		for i, r := range rewards {
			out[i] = scored(i+1, name, r)
			if r == env {
				out[i] = trial{i + 1, name, "env_failure", nil}
			}
		}
		return out
	}
	type rowWant struct {
		at, hat        *float64 // nil: null
		skipped, short int
	}
	tests := []struct {
		name     string
		k        int // CompareOptions.K; 0 chooses
		nf, full []trial
		wantK    int
		tasks    int // pass_k_tasks
		leftOut  int // pass_k_left_out
		warning  string
		header   string // the line under the text's title stating the set; only when no task is left out
		nfW, fW  rowWant
	}{
		{
			// k = 2 fixed, three trials per task. b is hard: no_feedback
			// failed it three times, full lost two of its three trials to the
			// environment, so b is left out of both rows.
			//   no_feedback a n3 c3 -> pass@2 1, pass^2 C(3,2)/C(3,2) = 1
			//               c n3 c1 -> pass@2 1 - C(2,2)/C(3,2) = 2/3, pass^2 0
			//   full        a n3 c3 -> 1, 1
			//               c n3 c2 -> pass@2 1 - C(1,2)/C(3,2) = 1, pass^2 C(2,2)/C(3,2) = 1/3
			// Per row's own tasks, no_feedback would have averaged in b's 0s
			// (pass@2 5/9) while full skipped b (pass@2 1).
			name:  "errors on a hard task leave it out of every row",
			k:     2,
			nf:    slices.Concat(run("a", 1, 1, 1), run("b", 0, 0, 0), run("c", 1, 0, 0)),
			full:  slices.Concat(run("a", 1, 1, 1), run("b", 0, env, env), run("c", 1, 1, 0)),
			wantK: 2, tasks: 2, leftOut: 1,
			warning: "pass@2 and pass^2 over 2 tasks with at least 2 scored trials in every row; 1 task left out",
			nfW:     rowWant{ptr((1 + 2.0/3) / 2), ptr((1 + 0) / 2.0), 1, 0},
			fW:      rowWant{ptr((1 + 1) / 2.0), ptr((1 + 1.0/3) / 2), 1, 1},
		},
		{
			// full never ran b: b has fewer than k (0) scored trials there.
			//   no_feedback a n2 c1 -> pass@2 1, pass^2 0 (b n2 c2 left out)
			//   full        a n2 c2 -> 1, 1
			name:  "a task one row never ran",
			nf:    slices.Concat(run("a", 1, 0), run("b", 1, 1)),
			full:  run("a", 1, 1),
			wantK: 2, tasks: 1, leftOut: 1,
			warning: "pass@2 and pass^2 over 1 task with at least 2 scored trials in every row; 1 task left out",
			nfW:     rowWant{ptr(1.0), ptr(0.0), 1, 0},
			fW:      rowWant{ptr(1.0), ptr(1.0), 0, 1},
		},
		{
			// Every task of full kept one scored trial of three: no task
			// qualifies, and no row gets numbers, no_feedback included.
			name:  "no task qualifies",
			nf:    slices.Concat(run("a", 1, 1, 1), run("b", 1, 0, 1)),
			full:  slices.Concat(run("a", 1, env, env), run("b", env, 0, env)),
			wantK: 3, tasks: 0, leftOut: 2,
			warning: "pass@3 and pass^3 not reported for any row: no task has at least 3 scored trials in every row; 2 tasks left out",
			nfW:     rowWant{nil, nil, 2, 0},
			fW:      rowWant{nil, nil, 2, 2},
		},
		{
			// Both tasks have two scored trials in both rows: nothing left
			// out, nothing warned.
			//   no_feedback a n2 c1 -> 1, 0; b n2 c0 -> 0, 0
			//   full        a n2 c2 -> 1, 1; b n2 c1 -> 1, 0
			name:  "every task qualifies",
			nf:    slices.Concat(run("a", 1, 0), run("b", 0, 0)),
			full:  slices.Concat(run("a", 1, 1), run("b", 0, 1)),
			wantK: 2, tasks: 2, leftOut: 0,
			header: "pass@2 and pass^2 over all 2 tasks: each has at least 2 scored trials in every row\n",
			nfW:    rowWant{ptr(0.5), ptr(0.0), 0, 0},
			fW:     rowWant{ptr(1.0), ptr(0.5), 0, 0},
		},
		{
			// no_feedback ran a once: k = 1, and nothing is reported or
			// counted for any row.
			name:    "k below 2",
			nf:      slices.Concat(run("a", 1), run("b", 1, 1)),
			full:    slices.Concat(run("a", 1, 1), run("b", 1, 1)),
			wantK:   1,
			warning: "pass@k and pass^k not reported: some row has a task that ran only once",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m-matrix")
			writeMatrix(t, dir, []string{"no_feedback", "full"}, map[string][]rundir.MetricRow{
				"no_feedback": rowsOf("nf", "no_feedback", "no_feedback", "none", 1, tc.nf...),
				"full":        rowsOf("f", "full", "learned_mediator", "all", 1, tc.full...),
			})
			c, err := Compare(dir, CompareOptions{Resamples: 10, K: tc.k})
			if err != nil {
				t.Fatal(err)
			}
			if c.K != tc.wantK || c.PassKTasks != tc.tasks || c.PassKLeftOut != tc.leftOut {
				t.Errorf("k %d, pass_k_tasks %d, pass_k_left_out %d, want %d, %d, %d",
					c.K, c.PassKTasks, c.PassKLeftOut, tc.wantK, tc.tasks, tc.leftOut)
			}
			passWarnings := 0
			for _, w := range c.Warnings {
				if strings.HasPrefix(w, "pass@") {
					passWarnings++
				}
			}
			if tc.warning == "" && passWarnings != 0 || tc.warning != "" && (passWarnings != 1 || !containsSubstring(c.Warnings, tc.warning)) {
				t.Errorf("warnings %q, want exactly one pass@k warning %q (\"\" for none)", c.Warnings, tc.warning)
			}
			for _, rw := range []struct {
				row  string
				want rowWant
			}{{"no_feedback", tc.nfW}, {"full", tc.fW}} {
				r := rowByName(t, c, rw.row)
				for _, v := range []struct {
					what      string
					got, want *float64
				}{{"pass_at_k", r.PassAtK, rw.want.at}, {"pass_hat_k", r.PassHatK, rw.want.hat}} {
					if v.want == nil {
						if v.got != nil {
							t.Errorf("%s %s = %v, want null", rw.row, v.what, *v.got)
						}
						continue
					}
					approx(t, rw.row+" "+v.what, v.got, *v.want)
				}
				if r.PassKSkipped != rw.want.skipped || r.PassKShort != rw.want.short {
					t.Errorf("%s: pass_k_skipped %d, pass_k_short %d, want %d and %d",
						rw.row, r.PassKSkipped, r.PassKShort, rw.want.skipped, rw.want.short)
				}
				if containsSubstring(r.Warnings, "left out of every row's pass@") != (rw.want.short > 0) {
					t.Errorf("%s warnings %q: want the short-of-trials note only with pass_k_short > 0", rw.row, r.Warnings)
				}
			}

			var text bytes.Buffer
			if err := c.WriteText(&text, false); err != nil {
				t.Fatal(err)
			}
			// The set is stated once: under the title when nothing is left
			// out, else by the warning.
			stated := 1
			if tc.wantK < 2 {
				stated = 0
			}
			if n := strings.Count(text.String(), "scored trials in every row"); n != stated {
				t.Errorf("text states the pass@k task set %d times, want %d:\n%s", n, stated, text.String())
			}
			if tc.header != "" && !strings.Contains(text.String(), "\n"+tc.header+"\n") {
				t.Errorf("text lacks the line %q:\n%s", tc.header, text.String())
			}
			if tc.warning != "" && tc.wantK >= 2 && !strings.Contains(text.String(), "\n  ! "+tc.warning+"\n") {
				t.Errorf("text lacks the warning %q:\n%s", tc.warning, text.String())
			}
			var js bytes.Buffer
			if err := WriteJSON(&js, c); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Tasks   *int `json:"pass_k_tasks"`
				LeftOut *int `json:"pass_k_left_out"`
			}
			if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Tasks == nil || *doc.Tasks != tc.tasks || doc.LeftOut == nil || *doc.LeftOut != tc.leftOut {
				t.Errorf("JSON pass_k_tasks %v pass_k_left_out %v, want %d and %d", doc.Tasks, doc.LeftOut, tc.tasks, tc.leftOut)
			}
		})
	}
}

func TestComparePoolsSeedsOfARow(t *testing.T) {
	// One row run with seeds 1 and 2 (directories full-seed1, full-seed2)
	// pools per task: a gets trials 1 and 0 -> mean 0.5, k = 2.
	dir := filepath.Join(t.TempDir(), "m-matrix")
	writeMatrix(t, dir, []string{"full-seed1", "full-seed2", "no_feedback"}, map[string][]rundir.MetricRow{
		"full-seed1":  rowsOf("s1", "full-seed1", "learned_mediator", "all", 1, scored(1, "a", 1)),
		"full-seed2":  rowsOf("s2", "full-seed2", "learned_mediator", "all", 2, scored(1, "a", 0)),
		"no_feedback": rowsOf("nf", "no_feedback", "no_feedback", "none", 1, scored(1, "a", 0)),
	})
	c, err := Compare(dir, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 2 {
		t.Fatalf("rows = %d, want 2 (seeds pooled)", len(c.Rows))
	}
	r := rowByName(t, c, "full")
	if !reflect.DeepEqual(r.Seeds, []int64{1, 2}) || r.Runs != 2 || r.Scored != 2 || r.Tasks != 1 {
		t.Errorf("seeds %v runs %d scored %d tasks %d, want [1 2], 2, 2, 1", r.Seeds, r.Runs, r.Scored, r.Tasks)
	}
	approx(t, "mean", r.MeanReward, 0.5)
	approx(t, "diff", &r.Diff.Mean, 0.5)
}

func TestCompareWarnsWhenOneTaskDominates(t *testing.T) {
	// Only task a ever succeeds: the whole result rests on it.
	dir := filepath.Join(t.TempDir(), "m-matrix")
	writeMatrix(t, dir, []string{"no_feedback"}, map[string][]rundir.MetricRow{
		"no_feedback": rowsOf("nf", "no_feedback", "no_feedback", "none", 1,
			scored(1, "a", 1), scored(2, "a", 1), scored(1, "b", 0), scored(2, "b", 0), scored(1, "c", 0), scored(2, "c", 0)),
	})
	c, err := Compare(dir, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rowByName(t, c, "no_feedback")
	if r.DominantTask != "a" {
		t.Errorf("dominant task = %q, want a", r.DominantTask)
	}
	if !containsSubstring(r.Warnings, "task a carries 100% of the mean reward") {
		t.Errorf("warnings %q lack a dominance warning", r.Warnings)
	}

	// The hand-computed fixture: full_coevolution's task means 1, 0.5, 1
	// give shares 0.4, 0.2, 0.4 (no warning); no_feedback's 0.5, 0, 1 give
	// c 1/1.5 = 67% (a warning). The differences of full_coevolution to
	// no_feedback are 0.5, 0.5, 0: a and b carry half each, which is not
	// above the threshold; static_mediator's 0, 1, -0.5 give b 1/1.5.
	c, err = Compare(compareFixture(t), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		row  string
		want string // "" means no dominance warning
	}{
		{"full_coevolution", ""},
		{"no_feedback", "task c carries 67% of the mean reward"},
		{"static_mediator", "task b carries 67% of the difference to no_feedback"},
	}
	for _, tc := range tests {
		r := rowByName(t, c, tc.row)
		if tc.want == "" {
			if containsSubstring(r.Warnings, "carries") {
				t.Errorf("row %s warns of dominance: %q", tc.row, r.Warnings)
			}
			continue
		}
		if !containsSubstring(r.Warnings, tc.want) {
			t.Errorf("row %s warnings %q lack %q", tc.row, r.Warnings, tc.want)
		}
	}
	approx(t, "static diff dominant share", rowByName(t, c, "static_mediator").Diff.DominantShare, 1/1.5)
}

func TestCompareBaselineChoice(t *testing.T) {
	dir := compareFixture(t)
	c, err := Compare(dir, CompareOptions{Baseline: "static_mediator"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Baseline != "static_mediator" || c.BaselineReason != "chosen" {
		t.Errorf("baseline %q (%s)", c.Baseline, c.BaselineReason)
	}
	// no_feedback - static: a 0, b -1, c 0.5 -> -0.5/3
	approx(t, "diff", &rowByName(t, c, "no_feedback").Diff.Mean, -0.5/3)

	// A baseline naming no row is the caller's mistake: the CLI maps
	// ErrUnknownBaseline to the usage exit code.
	if _, err := Compare(dir, CompareOptions{Baseline: "nope"}); !errors.Is(err, ErrUnknownBaseline) || !strings.Contains(err.Error(), `no row named "nope"`) {
		t.Errorf("unknown baseline: err = %v, want one wrapping ErrUnknownBaseline", err)
	}
}

func TestCompareJSONFieldNames(t *testing.T) {
	c, err := Compare(compareFixture(t), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, c); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"row", "condition", "skill_update_policy", "seeds", "tasks", "trials", "scored",
		"env_failures", "unscored", "mean_reward", "ci_low", "ci_high", "diff", "pass_at_k", "pass_hat_k", "pass_k_skipped", "pass_k_short", "warnings"} {
		if _, ok := doc.Rows[0][key]; !ok {
			t.Errorf("row JSON lacks %q: %v", key, doc.Rows[0])
		}
	}
	var top map[string]any
	json.Unmarshal(buf.Bytes(), &top)
	for _, key := range []string{"id", "baseline", "baseline_reason", "level", "resamples", "bootstrap_seed", "k", "pass_k_tasks", "pass_k_left_out", "rows", "warnings"} {
		if _, ok := top[key]; !ok {
			t.Errorf("comparison JSON lacks %q", key)
		}
	}
}

func TestCompareText(t *testing.T) {
	c, err := Compare(compareFixture(t), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tty  bool
		want string
	}{
		{false, "row\tseeds\ttasks\tscored\tenv failures\tunscored\tmean reward"},
		{true, "ROW               SEEDS  TASKS  SCORED  ENV FAILURES  UNSCORED  MEAN REWARD"},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		if err := c.WriteText(&buf, tc.tty); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if !strings.Contains(out, tc.want) {
			t.Errorf("tty=%v: output lacks %q:\n%s", tc.tty, tc.want, out)
		}
		if !strings.Contains(out, "static_mediator: environment failures left out of the means (never scored as zeros): 1") {
			t.Errorf("tty=%v: output lacks the env failure note:\n%s", tc.tty, out)
		}
	}
}

// Trials without a reward that were not environment failures (here the
// agent_error on static_mediator's c) are counted in the table and warned
// about; no_feedback has none and gets no warning.
func TestCompareTextShowsUnscoredTrials(t *testing.T) {
	c, err := Compare(compareFixture(t), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.WriteText(&buf, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	tests := []struct {
		row      string
		line     string // the row's first cells: row, seeds, tasks, scored, env failures, unscored
		warnings bool
	}{
		{"static_mediator", "static_mediator\t42\t3\t5\t1\t1\t", true},
		{"no_feedback", "no_feedback\t42\t3\t6\t0\t0\t", false},
	}
	for _, tc := range tests {
		if !strings.Contains(out, "\n"+tc.line) {
			t.Errorf("output lacks the line starting %q:\n%s", tc.line, out)
		}
		warn := tc.row + ": unscored trials (agent errors, verifier errors) left out of the means: 1"
		if strings.Contains(out, warn) != tc.warnings {
			t.Errorf("warning %q present = %v, want %v:\n%s", warn, !tc.warnings, tc.warnings, out)
		}
	}
}

// Finding: with environment failures on every task but one in the
// baseline, the paired difference rests on one task. Its bootstrap can only
// redraw that task, so the interval had zero width ([0.667, 0.667]) and
// looked certain, with no warning.
func TestCompareDiffOverOneSharedTask(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-matrix")
	var nf, full []trial
	for it := 1; it <= 3; it++ {
		nf = append(nf, scored(it, "a", 0), trial{it, "b", "env_failure", nil}, trial{it, "c", "env_failure", nil})
		r := 1.0
		if it == 1 {
			r = 0
		}
		full = append(full, scored(it, "a", r), scored(it, "b", 1), scored(it, "c", 1))
	}
	writeMatrix(t, dir, []string{"no_feedback", "full"}, map[string][]rundir.MetricRow{
		"no_feedback": rowsOf("nf", "no_feedback", "no_feedback", "none", 1, nf...),
		"full":        rowsOf("f", "full", "learned_mediator", "all", 1, full...),
	})
	c, err := Compare(dir, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rowByName(t, c, "full")
	if r.Diff == nil || r.Diff.Tasks != 1 {
		t.Fatalf("diff = %+v, want one over 1 task", r.Diff)
	}
	approx(t, "diff", &r.Diff.Mean, 2.0/3)
	if r.Diff.CILow != nil || r.Diff.CIHigh != nil {
		t.Errorf("diff interval = %s, want none over one task", interval(r.Diff.CILow, r.Diff.CIHigh))
	}
	if !containsSubstring(r.Warnings, "shares only task a with no_feedback: the difference is that one task's and has no interval") {
		t.Errorf("warnings %q lack the one-task note", r.Warnings)
	}
	// no_feedback scored only task a, whose mean is 0: still said.
	if nf := rowByName(t, c, "no_feedback"); !containsSubstring(nf.Warnings, "only task a was scored") {
		t.Errorf("no_feedback warnings %q lack the one-task note", nf.Warnings)
	}

	var js bytes.Buffer
	if err := WriteJSON(&js, c); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []struct {
			Row  string         `json:"row"`
			Diff map[string]any `json:"diff"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, row := range doc.Rows {
		if row.Row != "full" {
			continue
		}
		for _, key := range []string{"ci_low", "ci_high"} {
			if v, ok := row.Diff[key]; !ok || v != nil {
				t.Errorf("JSON diff.%s = %v (present %v), want null", key, v, ok)
			}
		}
	}
	var text bytes.Buffer
	if err := c.WriteText(&text, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "\t0.667\t-\t") {
		t.Errorf("text shows an interval for the one-task difference:\n%s", text.String())
	}
}

func TestCompareRejectsDamagedParquet(t *testing.T) {
	dir := compareFixture(t)
	writeLines(t, filepath.Join(dir, "no_feedback", "metrics", "part-00003.parquet"), "not parquet")
	_, err := Compare(dir, CompareOptions{})
	if err == nil || !strings.Contains(err.Error(), "part-00003.parquet") {
		t.Errorf("err = %v, want one naming the damaged file", err)
	}
}

func containsSubstring(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
