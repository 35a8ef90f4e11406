package view

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/mediated-coevo/harness/harness/inspect"
)

// curveLine is one row's learning curve: the mean reward of each
// iteration (macro over tasks; iterations without a scored trial are left
// out, not drawn as zero) and the iterations from which skill updates were
// in effect.
type curveLine struct {
	Name    string
	Points  []point
	Updates []update
}

type point struct {
	X int
	Y float64
}

// update marks skill updates committed at the end of iteration Committed:
// they take effect in the next one.
type update struct {
	Committed, Count int
}

func runCurve(rv *inspect.RunView) template.HTML {
	line := curveLine{Name: rv.Name}
	if line.Name == "" {
		line.Name = rv.ID
	}
	for _, it := range rv.Iterations {
		if it.MeanReward != nil {
			line.Points = append(line.Points, point{it.Iteration, *it.MeanReward})
		}
		if it.SkillUpdates > 0 {
			line.Updates = append(line.Updates, update{it.Iteration, it.SkillUpdates})
		}
	}
	return drawCurves([]curveLine{line})
}

func seriesCurve(series []inspect.RowSeries) template.HTML {
	lines := make([]curveLine, 0, len(series))
	for _, rs := range series {
		line := curveLine{Name: rs.Row}
		for _, it := range rs.Iterations {
			if m, ok := macroMean(it); ok {
				line.Points = append(line.Points, point{it.Iteration, m})
			}
			if it.NewSkillUpdates > 0 {
				line.Updates = append(line.Updates, update{it.Iteration, it.NewSkillUpdates})
			}
		}
		lines = append(lines, line)
	}
	return drawCurves(lines)
}

// macroMean is the mean over tasks of each task's mean reward, the number
// every reward in the viewer is.
func macroMean(it inspect.IterationSeries) (float64, bool) {
	var sum float64
	n := 0
	for _, r := range it.Tasks {
		if r.N() > 0 {
			sum += r.Mean()
			n++
		}
	}
	return sum / float64(n), n > 0
}

// Colours and dash patterns that stay apart for colour-blind readers and
// when rows lie on top of each other (Okabe and Ito's palette).
var (
	palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}
	dashes  = []string{"", "6 3", "2 3", "8 3 2 3", "1 2", "10 4"}
)

const (
	plotW, plotH                   = 760, 320
	padL, padR, padT, padB         = 52, 190, 24, 40
	innerW, innerH                 = plotW - padL - padR, plotH - padT - padB
	maxPointMarkers                = 80
	minYSpan                       = 0.1
	xTicks, yTicks                 = 8, 5
	updateMarkerY          float64 = padT + 6
)

