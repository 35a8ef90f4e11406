package report

import (
	"context"
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/stats"
	"github.com/mediated-coevo/harness/internal/durable"
)

// Bands are 95% bootstrap intervals over tasks with this many resamples and
// this seed: enough for a picture, and the same picture every time.
const (
	bandResamples = 1000
	bandLevel     = 0.95
	bandSeed      = 1
)

// figure is a plot, its legend and the size they are drawn at. The legend
// is drawn in a strip right of the plot, so it never hides data however
// many rows there are.
type figure struct {
	p      *plot.Plot
	legend plot.Legend
	w, h   vg.Length
}

func newFigure(title, x, y string) figure {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	return figure{p: p, legend: l, w: 9 * vg.Inch, h: 5 * vg.Inch}
}

// save draws the figure in format (png or svg) and writes it atomically.
func (f figure) save(path, format string) error {
	c, err := draw.NewFormattedCanvas(f.w, f.h, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	gap := vg.Points(8)
	lw := f.legend.Rectangle(dc).Size().X
	if lw > 0 {
		lw += 2 * gap
	}
	// A margin above the title: drawn flush with the top, its first line
	// lost the tops of its letters.
	f.p.Draw(draw.Crop(dc, 0, -lw, 0, -gap/2))
	if lw > 0 {
		// Start below the title, level with the top of the data area.
		top := -(f.p.Title.TextStyle.Height(f.p.Title.Text) + f.p.Title.Padding + gap)
		f.legend.Draw(draw.Crop(dc, f.w-lw+gap, -gap, 0, top))
	}
	return durable.WriteFileFunc(path, 0o644, func(w io.Writer) error {
		_, err := c.WriteTo(w)
		return err
	})
}

// wholeTicks labels an axis of iterations at whole numbers only, with a
// round step that keeps at most ten labels however long the run was; the default
// ticker would label iteration 1.5.
type wholeTicks struct{}

func (wholeTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := math.Ceil(min), math.Floor(max)
	if hi < lo {
		return nil
	}
	step := 1.0
	for (hi-lo)/step > 10 {
		switch {
		case step < 2:
			step = 2
		case step < 5:
			step = 5
		default:
			step *= 2
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: fmt.Sprintf("%.0f", v)})
	}
	return ticks
}

// rowPalette is the Okabe-Ito palette, told apart with the common forms of
// colour blindness, ordered so neighbouring rows contrast most; its yellow
// comes last, being faint on white.
var rowPalette = []color.Color{
	color.NRGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xff}, // blue
	color.NRGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xff}, // vermillion
	color.NRGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xff}, // bluish green
	color.NRGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xff}, // reddish purple
	color.NRGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xff}, // orange
	color.NRGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xff}, // sky blue
	color.NRGBA{R: 0x00, G: 0x00, B: 0x00, A: 0xff}, // black
	color.NRGBA{R: 0xF0, G: 0xE4, B: 0x42, A: 0xff}, // yellow
}

// rowStyle is row i's colour, marker and dashes. Markers and dashes cycle
// with other lengths than the colours, so rows past the eighth still differ
// in something, and lines that coincide stay visible through their dashes.
func rowStyle(i int) (color.Color, draw.GlyphDrawer, []vg.Length) {
	return rowPalette[i%len(rowPalette)], plotutil.Shape(i), plotutil.Dashes(i)
}

// minRewardSpan is the smallest reward range the y-axis shows, so a flat
// curve is not blown up into noise.
const minRewardSpan = 0.1

// rewardAxis is the y range for rewards between lo and hi: the data with a
// margin, at least minRewardSpan wide, kept within [0, 1] when the data is.
// A fixed 0-1 axis squeezed rows near zero into its bottom tenth.
func rewardAxis(lo, hi float64, inUnit bool) (float64, float64) {
	if span := hi - lo; span < minRewardSpan {
		mid := (lo + hi) / 2
		lo, hi = mid-minRewardSpan/2, mid+minRewardSpan/2
	}
	pad := (hi - lo) * 0.08
	lo, hi = lo-pad, hi+pad
	if inUnit {
		// Shift rather than clip, so the span stays as wide.
		if lo < 0 {
			lo, hi = 0, min(1, hi-lo)
		}
		if hi > 1 {
			lo, hi = max(0, lo-(hi-1)), 1
		}
	}
	return lo, hi
}

