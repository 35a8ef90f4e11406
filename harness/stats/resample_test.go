package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func TestBinomialCDFMatchesTheDistribution(t *testing.T) {
	for _, c := range []struct {
		n int
		p float64
	}{{1, 0.5}, {7, 0.1}, {100, 0.37}, {1000, 0.6}, {4000, 0.999}} {
		cdf := binomialCDF(c.n, c.p)
		want := distuv.Binomial{N: float64(c.n), P: c.p}
		for k := 0; k <= c.n; k += max(1, c.n/50) {
			if got, w := cdf[k], want.CDF(float64(k)); math.Abs(got-w) > 1e-9 {
				t.Fatalf("Binomial(%d, %v): P(X <= %d) = %v, want %v", c.n, c.p, k, got, w)
			}
		}
	}
}

// trialBootstrap is the two-stage bootstrap drawn trial by trial, as
// BootstrapMacroCI drew it before it worked from counts.
func trialBootstrap(tasks [][]float64, B int, level float64, rng *rand.Rand) (lo, hi float64) {
	reps := make([]float64, B)
	for b := range reps {
		var sum float64
		for range tasks {
			rs := tasks[rng.IntN(len(tasks))]
			var s float64
			for range rs {
				s += rs[rng.IntN(len(rs))]
			}
			sum += s / float64(len(rs))
		}
		reps[b] = sum / float64(len(tasks))
	}
	return percentiles(reps, level)
}

// The draw from counts must have the distribution of the trial-by-trial
// draw: on random tables (binary rewards, and rewards with several values)
// both intervals, from many replicates, agree within Monte Carlo error.
func TestBootstrapFromCountsMatchesTrialByTrial(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name   string
		values []float64
	}{{"binary", []float64{0, 1}}, {"graded", []float64{0, 0.25, 0.5, 1}}} {
		for round := range 6 {
			T := 3 + rng.IntN(20)
			tasks := make([][]float64, T)
			summaries := make([]Rewards, T)
			for i := range tasks {
				n, p := 1+rng.IntN(6), rng.Float64()
				for range n {
					v := c.values[0]
					if rng.Float64() < p {
						v = c.values[1+rng.IntN(len(c.values)-1)]
					}
					tasks[i] = append(tasks[i], v)
					summaries[i].Add(v)
				}
			}
			lo, hi := BootstrapMacroCIOf(summaries, 20000, 0.9, uint64(round))
			wlo, whi := trialBootstrap(tasks, 20000, 0.9, rng)
			if math.Abs(lo-wlo) > 0.02 || math.Abs(hi-whi) > 0.02 {
				t.Errorf("%s round %d (%d tasks): from counts [%.3f, %.3f], trial by trial [%.3f, %.3f]", c.name, round, T, lo, hi, wlo, whi)
			}
		}
	}
}

func TestRewardsSummarize(t *testing.T) {
	var r Rewards
	for _, v := range []float64{1, 0, 0.5, 1, 0.25, 0.5} {
		r.Add(v)
	}
	var o Rewards
	o.Add(0.5)
	o.Add(2)
	r.Merge(o)
	if got, want := r.AppendValues(nil), []float64{0, 0.25, 0.5, 0.5, 0.5, 1, 1, 2}; !equalFloats(got, want) {
		t.Errorf("values = %v, want %v", got, want)
	}
	if r.N() != 8 || !near(r.Sum(), 5.75) || !near(r.Mean(), 5.75/8) || r.AtLeast(1) != 3 {
		t.Errorf("N %d, Sum %v, Mean %v, AtLeast(1) %d; want 8, 5.75, 0.71875, 3", r.N(), r.Sum(), r.Mean(), r.AtLeast(1))
	}
	if !math.IsNaN((Rewards{}).Mean()) || !math.IsNaN(MacroMeanOf(nil)) {
		t.Error("no rewards must give NaN")
	}
	if got := MacroMeanOf([]Rewards{r, {}, o}); !near(got, (5.75/8+1.25)/2) {
		t.Errorf("MacroMeanOf = %v", got)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
