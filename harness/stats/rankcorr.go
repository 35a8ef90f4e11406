package stats

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// MinRankPairs is the fewest pairs RankCorrelationCI gives an interval
// for: the Fisher z interval divides by n - 3.
const MinRankPairs = 4

// RankCorrelation is Spearman's rank correlation of paired values with a
// two-sided confidence interval.
type RankCorrelation struct {
	Rho, Low, High float64
	N              int
	Level          float64
}

// RankCorrelationCI is Spearman's rank correlation of x and y (ties take
// their average rank) with the Fisher z interval and the Bonett-Wright
// standard error, sqrt((1 + rho²/2) / (n - 3)): tanh(atanh(rho) ± z·se).
// docs/statistics.md gives its measured coverage. Errors for fewer than
// MinRankPairs pairs (wrapping ErrTooFew), unequal lengths, a NaN, a bad
// level, or values that are all equal on one side (no ranking).
func RankCorrelationCI(x, y []float64, level float64) (RankCorrelation, error) {
	if err := checkLevel(level); err != nil {
		return RankCorrelation{}, err
	}
	if len(x) != len(y) {
		return RankCorrelation{}, fmt.Errorf("rank correlation of %d values with %d: pass one pair per unit", len(x), len(y))
	}
	n := len(x)
	if n < MinRankPairs {
		return RankCorrelation{}, fmt.Errorf("rank correlation of %d pairs: %w (need at least %d)", n, ErrTooFew, MinRankPairs)
	}
	for i := range x {
		if math.IsNaN(x[i]) || math.IsNaN(y[i]) {
			return RankCorrelation{}, fmt.Errorf("rank correlation: pair %d holds a NaN", i+1)
		}
	}
	rx, ry := ranks(x), ranks(y)
	if stat.Variance(rx, nil) == 0 || stat.Variance(ry, nil) == 0 {
		return RankCorrelation{}, fmt.Errorf("rank correlation of %d pairs: every value on one side is the same, so there is no ranking to correlate", n)
	}
	rho := stat.Correlation(rx, ry, nil)
	// atanh is infinite at ±1; keep the interval finite and closed at the edge.
	r := math.Max(-0.9999, math.Min(0.9999, rho))
	se := math.Sqrt((1 + r*r/2) / float64(n-3))
	z := distuv.UnitNormal.Quantile((1 + level) / 2)
	lo, hi := math.Tanh(math.Atanh(r)-z*se), math.Tanh(math.Atanh(r)+z*se)
	return RankCorrelation{Rho: rho, Low: math.Min(lo, rho), High: math.Max(hi, rho), N: n, Level: level}, nil
}

// ranks are the ranks of x from 1, ties sharing their average rank.
func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	out := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			out[idx[k]] = avg
		}
		i = j + 1
	}
	return out
}
