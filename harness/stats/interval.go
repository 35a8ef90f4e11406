package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// ErrTooFew is wrapped by the errors of functions given too few values to
// estimate a spread: one task, or one seed and one task, has no interval.
var ErrTooFew = errors.New("too few values for an interval")

// Interval is an estimate with a two-sided confidence interval. SE is the
// estimated standard error of Mean and DF the degrees of freedom of the t
// distribution the interval and P use.
type Interval struct {
	Mean, Low, High float64
	SE, DF          float64
	Level           float64
}

// P is the two-sided p-value of the t test of a zero mean that the
// interval inverts: below 1 - Level exactly when the interval excludes 0.
// An interval of zero width gives 0 when its mean is not 0, else 1.
func (iv Interval) P() float64 {
	if iv.SE == 0 {
		if iv.Mean == 0 {
			return 1
		}
		return 0
	}
	t := math.Abs(iv.Mean) / iv.SE
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: iv.DF}.Survival(t)
}

func checkLevel(level float64) error {
	if !(level > 0 && level < 1) {
		return fmt.Errorf("confidence level %v is not in (0, 1): pass 0.95 for a 95%% interval", level)
	}
	return nil
}

// tInterval builds the interval mean ± t(df, (1+level)/2) · se.
func tInterval(mean, se, df, level float64) Interval {
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile((1 + level) / 2)
	return Interval{Mean: mean, Low: mean - q*se, High: mean + q*se, SE: se, DF: df, Level: level}
}

// MeanCI is the t interval for the mean of x, each value one independent
// unit (a task's mean, or a task's paired difference of means): mean ±
// t(n-1) · sd/√n. Unlike a percentile bootstrap over the same values, it
// widens for the few units benchmarks have (5 to 30 tasks) and so keeps its
// level there; docs/statistics.md gives the measured coverage. Errors for
// fewer than two values (wrapping ErrTooFew), a NaN or a bad level.
func MeanCI(x []float64, level float64) (Interval, error) {
	if err := checkLevel(level); err != nil {
		return Interval{}, err
	}
	if len(x) < 2 {
		return Interval{}, fmt.Errorf("t interval over %d values: %w (need at least 2)", len(x), ErrTooFew)
	}
	if slices.ContainsFunc(x, math.IsNaN) {
		return Interval{}, errors.New("t interval: a value is NaN")
	}
	mean, sd := stat.MeanStdDev(x, nil)
	return tInterval(mean, sd/math.Sqrt(float64(len(x))), float64(len(x)-1), level), nil
}

// TwoWayCI is the interval for the grand mean of a seeds x tasks table
// (cells[s][t]: seed s's mean, or paired difference, on task t) when both
// seeds and tasks are random draws: each seed is an independent run of the
// learning process whose luck is shared by all its tasks. It is the
// two-way random-effects analysis of variance without replication: with
// mean squares MSs (seeds), MSt (tasks) and MSe (residual), the variance
// of the grand mean is (MSs + MSt - MSe)/(S·T), with each component kept
// non-negative, and the degrees of freedom are the seeds' (see
// meanSquares.df). Pooling
// seeds as more trials would leave out the seed-to-seed spread and give
// intervals far too narrow. One seed reduces to MeanCI over tasks, one
// task to MeanCI over seeds. Every seed must have every task.
func TwoWayCI(cells [][]float64, level float64) (Interval, error) {
	if err := checkLevel(level); err != nil {
		return Interval{}, err
	}
	S := len(cells)
	if S == 0 || len(cells[0]) == 0 {
		return Interval{}, fmt.Errorf("two-way interval over an empty table: %w", ErrTooFew)
	}
	T := len(cells[0])
	for s, row := range cells {
		if len(row) != T {
			return Interval{}, fmt.Errorf("two-way interval: seed %d has %d tasks, seed 0 has %d: keep the tasks every seed scored", s, len(row), T)
		}
		if slices.ContainsFunc(row, math.IsNaN) {
			return Interval{}, fmt.Errorf("two-way interval: seed %d has a NaN cell", s)
		}
	}
	switch {
	case S == 1:
		return MeanCI(cells[0], level)
	case T == 1:
		col := make([]float64, S)
		for s := range cells {
			col[s] = cells[s][0]
		}
		return MeanCI(col, level)
	}
	ms := twoWayMeanSquares(cells)
	mean, se, df := ms.grand, ms.se(), ms.df()
	return tInterval(mean, se, df, level), nil
}

// meanSquares are the two-way table's analysis of variance.
type meanSquares struct {
	S, T                  int
	grand, seed, task, er float64
}

