package report

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
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

// seriesOf builds a row from its mean reward per iteration (one task) and
// the skill updates committed in each iteration; a negative reward stands
// for an iteration without a scored trial.
func seriesOf(row string, rewards []float64, updates map[int]int) inspect.RowSeries {
	rs := inspect.RowSeries{Row: row, Runs: 1}
	for i, r := range rewards {
		it := inspect.IterationSeries{Iteration: i + 1, NewSkillUpdates: updates[i+1]}
		if r >= 0 {
			var task stats.Rewards
			task.Add(r)
			it.Tasks = []stats.Rewards{task}
		}
		rs.Iterations = append(rs.Iterations, it)
	}
	return rs
}

func TestUpdateMarks(t *testing.T) {
	tests := []struct {
		name   string
		series []inspect.RowSeries
		want   []updateMark
	}{
		{"an update takes effect in the next iteration",
			[]inspect.RowSeries{seriesOf("base", []float64{0, 0, 0}, nil), seriesOf("learn", []float64{0, 0, 0}, map[int]int{1: 2})},
			[]updateMark{{row: 1, from: 2, updates: 2}}},
		{"one in the last iteration took effect in none",
			[]inspect.RowSeries{seriesOf("learn", []float64{0, 0}, map[int]int{2: 1})}, nil},
		{"an iteration without a scored trial is not drawn, so not marked",
			[]inspect.RowSeries{seriesOf("learn", []float64{0, -1, 0}, map[int]int{1: 1, 2: 1})},
			[]updateMark{{row: 0, from: 3, updates: 1}}},
		{"no update, no mark", []inspect.RowSeries{seriesOf("base", []float64{0, 0}, nil)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := updateMarks(tt.series); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("updateMarks = %v, want %v", got, tt.want)
			}
		})
	}
}

// The reward plot gets a lane above the data for the marks, its ticks stay
// within the rewards, and the legend names the mark; the note that nothing
// changed appears on both plots exactly when no row has an update.
func TestPlotsMarkUpdatesOrSayNothingChanged(t *testing.T) {
	tests := []struct {
		name      string
		updates   map[int]int
		wantMarks bool
		wantNote  bool
	}{
		{"an update in effect", map[int]int{1: 1}, true, false},
		{"an update committed last", map[int]int{3: 1}, false, false},
		{"nothing changed", nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			series := []inspect.RowSeries{seriesOf("base", []float64{0.1, 0.1, 0.2}, nil),
				seriesOf("learn", []float64{0.1, 0.3, 0.4}, tt.updates)}
			f, err := rewardPlot(context.Background(), series)
			if err != nil {
				t.Fatal(err)
			}
			_, dataHi := rewardAxis(0.1, 0.4, true)
			if lane := f.p.Y.Max > dataHi+1e-9; lane != tt.wantMarks {
				t.Errorf("y axis ends at %v (data axis %v): lane above the data = %v, want %v", f.p.Y.Max, dataHi, lane, tt.wantMarks)
			}
			for _, tk := range f.p.Y.Tick.Marker.Ticks(f.p.Y.Min, f.p.Y.Max) {
				if tk.Label != "" && tk.Value > dataHi+1e-9 {
					t.Errorf("tick %q above the rewards, in the marks' lane", tk.Label)
				}
			}
			svg := filepath.Join(t.TempDir(), "reward.svg")
			if err := f.save(svg, "svg"); err != nil {
				t.Fatalf("drawing the plot: %v", err)
			}
			drawn, err := os.ReadFile(svg)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(drawn), "skill update in effect"); got != tt.wantMarks {
				t.Errorf("the legend names the update mark: %v, want %v", got, tt.wantMarks)
			}
			u, err := skillUpdatesPlot(context.Background(), series)
			if err != nil {
				t.Fatal(err)
			}
			for _, title := range []string{f.p.Title.Text, u.p.Title.Text} {
				if got := strings.Contains(title, noUpdateNote); got != tt.wantNote {
					t.Errorf("title %q carries the no-update note: %v, want %v", title, got, tt.wantNote)
				}
			}
		})
	}
}

// Rows with the same mean in the same iteration get nested markers: each
// later row's is drawn larger around the ones below it.
func TestCoincidingRowsNest(t *testing.T) {
	curves := []rewardCurve{
		newRewardCurve(seriesOf("a", []float64{0.1, 0.2}, nil)),
		newRewardCurve(seriesOf("b", []float64{0.1, 0.5}, nil)),
		newRewardCurve(seriesOf("c", []float64{0.1004, 0.2}, nil)),
	}
	nestCoinciding(curves)
	want := [][]int{{0, 0}, {1, 0}, {2, 1}}
	for i, c := range curves {
		if fmt.Sprint(c.under) != fmt.Sprint(want[i]) {
			t.Errorf("row %d: rows under each point %v, want %v", i, c.under, want[i])
		}
	}
}
