package stats_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mediated-coevo/harness/harness/stats"
)

func TestRankCorrelationCI(t *testing.T) {
	tests := []struct {
		name    string
		x, y    []float64
		rho     float64
		wantErr string
	}{
		{"same order", []float64{1, 2, 3, 4, 5}, []float64{10, 20, 30, 40, 50}, 1, ""},
		{"reversed", []float64{1, 2, 3, 4, 5}, []float64{5, 4, 3, 2, 1}, -1, ""},
		{"monotone, not linear", []float64{1, 2, 3, 4, 5}, []float64{1, 4, 9, 16, 100}, 1, ""},
		{"ties share their rank", []float64{1, 2, 3, 4}, []float64{0, 0, 1, 1}, 0.8944271909999159, ""},
		{"too few pairs", []float64{1, 2, 3}, []float64{1, 2, 3}, 0, "too few"},
		{"no ranking on one side", []float64{1, 2, 3, 4}, []float64{0, 0, 0, 0}, 0, "the same"},
		{"unequal lengths", []float64{1, 2, 3, 4}, []float64{1, 2, 3}, 0, "one pair per unit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := stats.RankCorrelationCI(tt.x, tt.y, 0.95)
			if tt.wantErr != "" {
				if err == nil || !contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				if tt.wantErr == "too few" && !errors.Is(err, stats.ErrTooFew) {
					t.Errorf("error %v does not wrap ErrTooFew", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got.Rho-tt.rho) > 1e-9 || !(got.Low <= got.Rho && got.Rho <= got.High) || got.Low < -1 || got.High > 1 {
				t.Errorf("got %+v, want rho %v inside an interval within [-1, 1]", got, tt.rho)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// rankWorld draws n pairs from a bivariate normal with correlation r,
// whose Spearman correlation is (6/π)·asin(r/2): the truth the interval
// must hold.
type rankWorld struct {
	n int
	r float64
}

func (w rankWorld) truth() float64 { return 6 / math.Pi * math.Asin(w.r/2) }

// rankCoverage is the share of reps replicates whose 95% interval holds
// the truth.
func rankCoverage(t testing.TB, w rankWorld, reps int, seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, 11))
	hit := 0
	x, y := make([]float64, w.n), make([]float64, w.n)
	for range reps {
		for i := range w.n {
			a, b := rng.NormFloat64(), rng.NormFloat64()
			x[i], y[i] = a, w.r*a+math.Sqrt(1-w.r*w.r)*b
		}
		iv, err := stats.RankCorrelationCI(x, y, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if iv.Low <= w.truth() && w.truth() <= iv.High {
			hit++
		}
	}
	return float64(hit) / float64(reps)
}

var rankCases = []struct {
	name string
	w    rankWorld
}{
	{"n5/r0", rankWorld{5, 0}},
	{"n5/r0.6", rankWorld{5, 0.6}},
	{"n10/r0", rankWorld{10, 0}},
	{"n10/r0.6", rankWorld{10, 0.6}},
	{"n20/r0.6", rankWorld{20, 0.6}},
	{"n40/r0.8", rankWorld{40, 0.8}},
}

// TestRankCorrelationCoverage is the fast guard of the coverage
// docs/statistics.md reports (BenchmarkRankCorrelationCoverage measures
// it): a broken interval, such as one without the n - 3 or the
// Bonett-Wright correction, falls out of the band.
func TestRankCorrelationCoverage(t *testing.T) {
	const reps = 400
	for _, c := range rankCases {
		t.Run(c.name, func(t *testing.T) {
			if got := rankCoverage(t, c.w, reps, 3); got < 0.90 || got > 0.995 {
				t.Errorf("coverage %.3f over %d replicates, want within [0.90, 0.995]", got, reps)
			}
		})
	}
}

// BenchmarkRankCorrelationCoverage measures the coverage of the 95%
// interval with 4000 replicates per case.
func BenchmarkRankCorrelationCoverage(b *testing.B) {
	for _, c := range rankCases {
		b.Run(c.name, func(b *testing.B) {
			var sum float64
			n := 0
			for b.Loop() {
				sum += rankCoverage(b, c.w, 4000, uint64(900+n))
				n++
			}
			b.ReportMetric(sum/float64(n), "coverage")
		})
	}
}