func twoWayMeanSquares(cells [][]float64) meanSquares {
	S, T := len(cells), len(cells[0])
	seedMean := make([]float64, S)
	taskMean := make([]float64, T)
	var grand float64
	for s, row := range cells {
		for t, v := range row {
			seedMean[s] += v / float64(T)
			taskMean[t] += v / float64(S)
			grand += v / float64(S*T)
		}
	}
	m := meanSquares{S: S, T: T, grand: grand}
	for _, v := range seedMean {
		m.seed += float64(T) * (v - grand) * (v - grand)
	}
	for _, v := range taskMean {
		m.task += float64(S) * (v - grand) * (v - grand)
	}
	for s, row := range cells {
		for t, v := range row {
			r := v - seedMean[s] - taskMean[t] + grand
			m.er += r * r
		}
	}
	m.seed /= float64(S - 1)
	m.task /= float64(T - 1)
	m.er /= float64((S - 1) * (T - 1))
	return m
}

// msTerm is one mean square in S·T·Var(grand mean), with its coefficient
// and degrees of freedom.
type msTerm struct{ coef, v, df float64 }

// terms writes S·T·Var(grand mean) = MSe + (MSs - MSe) + (MSt - MSe) as a
// sum of mean squares; a component whose estimate would be negative is
// dropped, with its -MSe.
func (m meanSquares) terms() []msTerm {
	S, T := float64(m.S), float64(m.T)
	parts := []msTerm{{1, m.er, (S - 1) * (T - 1)}}
	if m.seed > m.er {
		parts = append(parts, msTerm{1, m.seed, S - 1})
		parts[0].coef--
	}
	if m.task > m.er {
		parts = append(parts, msTerm{1, m.task, T - 1})
		parts[0].coef--
	}
	return parts
}

func (m meanSquares) se() float64 {
	var v float64
	for _, p := range m.terms() {
		v += p.coef * p.v
	}
	return math.Sqrt(max(v, 0) / float64(m.S*m.T))
}

// df is the degrees of freedom of the interval's t quantile. Whenever the
// seed component is in the variance, the seeds' own S-1 bound it: the
// run-to-run spread is measured by S runs, however many tasks each ran.
// When the seeds' mean square falls below the residual one (the seed
// component estimated as zero), the residual stands in for it and keeps
// the seeds' S-1, since S runs cannot show that runs do not differ; a
// task component beside it then raises them by Satterthwaite's
// approximation. Satterthwaite's approximation over all three mean
// squares, which this replaced, was liberal with many tasks: 93.2% at 30
// tasks x 3 trials x 3 seeds (docs/statistics.md).
func (m meanSquares) df() float64 {
	S, T := float64(m.S), float64(m.T)
	if m.seed > m.er || m.task <= m.er {
		return S - 1
	}
	den := m.er*m.er/(S-1) + m.task*m.task/(T-1) + m.er*m.er/((S-1)*(T-1))
	if den == 0 {
		return S - 1
	}
	return max(S-1, m.task*m.task/den)
}

// HierarchicalBootstrapCI is a percentile interval for the grand mean of a
// seeds x tasks table from a bootstrap with seeds a level above tasks
// (after rliable's stratified bootstrap): each of B replicates draws S
// seeds and T tasks with replacement and averages the drawn cells. Cells
// are per-seed task means, so trials are not redrawn one by one. It keeps
// its level while tasks dominate the spread, but with three seeds whose
// luck dominates it falls short (three seeds allow only ten distinct
// draws, and percentiles ignore how poorly three values pin down their
// spread); docs/statistics.md has the measured coverage, which is why
// `inspect --compare` uses TwoWayCI. Errors like TwoWayCI, and for B < 1.
func HierarchicalBootstrapCI(cells [][]float64, B int, level float64, seed uint64) (lo, hi float64, err error) {
	if err := checkLevel(level); err != nil {
		return 0, 0, err
	}
	if B < 1 {
		return 0, 0, fmt.Errorf("bootstrap with %d resamples: pass at least 1 (2000 is usual)", B)
	}
	if len(cells) == 0 || len(cells[0]) == 0 || len(cells)*len(cells[0]) < 2 {
		return 0, 0, fmt.Errorf("hierarchical bootstrap over a table of fewer than two cells: %w", ErrTooFew)
	}
	S, T := len(cells), len(cells[0])
	for s, row := range cells {
		if len(row) != T {
			return 0, 0, fmt.Errorf("hierarchical bootstrap: seed %d has %d tasks, seed 0 has %d", s, len(row), T)
		}
	}
	rng := newRand(seed)
	reps := make([]float64, B)
	seeds, tasks := make([]int, S), make([]int, T)
	for b := range reps {
		for i := range seeds {
			seeds[i] = rng.IntN(S)
		}
		for i := range tasks {
			tasks[i] = rng.IntN(T)
		}
		var sum float64
		for _, s := range seeds {
			for _, t := range tasks {
				sum += cells[s][t]
			}
		}
		reps[b] = sum / float64(S*T)
	}
	lo, hi = percentiles(reps, level)
	return lo, hi, nil
}
