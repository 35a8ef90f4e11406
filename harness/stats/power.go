package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// The power statement's settings: a two-sided test at PowerAlpha that
// detects the difference with probability PowerTarget.
const (
	PowerAlpha  = 0.05
	PowerTarget = 0.80
	// DefaultEffectOfInterest is the difference in mean reward worth
	// detecting when nothing else is said: ten points.
	DefaultEffectOfInterest = 0.10
)

// Design is the shape of a comparison between two rows: tasks compared,
// trials per task and seed, and seeds (independent runs) per row.
type Design struct {
	Tasks, Trials, Seeds int
}

func (d Design) check() error {
	if d.Tasks < 2 || d.Trials < 1 || d.Seeds < 1 {
		return fmt.Errorf("design of %d tasks x %d trials x %d seeds: need at least 2 tasks, 1 trial and 1 seed", d.Tasks, d.Trials, d.Seeds)
	}
	return nil
}

// Variance holds the components of the variance of a paired difference
// between two rows' mean rewards, each the variance of one draw:
//
//   - Task: of a task's true difference across tasks (how much the effect
//     differs by task);
//   - Seed: of a seed's shift of the difference, shared by all its tasks;
//   - Interaction: of a seed's shift on one task beyond those two;
//   - Trial: of one trial's reward difference on a task (both arms' trial
//     variance added; at most 0.5 for rewards of 0 or 1).
//
// The difference of means over a design then has variance Task/T +
// Seed/S + Interaction/(T·S) + Trial/(T·S·K). A per-task standard
// deviation sd of observed differences already holds the trial noise of
// the trials it was observed with: pass Task = sd² and Trial = 0 for a
// design with that many trials.
type Variance struct {
	Task, Seed, Interaction, Trial float64
}

// AssumedVariance is a guess for planning with no earlier run: rewards of
// 0 or 1 near a rate of one half on both arms (Trial 0.5), an effect that
// differs by task with a standard deviation of 0.1, and seeds and their
// interaction with tasks each with a standard deviation of 0.05.
var AssumedVariance = Variance{Task: 0.01, Seed: 0.0025, Interaction: 0.0025, Trial: 0.5}

func (v Variance) check() error {
	for _, c := range []float64{v.Task, v.Seed, v.Interaction, v.Trial} {
		if !(c >= 0) || math.IsInf(c, 0) {
			return fmt.Errorf("variance components %+v: each must be a finite number >= 0", v)
		}
	}
	if v.Task+v.Seed+v.Interaction+v.Trial == 0 {
		return errors.New("variance components are all 0: nothing to detect a difference against")
	}
	return nil
}

// se and df of the difference of means over d; df follows the interval
// the comparison uses (t over tasks with one seed, TwoWayCI's rule for the
// seeds x tasks table otherwise, applied to the mean squares the
// components lead one to expect).
func (v Variance) se(d Design) (se, df float64) {
	T, S, K := float64(d.Tasks), float64(d.Seeds), float64(d.Trials)
	se = math.Sqrt(v.Task/T + v.Seed/S + v.Interaction/(T*S) + v.Trial/(T*S*K))
	if d.Seeds == 1 {
		return se, T - 1
	}
	resid := v.Interaction + v.Trial/K
	m := meanSquares{S: d.Seeds, T: d.Tasks, seed: T*v.Seed + resid, task: S*v.Task + resid, er: resid}
	return se, m.df()
}

// ErrUnreachable is wrapped by the error of a power statement for a design
// whose test can never give p <= PowerAlpha: one seed and five tasks or
// fewer, where the sign-flip test's smallest p is 2/2^tasks.
var ErrUnreachable = errors.New("the test cannot reach significance")

// ErrUndetectable is wrapped by the error of MinDetectableDiff when even a
// difference of 1, the largest two mean rewards can have, is detected
// with less than PowerTarget probability.
var ErrUndetectable = errors.New("no difference in mean reward up to 1 is detected with 80% power")

// Test names the test ComparePaired decides significance by for the
// design: "sign-flip" over tasks with one seed, "t" (the two-way
// interval's) with several.
func (d Design) Test() string {
	if d.Seeds == 1 {
		return "sign-flip"
	}
	return "t"
}

