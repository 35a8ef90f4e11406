package gate

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// TestBetaSamplerDrawsWhatGonumDraws checks the sampler of P(better)
// against distuv.Beta.Rand, bit for bit, on the shapes posteriors take
// (whole and fractional reward sums, shapes of exactly 1 included) and on
// one it leaves to gonum: a change in either would move every decision and
// the default's table with it.
func TestBetaSamplerDrawsWhatGonumDraws(t *testing.T) {
	tests := []struct {
		name        string
		alpha, beta float64
	}{
		{"prior", 1, 1},
		{"all failed", 1, 9},
		{"all passed", 7, 1},
		{"mixed", 4, 3},
		{"fractional rewards", 2.75, 5.25},
		{"large", 120.5, 80.5},
		{"below the prior, left to gonum", 0.5, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := distuv.Beta{Alpha: tt.alpha, Beta: tt.beta, Src: rand.NewPCG(7, 11)}
			s := newBetaSampler(distuv.Beta{Alpha: tt.alpha, Beta: tt.beta, Src: rand.NewPCG(7, 11)})
			for i := range 20000 {
				w, g := want.Rand(), s.Rand()
				if math.Float64bits(w) != math.Float64bits(g) {
					t.Fatalf("draw %d: gonum %v, sampler %v", i, w, g)
				}
			}
		})
	}
}
