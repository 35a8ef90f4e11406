// Package stats holds the statistics `harness inspect --compare` reports for
// rows that share tasks: the macro mean reward (every task weighs the same),
// t intervals over tasks and over seeds x tasks tables, the paired per-task
// difference between two rows with a sign-flip permutation p-value and
// Holm's correction across rows, the probability of improvement and the
// interquartile mean, the unbiased pass@k and pass^k estimators, a check
// for one task dominating a result, and the minimum detectable difference
// of a design. docs/statistics.md gives each interval's measured coverage.
//
// Inputs map task ids to the rewards of that task's usable trials. Trials
// lost to environment failures are not in them: callers count those apart,
// never as zeros. Every function is deterministic for its seed (tasks are
// visited in sorted order) and imports nothing else of this module.
package stats

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/combin"
)

// DominanceThreshold is the share above which Dominance's task should be
// reported as dominating: one task carrying more than half of the result.
const DominanceThreshold = 0.5

// tasksWithData returns the ids of tasks that have at least one reward, in
// sorted order.
func tasksWithData(perTask map[string][]float64) []string {
	ids := make([]string, 0, len(perTask))
	for id, r := range perTask {
		if len(r) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// TaskMeans returns the mean reward of every task that has one.
func TaskMeans(perTask map[string][]float64) map[string]float64 {
	out := map[string]float64{}
	for _, id := range tasksWithData(perTask) {
		out[id] = stat.Mean(perTask[id], nil)
	}
	return out
}

// MacroMean is the mean over tasks of each task's mean reward, so a task run
// more often does not weigh more. Tasks without rewards are skipped; NaN when
// no task has one.
func MacroMean(perTask map[string][]float64) float64 {
	ids := tasksWithData(perTask)
	if len(ids) == 0 {
		return math.NaN()
	}
	means := make([]float64, len(ids))
	for i, id := range ids {
		means[i] = stat.Mean(perTask[id], nil)
	}
	return stat.Mean(means, nil)
}

// BootstrapMacroCI is a percentile bootstrap interval for MacroMean at the
// given level (0.95 for 95%) from B replicates. Each replicate draws the
// tasks with replacement and then, within each drawn task, its rewards with
// replacement (a two-stage cluster bootstrap), so the interval reflects both
// which tasks were chosen and how noisy each one is. With a single task only
// the second stage varies. The draws are made from per-task counts (see
// BootstrapMacroCIOf), never trial by trial. NaN, NaN when no task has a
// reward, B < 1 or the level is not in (0, 1).
func BootstrapMacroCI(perTask map[string][]float64, B int, level float64, seed uint64) (lo, hi float64) {
	ids := tasksWithData(perTask)
	tasks := make([]Rewards, len(ids))
	for i, id := range ids {
		for _, v := range perTask[id] {
			tasks[i].Add(v)
		}
	}
	return BootstrapMacroCIOf(tasks, B, level, seed)
}

// PairedDiffs returns, for every task with rewards in both a and b, the
// difference of its mean rewards (a minus b) as a one-value slice, ready
// for MacroMean and Dominance.
func PairedDiffs(a, b map[string][]float64) map[string][]float64 {
	out := map[string][]float64{}
	for _, id := range tasksWithData(a) {
		if len(b[id]) > 0 {
			out[id] = []float64{stat.Mean(a[id], nil) - stat.Mean(b[id], nil)}
		}
	}
	return out
}

// PassAtK is the unbiased estimate, from n trials of a task with c
// successes, of the probability that at least one of k trials succeeds:
// 1 - C(n-c, k) / C(n, k). NaN when k < 1, n < k (too few trials to
// estimate it) or c is not in [0, n].
func PassAtK(n, c, k int) float64 {
	if !validPass(n, c, k) {
		return math.NaN()
	}
	if n-c < k {
		return 1 // every k-subset holds a success
	}
	return 1 - binomialRatio(n-c, n, k)
}

// PassHatK is the unbiased estimate, from n trials of a task with c
// successes, of the probability that all of k trials succeed (tau-bench's
// pass^k): C(c, k) / C(n, k). NaN when k < 1, n < k or c is not in [0, n].
func PassHatK(n, c, k int) float64 {
	if !validPass(n, c, k) {
		return math.NaN()
	}
	if c < k {
		return 0 // no k-subset is all successes
	}
	return binomialRatio(c, n, k)
}

// MacroPassAtK averages PassAtK over the tasks with at least k trials,
// counting a trial as a success when its reward is 1 (full marks). tasks is
// how many tasks were used; the value is NaN when none was.
func MacroPassAtK(perTask map[string][]float64, k int) (value float64, tasks int) {
	return macroPass(perTask, k, PassAtK)
}

// MacroPassHatK averages PassHatK like MacroPassAtK.
func MacroPassHatK(perTask map[string][]float64, k int) (value float64, tasks int) {
	return macroPass(perTask, k, PassHatK)
}

func macroPass(perTask map[string][]float64, k int, est func(n, c, k int) float64) (float64, int) {
	var vals []float64
	for _, id := range tasksWithData(perTask) {
		rewards := perTask[id]
		if k < 1 || len(rewards) < k {
			continue
		}
		c := 0
		for _, r := range rewards {
			if r >= 1 {
				c++
			}
		}
		vals = append(vals, est(len(rewards), c, k))
	}
	if len(vals) == 0 {
		return math.NaN(), 0
	}
	return stat.Mean(vals, nil), len(vals)
}

// Dominance finds the task that carries the largest share of a macro
// result: each task's share is the absolute value of its mean divided by
// the sum of those absolute values over all tasks with data. Given rewards,
// that is the task contributing most of the macro mean; given PairedDiffs,
// the task contributing most of the difference between two rows (gains and
// losses both count). A share above DominanceThreshold deserves a warning:
// the result mostly reports one task. With one or two tasks the share is
// large by construction, which is itself worth saying. ("", 0) when no task
// has data or every mean is 0; ties go to the task id that sorts first.
func Dominance(perTask map[string][]float64) (task string, share float64) {
	var total, best float64
	for _, id := range tasksWithData(perTask) {
		v := math.Abs(stat.Mean(perTask[id], nil))
		total += v
		if v > best {
			task, best = id, v
		}
	}
	if total == 0 {
		return "", 0
	}
	return task, best / total
}

// binomialRatio is C(m, k) / C(n, k) for 0 <= k <= m <= n, from gonum's log
// binomial coefficients so large trial counts cannot overflow.
func binomialRatio(m, n, k int) float64 {
	return math.Exp(combin.LogGeneralizedBinomial(float64(m), float64(k)) -
		combin.LogGeneralizedBinomial(float64(n), float64(k)))
}

func validPass(n, c, k int) bool {
	return k >= 1 && n >= k && c >= 0 && c <= n
}

func validBootstrap(B int, level float64) bool {
	return B >= 1 && level > 0 && level < 1
}

// newRand returns the generator every bootstrap draws from, fixed by seed.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x5eed5eed5eed5eed))
}

// percentiles sorts the replicates and returns the two-sided percentile
// interval at the level (empirical quantiles, no interpolation).
func percentiles(reps []float64, level float64) (lo, hi float64) {
	slices.Sort(reps)
	tail := (1 - level) / 2
	return stat.Quantile(tail, stat.Empirical, reps, nil), stat.Quantile(1-tail, stat.Empirical, reps, nil)
}
