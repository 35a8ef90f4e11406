package report

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/stats"
)

func TestRewardAxis(t *testing.T) {
	tests := []struct {
		name           string
		lo, hi         float64
		inUnit         bool
		wantLo, wantHi float64
	}{
		{"low rewards fill the plot, not its bottom tenth", 0.02, 0.12, true, 0.012, 0.128},
		{"a flat curve gets the minimum span", 0.5, 0.5, true, 0.442, 0.558},
		{"near zero the axis shifts up rather than going negative", 0, 0.04, true, 0, 0.116},
		{"near one it shifts down rather than passing 1", 0.97, 1, true, 0.884, 1},
		{"the whole unit range stays whole", 0, 1, true, 0, 1},
		{"rewards outside [0, 1] are not clamped", -0.5, 1.5, false, -0.66, 1.66},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := rewardAxis(tt.lo, tt.hi, tt.inUnit)
			if math.Abs(lo-tt.wantLo) > 1e-9 || math.Abs(hi-tt.wantHi) > 1e-9 {
				t.Errorf("rewardAxis(%v, %v) = [%v, %v], want [%v, %v]", tt.lo, tt.hi, lo, hi, tt.wantLo, tt.wantHi)
			}
			if lo > tt.lo || hi < tt.hi {
				t.Errorf("[%v, %v] does not hold the data [%v, %v]", lo, hi, tt.lo, tt.hi)
			}
			if hi-lo < minRewardSpan {
				t.Errorf("span %v is under %v", hi-lo, minRewardSpan)
			}
		})
	}
}

// Two rows whose rewards stay under 0.2 get an axis that ends near their
// data, not at 1.
func TestRewardPlotScalesToTheData(t *testing.T) {
	var series []inspect.RowSeries
	for r, base := range []float64{0.05, 0.1} {
		rs := inspect.RowSeries{Row: fmt.Sprintf("row%d", r), Runs: 1}
		for it := 1; it <= 3; it++ {
			var a, b stats.Rewards
			a.Add(base)
			b.Add(base + 0.02*float64(it))
			rs.Iterations = append(rs.Iterations, inspect.IterationSeries{Iteration: it, Tasks: []stats.Rewards{a, b}})
		}
		series = append(series, rs)
	}
	f, err := rewardPlot(context.Background(), series)
	if err != nil {
		t.Fatal(err)
	}
	if f.p.Y.Min < 0 || f.p.Y.Max > 0.3 || f.p.Y.Max < 0.16 {
		t.Errorf("y axis [%v, %v], want it within [0, 0.3] and holding 0.16", f.p.Y.Min, f.p.Y.Max)
	}
}

// The first eight rows differ in colour, and in marker too; neighbouring
// colours are far apart.
func TestRowStylesAreDistinguishable(t *testing.T) {
	seen := map[string]int{}
	for i := range 8 {
		c, shape, _ := rowStyle(i)
		key := fmt.Sprintf("%v %T", c, shape)
		if j, ok := seen[key]; ok {
			t.Errorf("rows %d and %d share colour and marker %s", j, i, key)
		}
		seen[key] = i
		if i > 0 {
			prev, prevShape, _ := rowStyle(i - 1)
			if d := colourDistance(prev, c); d < 100 {
				t.Errorf("rows %d and %d: colours %v and %v are only %.0f apart", i-1, i, prev, c, d)
			}
			if fmt.Sprintf("%T", prevShape) == fmt.Sprintf("%T", shape) {
				t.Errorf("rows %d and %d share the marker %T", i-1, i, shape)
			}
		}
	}
}

func colourDistance(a, b interface{ RGBA() (r, g, b, a uint32) }) float64 {
	ar, ag, ab, _ := a.RGBA()
	br, bg, bb, _ := b.RGBA()
	d := func(x, y uint32) float64 { return float64(x>>8) - float64(y>>8) }
	return math.Sqrt(d(ar, br)*d(ar, br) + d(ag, bg)*d(ag, bg) + d(ab, bb)*d(ab, bb))
}