// drawCurves renders lines as one SVG: the y axis spans the data (not
// always 0 to 1), each row has its colour and dash, points are marked when
// there are few, and a triangle at the top marks where skill updates took
// effect.
func drawCurves(lines []curveLine) template.HTML {
	x0, x1, y0, y1, any := bounds(lines)
	if !any {
		return template.HTML(`<p class="note">No iteration has a scored trial yet: nothing to draw.</p>`)
	}
	sx := func(x int) float64 { return padL + float64(x-x0)/float64(x1-x0)*innerW }
	sy := func(y float64) float64 { return padT + (1-(y-y0)/(y1-y0))*innerH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="curve" viewBox="0 0 %d %d" role="img" aria-label="mean reward by iteration">`, plotW, plotH)
	axes(&b, x0, x1, y0, y1, sx, sy)
	for i, l := range lines {
		color, dash := palette[i%len(palette)], dashes[i%len(dashes)]
		var pts []string
		for _, p := range l.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(p.X), sy(p.Y)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="%s"><title>%s</title></polyline>`,
			color, dash, strings.Join(pts, " "), template.HTMLEscapeString(l.Name))
		if len(l.Points) <= maxPointMarkers {
			for _, p := range l.Points {
				marker(&b, i, sx(p.X), sy(p.Y), color, fmt.Sprintf("%s, iteration %d: %.3f", l.Name, p.X, p.Y))
			}
		}
		for _, u := range l.Updates {
			if u.Committed+1 > x1 {
				continue // takes effect after the last iteration drawn
			}
			x := sx(u.Committed + 1)
			y := updateMarkerY + float64(i%4)*5
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-opacity="0.35" stroke-dasharray="3 3"/>`,
				x, padT, x, padT+innerH, color)
			fmt.Fprintf(&b, `<path class="update" d="M%.1f %.1f l-5 -7 h10 z" fill="%s"><title>%s: %d skill update(s) committed in iteration %d, in effect from iteration %d</title></path>`,
				x, y, color, template.HTMLEscapeString(l.Name), u.Count, u.Committed, u.Committed+1)
		}
		ly := padT + 14 + float64(i)*18
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`,
			plotW-padR+14, ly, plotW-padR+40, ly, color, dash)
		marker(&b, i, float64(plotW-padR+27), ly, color, l.Name)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="legend">%s</text>`, plotW-padR+46, ly+4, template.HTMLEscapeString(l.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// bounds finds the iterations and the reward range to draw; the reward
// axis covers the data with a margin, at least minYSpan, within [0, 1].
func bounds(lines []curveLine) (x0, x1 int, y0, y1 float64, any bool) {
	x0, x1, y0, y1 = math.MaxInt, math.MinInt, math.Inf(1), math.Inf(-1)
	for _, l := range lines {
		for _, p := range l.Points {
			x0, x1 = min(x0, p.X), max(x1, p.X)
			y0, y1 = math.Min(y0, p.Y), math.Max(y1, p.Y)
			any = true
		}
	}
	if !any {
		return
	}
	if x1 == x0 {
		x0, x1 = x0-1, x1+1
	}
	pad := math.Max((y1-y0)*0.1, 0.02)
	y0, y1 = y0-pad, y1+pad
	if span := y1 - y0; span < minYSpan {
		y0, y1 = y0-(minYSpan-span)/2, y1+(minYSpan-span)/2
	}
	if y0 < 0 {
		y1, y0 = math.Min(1, y1-y0), 0
	}
	if y1 > 1 {
		y0, y1 = math.Max(0, y0-(y1-1)), 1
	}
	return
}

func axes(b *strings.Builder, x0, x1 int, y0, y1 float64, sx func(int) float64, sy func(float64) float64) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" class="frame"/>`, padL, padT, innerW, innerH)
	for i := 0; i <= yTicks; i++ {
		v := y0 + (y1-y0)*float64(i)/yTicks
		y := sy(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" class="grid"/><text x="%d" y="%.1f" class="tick" text-anchor="end">%.2f</text>`,
			padL, y, padL+innerW, y, padL-6, y+4, v)
	}
	step := max(1, (x1-x0+xTicks-1)/xTicks)
	for x := x0; x <= x1; x += step {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" class="tick" text-anchor="middle">%d</text>`, sx(x), padT+innerH+16, x)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" class="axis" text-anchor="middle">iteration</text>`, padL+innerW/2, plotH-6)
	fmt.Fprintf(b, `<text x="14" y="%d" class="axis" text-anchor="middle" transform="rotate(-90 14 %d)">mean reward</text>`,
		padT+innerH/2, padT+innerH/2)
}

// marker draws the i-th row's point shape: circle, square, diamond, then
// triangle, so rows differ in more than colour.
func marker(b *strings.Builder, i int, x, y float64, color, title string) {
	t := template.HTMLEscapeString(title)
	switch i % 4 {
	case 0:
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s</title></circle>`, x, y, color, t)
	case 1:
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="7" height="7" fill="%s"><title>%s</title></rect>`, x-3.5, y-3.5, color, t)
	case 2:
		fmt.Fprintf(b, `<path d="M%.1f %.1f l4 4 l-4 4 l-4 -4 z" fill="%s"><title>%s</title></path>`, x, y-4, color, t)
	default:
		fmt.Fprintf(b, `<path d="M%.1f %.1f l4 7 h-8 z" fill="%s"><title>%s</title></path>`, x, y-4, color, t)
	}
}
