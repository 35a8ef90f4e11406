package stats_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mediated-coevo/harness/harness/stats"
)

// The stratified bootstrap is conditional on the tasks: its truth is the
// estimand on the tasks drawn, with their true rates, so every replicate
// draws fresh tasks, computes the truth from their rates, and only then
// draws the trials the intervals see. One seed: the bootstrap redraws
// trials, not runs.

// stratifiedCoverage is the share of reps replicates whose IQMCI holds the
// interquartile mean of the row's true task rates, and whose PoICI holds
// the true probability of improvement over the baseline on those tasks.
func stratifiedCoverage(t testing.TB, w world, reps int, seed uint64) (iqm, poi float64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	var iqmHits, poiHits int
	for i := range reps {
		row, base := map[string][]float64{}, map[string][]float64{}
		rates := make([]float64, w.tasks)
		var trueP float64
		for k := range w.tasks {
			mu := rng.NormFloat64() * w.taskSD
			q := logistic(mu + w.shift + rng.NormFloat64()*w.shiftSD)
			p := logistic(mu)
			rates[k] = q
			// P(X > Y) + P(X = Y)/2 for Bernoulli X ~ q, Y ~ p.
			trueP += q*(1-p) + (q*p+(1-q)*(1-p))/2
			id := fmt.Sprintf("t%02d", k)
			for range w.trials {
				row[id] = append(row[id], bernoulli(rng, q))
				base[id] = append(base[id], bernoulli(rng, p))
			}
		}
		trueP /= float64(w.tasks)
		trueIQM := iqmOf(rates)
		lo, hi, err := stats.IQMCI([]map[string][]float64{row}, 1000, 0.95, uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		if lo <= trueIQM && trueIQM <= hi {
			iqmHits++
		}
		lo, hi, err = stats.PoICI(row, base, 1000, 0.95, uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		if lo <= trueP && trueP <= hi {
			poiHits++
		}
	}
	return float64(iqmHits) / float64(reps), float64(poiHits) / float64(reps)
}

// iqmOf is the interquartile mean computed here, apart from stats.IQM.
func iqmOf(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	cut := len(s) / 4
	var sum float64
	for _, v := range s[cut : len(s)-cut] {
		sum += v
	}
	return sum / float64(len(s)-2*cut)
}

var stratifiedCases = []struct {
	name string
	w    world
}{
	{"shifted/10x3", shifted},
	{"shifted/10x10", with(shifted, 10, 10, 1, 0)},
	{"shifted/30x3", with(shifted, 30, 3, 1, 0)},
	{"shifted/30x10", with(shifted, 30, 10, 1, 0)},
	{"null/10x10", with(null, 10, 10, 1, 0)},
}

// BenchmarkCoverageStratified measures the stratified bootstrap intervals
// of the interquartile mean and the probability of improvement against
// their truth on the drawn tasks. Run:
//
//	go test -bench CoverageStratified -run '^$' -benchtime 1x ./harness/stats/
func BenchmarkCoverageStratified(b *testing.B) {
	for _, c := range stratifiedCases {
		b.Run(c.name, func(b *testing.B) {
			var si, sp float64
			n := 0
			for b.Loop() {
				i, p := stratifiedCoverage(b, c.w, 2000, uint64(800+n))
				si, sp = si+i, sp+p
				n++
			}
			b.ReportMetric(si/float64(n), "iqm-coverage")
			b.ReportMetric(sp/float64(n), "poi-coverage")
		})
	}
}

func TestStratifiedIntervals(t *testing.T) {
	a := map[string][]float64{"x": {1, 1, 0, 1}, "y": {0, 1, 0, 0}, "z": {1, 1, 1, 1}}
	b := map[string][]float64{"x": {0, 1, 0, 0}, "y": {0, 0, 0, 0}, "z": {1, 0, 1, 1}}
	lo, hi, err := stats.IQMCI([]map[string][]float64{a}, 500, 0.95, 1)
	if err != nil || !(lo < hi && lo >= 0 && hi <= 1) {
		t.Errorf("IQMCI = [%v, %v], %v", lo, hi, err)
	}
	if lo2, hi2, _ := stats.IQMCI([]map[string][]float64{a}, 500, 0.95, 1); lo2 != lo || hi2 != hi {
		t.Errorf("same seed, different interval: [%v, %v] vs [%v, %v]", lo, hi, lo2, hi2)
	}
	// Constant rewards leave nothing to redraw: the interval is the point.
	flat := map[string][]float64{"x": {1, 1}, "y": {0, 0}}
	if lo, hi, _ := stats.IQMCI([]map[string][]float64{flat}, 200, 0.95, 1); lo != 0.5 || hi != 0.5 {
		t.Errorf("constant rewards: [%v, %v], want [0.5, 0.5]", lo, hi)
	}
	poi, _, _ := stats.ProbabilityOfImprovement(a, b)
	lo, hi, err = stats.PoICI(a, b, 500, 0.95, 1)
	if err != nil || !(lo <= poi && poi <= hi && lo < hi) {
		t.Errorf("PoICI = [%v, %v] around %v, %v", lo, hi, poi, err)
	}
	for _, bad := range []func() error{
		func() error { _, _, err := stats.IQMCI(nil, 100, 0.95, 1); return err },
		func() error { _, _, err := stats.IQMCI([]map[string][]float64{a}, 0, 0.95, 1); return err },
		func() error { _, _, err := stats.PoICI(a, map[string][]float64{"w": {1}}, 100, 0.95, 1); return err },
		func() error { _, _, err := stats.PoICI(a, b, 100, 1.5, 1); return err },
	} {
		if bad() == nil {
			t.Error("bad input accepted")
		}
	}
}

// TestStratifiedCoverageBand is the fast guard on the stratified
// intervals' coverage (BenchmarkCoverageStratified measures it).
func TestStratifiedCoverageBand(t *testing.T) {
	iqm, poi := stratifiedCoverage(t, with(shifted, 10, 10, 1, 0), 200, 3)
	if iqm < 0.85 || poi < 0.87 {
		t.Errorf("coverage over 200 replicates at 10 x 10: iqm %.3f (want >= 0.85), poi %.3f (want >= 0.87)", iqm, poi)
	}
}