// translucent is c at roughly a quarter opacity, for interval bands.
func translucent(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 0x40}
}

// rewardPlot draws, per row, the mean over tasks of each iteration's scored
// rewards, with a band for its bootstrap interval over tasks. Iterations
// without a scored trial are left out rather than drawn as zeros. A
// triangle in the row's lane above the data marks each iteration from
// which a skill update was in effect; with no update in any row the title
// says so.
func rewardPlot(ctx context.Context, series []inspect.RowSeries) (figure, error) {
	f := newFigure("Reward per iteration (mean over tasks, 95% bootstrap band)", "iteration", "mean reward")
	f.p.X.Tick.Marker = wholeTicks{}
	curves := make([]rewardCurve, len(series))
	inUnit := true
	yLo, yHi := math.Inf(1), math.Inf(-1)
	for i, rs := range series {
		if err := ctx.Err(); err != nil {
			return figure{}, err
		}
		curves[i] = newRewardCurve(rs)
		for j := range curves[i].line {
			l, h, m := curves[i].lo[j].Y, curves[i].hi[j].Y, curves[i].line[j].Y
			inUnit = inUnit && l >= 0 && h <= 1
			yLo, yHi = min(yLo, l, m), max(yHi, h, m)
		}
	}
	nestCoinciding(curves)
	// Every band goes below every line, so no band veils another row.
	for i, c := range curves {
		if err := c.addBand(&f, series[i].Row, i); err != nil {
			return figure{}, err
		}
	}
	for i, c := range curves {
		if err := c.addLine(&f, series[i].Row, i); err != nil {
			return figure{}, err
		}
	}
	if yLo <= yHi {
		lo, hi := rewardAxis(yLo, yHi, inUnit)
		f.p.Y.Min, f.p.Y.Max = lo, hi
		if err := addUpdateMarks(&f, updateMarks(series)); err != nil {
			return figure{}, err
		}
	}
	if !anyUpdate(series) {
		f.p.Title.Text += "\n" + noUpdateNote
	}
	return f, nil
}

// noUpdateNote is said on the plots of a run or matrix in which no skill
// ever changed: their rows all ran with their initial skills.
const noUpdateNote = "No skill update in any row: every row ran with its initial skills."

func anyUpdate(series []inspect.RowSeries) bool {
	for _, rs := range series {
		for _, it := range rs.Iterations {
			if it.NewSkillUpdates > 0 {
				return true
			}
		}
	}
	return false
}

// rewardCurve is one row's mean reward per iteration and its band.
type rewardCurve struct {
	line, lo, hi plotter.XYs
	under        []int // per point, the earlier rows drawn at the same place
}

func newRewardCurve(rs inspect.RowSeries) rewardCurve {
	var c rewardCurve
	for _, it := range rs.Iterations {
		if len(it.Tasks) == 0 {
			continue
		}
		x := float64(it.Iteration)
		m := stats.MacroMeanOf(it.Tasks)
		l, h := stats.BootstrapMacroCIOf(it.Tasks, bandResamples, bandLevel, bandSeed)
		if math.IsNaN(m) || math.IsNaN(l) || math.IsNaN(h) {
			continue
		}
		c.line = append(c.line, plotter.XY{X: x, Y: m})
		c.lo = append(c.lo, plotter.XY{X: x, Y: l})
		c.hi = append(c.hi, plotter.XY{X: x, Y: h})
	}
	return c
}

// coincidentRadius is how much larger a row's marker is drawn for every
// earlier row that has the same mean in the same iteration: the hollow
// markers nest instead of hiding each other.
const coincidentRadius = 2.0