// Reachable reports whether the design's test can give p <= PowerAlpha at
// all, and if not, why, in words a reader can act on.
func (d Design) Reachable() (bool, string) {
	if d.Seeds == 1 && SignFlipMinP(d.Tasks) > PowerAlpha {
		return false, fmt.Sprintf("%d tasks: the sign-flip test cannot reach p < %.2f (its smallest p is %.4g); use 6 tasks or more, or several seeds",
			d.Tasks, PowerAlpha, SignFlipMinP(d.Tasks))
	}
	return true, ""
}

// MinDetectableDiff is the smallest true difference in mean reward between
// two rows that a design detects with probability PowerTarget (80%) at
// PowerAlpha (5%, two-sided) by the test that decides significance
// (Design.Test): the sign-flip test with one seed, whose power is
// simulated (there is no formula), the t test of the two-way interval with
// several. A difference below it will usually come out "cannot tell".
// Errors for a design with fewer than two tasks or invalid components,
// wrapping ErrUnreachable for a design whose test can never reject and
// ErrUndetectable when the answer would exceed 1.
func MinDetectableDiff(d Design, v Variance) (float64, error) {
	power, err := powerFunc(d, v)
	if err != nil {
		return 0, err
	}
	if ok, why := d.Reachable(); !ok {
		return 0, fmt.Errorf("%s: %w", why, ErrUnreachable)
	}
	if power(1) < PowerTarget {
		return 0, fmt.Errorf("%d tasks x %d trials x %d seeds: %w", d.Tasks, d.Trials, d.Seeds, ErrUndetectable)
	}
	lo, hi := 0.0, 1.0
	steps := 40
	if d.Test() == "sign-flip" {
		steps = 14 // each step simulates; 1/2^14 is far below its error
	}
	for range steps {
		mid := (lo + hi) / 2
		if power(mid) < PowerTarget {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// Power is the probability that the design detects a true difference
// effect at PowerAlpha by the test that decides significance: simulated
// for the sign-flip test (one seed; standard error about 1.3 points), from
// the noncentral t distribution for the t test (several seeds). A design
// that cannot reach significance has power 0. Errors like
// MinDetectableDiff for a bad design or variance.
func Power(d Design, v Variance, effect float64) (float64, error) {
	power, err := powerFunc(d, v)
	if err != nil {
		return 0, err
	}
	if ok, _ := d.Reachable(); !ok {
		return 0, nil
	}
	return power(math.Abs(effect)), nil
}

// powerFunc is the power of the design's test as a function of the true
// difference.
func powerFunc(d Design, v Variance) (func(float64) float64, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if err := v.check(); err != nil {
		return nil, err
	}
	if d.Test() == "sign-flip" {
		return newFlipSim(d, v).power, nil
	}
	se, df := v.se(d)
	nct := newNoncentralT(df)
	return func(effect float64) float64 { return nct.power(effect / se) }, nil
}

// TPower is the power of the two-sided t test at PowerAlpha over the
// design, as if the interval decided significance with one seed too: what
// the interval can see, for comparison with Power.
func TPower(d Design, v Variance, effect float64) (float64, error) {
	if err := d.check(); err != nil {
		return 0, err
	}
	if err := v.check(); err != nil {
		return 0, err
	}
	se, df := v.se(d)
	return newNoncentralT(df).power(math.Abs(effect) / se), nil
}

// noncentralT computes the power of the two-sided t test: with T = (Z +
// delta)/sqrt(V/df), V chi-square on df, P(|T| > c) is the mean over V of
// Φ(delta - c·sqrt(V/df)) + Φ(-delta - c·sqrt(V/df)). The mean is taken
// over V at the midpoints of quantileGrid equal-probability slices; the
// shortcut t(0.975) + t(0.80) overstates power by several points at ten
// tasks.
type noncentralT struct {
	crit  float64
	scale []float64 // sqrt(V/df) at the grid's quantiles
}

const quantileGrid = 512

func newNoncentralT(df float64) noncentralT {
	n := noncentralT{crit: distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - PowerAlpha/2)}
	chi := distuv.ChiSquared{K: df}
	n.scale = make([]float64, quantileGrid)
	for i := range n.scale {
		n.scale[i] = math.Sqrt(chi.Quantile((float64(i)+0.5)/quantileGrid) / df)
	}
	return n
}

func (n noncentralT) power(delta float64) float64 {
	var sum float64
	for _, s := range n.scale {
		sum += distuv.UnitNormal.CDF(delta-n.crit*s) + distuv.UnitNormal.CDF(-delta-n.crit*s)
	}
	return sum / quantileGrid
}

// EstimateVariance estimates the variance components of the difference
// between a row and a baseline from their rewards: row and base hold one
// map (task id to rewards) per seed. Seeds pair by position when both rows
// have as many; otherwise the baseline's seeds are pooled. Only tasks with
// rewards in every seed of both rows are used, and the design they were
// observed at is returned with the components (Trials is the median
// count per seed and task). Trial noise is taken from cells with two or
// more trials; with one trial per cell it stays inside Task. Errors with
// fewer than two such tasks.
func EstimateVariance(row, base []map[string][]float64) (Variance, Design, error) {
	if len(row) == 0 || len(base) == 0 {
		return Variance{}, Design{}, fmt.Errorf("estimate variance: a row has no seed: %w", ErrTooFew)
	}
	pairs := pairSeeds(row, base)
	cells, tasks := PairedCells(row, base)
	if len(tasks) < 2 {
		return Variance{}, Design{}, fmt.Errorf("estimate variance over %d tasks shared by every seed: %w (need 2)", len(tasks), ErrTooFew)
	}
	S, T := len(row), len(tasks)
	var trialVar, noise, resNoise float64
	var nVar int
	var counts []int
	for s := range row {
		for _, id := range tasks {
			x, y := row[s][id], pairs[s][id]
			counts = append(counts, len(x))
			vx, vy := trialVariance(x), trialVariance(y)
			if len(x) >= 2 && len(y) >= 2 {
				trialVar += vx + vy
				nVar++
			}
			noise += vx/float64(len(x)) + vy/float64(len(y))
			resNoise += vx / float64(len(x))
			if len(base) == len(row) {
				resNoise += vy / float64(len(y))
			}
		}
	}
	slices.Sort(counts)
	d := Design{Tasks: T, Trials: counts[len(counts)/2], Seeds: S}
	var v Variance
	if nVar > 0 {
		v.Trial = trialVar / float64(nVar)
		noise /= float64(S * T)
		resNoise /= float64(S * T)
	} else {
		noise, resNoise = 0, 0
	}
	if S == 1 {
		v.Task = max(0, stat.Variance(cells[0], nil)-noise)
		return v, d, nil
	}
	m := twoWayMeanSquares(cells)
	v.Seed = max(0, (m.seed-m.er)/float64(T))
	v.Task = max(0, (m.task-m.er)/float64(S))
	v.Interaction = max(0, m.er-resNoise)
	return v, d, nil
}

// trialVariance is the unbiased variance of one trial's reward; 0 with
// fewer than two trials.
func trialVariance(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	return stat.Variance(x, nil)
}

// pairSeeds gives each of row's seeds the baseline rewards it is paired
// with: the baseline's seed at the same position, or all its seeds pooled.
func pairSeeds(row, base []map[string][]float64) []map[string][]float64 {
	if len(base) == len(row) {
		return base
	}
	pooled := map[string][]float64{}
	for _, m := range base {
		for id, r := range m {
			pooled[id] = append(pooled[id], r...)
		}
	}
	out := make([]map[string][]float64, len(row))
	for i := range out {
		out[i] = pooled
	}
	return out
}

// commonTasks are the tasks with rewards in every map, sorted.
func commonTasks(maps []map[string][]float64) []string {
	var out []string
	for _, id := range tasksWithData(maps[0]) {
		if !slices.ContainsFunc(maps[1:], func(m map[string][]float64) bool { return len(m[id]) == 0 }) {
			out = append(out, id)
		}
	}
	return out
}