// nestCoinciding sets, for each point of each curve, how many earlier
// rows share it (same iteration, means within a thousandth of each other).
func nestCoinciding(curves []rewardCurve) {
	seen := map[float64][]float64{}
	for i := range curves {
		c := &curves[i]
		c.under = make([]int, len(c.line))
		for j, pt := range c.line {
			for _, y := range seen[pt.X] {
				if math.Abs(y-pt.Y) < 1e-3 {
					c.under[j]++
				}
			}
		}
		for _, pt := range c.line {
			seen[pt.X] = append(seen[pt.X], pt.Y)
		}
	}
}

// addBand draws the curve's interval band as row i.
func (c rewardCurve) addBand(f *figure, row string, i int) error {
	if len(c.line) == 0 {
		return nil
	}
	col, _, _ := rowStyle(i)
	// The band is the polygon along the lower bounds and back along the
	// upper ones.
	ring := append(plotter.XYs{}, c.lo...)
	for j := len(c.hi) - 1; j >= 0; j-- {
		ring = append(ring, c.hi[j])
	}
	band, err := plotter.NewPolygon(ring)
	if err != nil {
		return fmt.Errorf("band of row %s: %w", row, err)
	}
	band.Color = translucent(col)
	band.LineStyle.Width = 0
	f.p.Add(band)
	return nil
}

// addLine draws the curve's line and markers as row i; a marker shared
// with earlier rows is drawn larger around theirs.
func (c rewardCurve) addLine(f *figure, row string, i int) error {
	if len(c.line) == 0 {
		return nil
	}
	col, shape, dashes := rowStyle(i)
	l, pts, err := plotter.NewLinePoints(c.line)
	if err != nil {
		return fmt.Errorf("line of row %s: %w", row, err)
	}
	l.Color = col
	l.Width = vg.Points(1.5)
	l.Dashes = dashes
	pts.Color = col
	pts.Shape = shape
	pts.Radius = vg.Points(3.5)
	pts.GlyphStyleFunc = func(j int) draw.GlyphStyle {
		g := pts.GlyphStyle
		g.Radius += vg.Points(coincidentRadius * float64(c.under[j]))
		return g
	}
	f.p.Add(l, pts)
	f.legend.Add(row, l, pts)
	return nil
}

// updateMark is an iteration from which a row ran with a changed skill:
// the one after the iteration that committed the update.
type updateMark struct {
	row     int // index into the series
	from    int // first iteration the update was in effect
	updates int // distinct updates committed, summed over the row's runs
}

// updateMarks lists, per row, the iterations from which a skill update was
// in effect. An update committed in the last drawn iteration took effect
// in none and gets no mark.
func updateMarks(series []inspect.RowSeries) []updateMark {
	var marks []updateMark
	for i, rs := range series {
		drawn := map[int]bool{}
		for _, it := range rs.Iterations {
			if len(it.Tasks) > 0 {
				drawn[it.Iteration] = true
			}
		}
		for _, it := range rs.Iterations {
			if it.NewSkillUpdates > 0 && drawn[it.Iteration+1] {
				marks = append(marks, updateMark{row: i, from: it.Iteration + 1, updates: it.NewSkillUpdates})
			}
		}
	}
	return marks
}

// addUpdateMarks draws each mark as a triangle in its row's colour, in a
// lane of its own above the data (so marks of rows that coincide stay
// apart), with a dotted line down through the data at that iteration.
// The y-axis grows by the lanes; its ticks stay within the data's range.
func addUpdateMarks(f *figure, marks []updateMark) error {
	if len(marks) == 0 {
		return nil
	}
	lane := map[int]int{}
	for _, m := range marks {
		if _, ok := lane[m.row]; !ok {
			lane[m.row] = len(lane)
		}
	}
	lo, hi := f.p.Y.Min, f.p.Y.Max
	step := (hi - lo) * 0.06
	f.p.Y.Tick.Marker = ticksUpTo{hi}
	for _, m := range marks {
		col, _, _ := rowStyle(m.row)
		x, y := float64(m.from), hi+step*(float64(lane[m.row])+0.7)
		rule, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: y}})
		if err != nil {
			return fmt.Errorf("update mark: %w", err)
		}
		rule.Color, rule.Width, rule.Dashes = translucent(col), vg.Points(1), []vg.Length{vg.Points(1), vg.Points(3)}
		tri, err := plotter.NewScatter(plotter.XYs{{X: x, Y: y}})
		if err != nil {
			return fmt.Errorf("update mark: %w", err)
		}
		tri.Color, tri.Shape, tri.Radius = col, draw.TriangleGlyph{}, vg.Points(4.5)
		f.p.Add(rule, tri)
	}
	f.p.Y.Max = hi + step*(float64(len(lane))+0.3)
	// A mark on the last iteration would sit on the frame's edge.
	pad := max((f.p.X.Max-f.p.X.Min)*0.03, 0.1)
	f.p.X.Min, f.p.X.Max = f.p.X.Min-pad, f.p.X.Max+pad
	key, err := plotter.NewScatter(plotter.XYs{{}})
	if err != nil {
		return err
	}
	key.Color, key.Shape, key.Radius = color.Gray{Y: 0x60}, draw.TriangleGlyph{}, vg.Points(4.5)
	f.legend.Add("skill update in effect", key)
	return nil
}

// ticksUpTo labels the y-axis as usual but not above max, where the update
// lanes are rather than rewards.
type ticksUpTo struct{ max float64 }

func (t ticksUpTo) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, tk := range (plot.DefaultTicks{}).Ticks(lo, min(hi, t.max)) {
		if tk.Value <= t.max+1e-12 {
			out = append(out, tk)
		}
	}
	return out
}

// skillUpdatesPlot draws, per row, the cumulative number of distinct skill
// updates by iteration, averaged over the row's seeds.
func skillUpdatesPlot(_ context.Context, series []inspect.RowSeries) (figure, error) {
	f := newFigure("Cumulative skill updates (mean per seed)", "iteration", "skill updates")
	f.p.X.Tick.Marker = wholeTicks{}
	p := f.p
	for i, rs := range series {
		if len(rs.Iterations) == 0 {
			continue
		}
		runs := float64(max(rs.Runs, 1))
		xys := plotter.XYs{{X: 0, Y: 0}}
		total := 0
		for _, it := range rs.Iterations {
			total += it.NewSkillUpdates
			xys = append(xys, plotter.XY{X: float64(it.Iteration), Y: float64(total) / runs})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return figure{}, fmt.Errorf("row %s: %w", rs.Row, err)
		}
		l.StepStyle = plotter.PostStep
		l.Color, _, l.Dashes = rowStyle(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		f.legend.Add(rs.Row, l)
	}
	if !anyUpdate(series) {
		f.p.Title.Text += "\n" + noUpdateNote
	}
	// Counts start at zero; a run without updates still gets a 0..1 axis
	// rather than one centred on zero.
	p.Y.Min = 0
	p.Y.Max = max(p.Y.Max, 1)
	return f, nil
}

// tokensPlot draws one bar per row, stacked by role (input plus output
// tokens over all of the row's runs).
func tokensPlot(_ context.Context, series []inspect.RowSeries) (figure, error) {
	f := newFigure("Tokens by role", "", "tokens")
	p := f.p
	if len(series) == 0 {
		return f, nil
	}
	names := make([]string, len(series))
	for i, rs := range series {
		names[i] = rs.Row
	}
	width := vg.Points(float64(min(40, max(12, 360/len(series)))))
	var below *plotter.BarChart
	roles := series[0].Spend
	for r := range roles {
		vals := make(plotter.Values, len(series))
		for i, rs := range series {
			if r < len(rs.Spend) {
				vals[i] = float64(rs.Spend[r].InputTokens + rs.Spend[r].OutputTokens)
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return figure{}, fmt.Errorf("role %s: %w", roles[r].Role, err)
		}
		bars.Color = plotutil.Color(r)
		bars.LineStyle.Width = 0
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		p.Add(bars)
		f.legend.Add(roles[r].Role, bars)
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.Y.Min = 0
	p.Y.Max *= 1.05 // the tallest bar would otherwise touch the title
	return f, nil
}
