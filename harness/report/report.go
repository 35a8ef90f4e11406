// Package report turns a run or matrix directory into plots (PNG and SVG)
// and a one-page Markdown summary: reward per iteration per row with an
// interval band, cumulative skill updates per row, tokens by role per row,
// the comparison table of `harness inspect --compare` and the items routed
// between students.
package report

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
)

// DefaultOutSubdir is where Write puts its files, inside the directory it
// reports on, when no output directory is given.
const DefaultOutSubdir = rundir.ReportOutputDir

// File names Write produces in the output directory.
const (
	SummaryFile      = "summary.md"
	RewardPlot       = "reward"        // reward.png, reward.svg
	SkillUpdatesPlot = "skill_updates" // skill_updates.png, skill_updates.svg
	TokensPlot       = "tokens"        // tokens.png, tokens.svg
	// StudentRewardPlot is reward per iteration per student of each row,
	// written only when some row has more than one student.
	StudentRewardPlot = "reward_students" // reward_students.png, reward_students.svg
)

// Summary says what Write produced.
type Summary struct {
	Dir    string `json:"dir"`
	OutDir string `json:"out_dir"`
	// Markdown is the path of summary.md; Images the PNG and SVG files.
	Markdown   string              `json:"markdown"`
	Images     []string            `json:"images"`
	Comparison *inspect.Comparison `json:"comparison"`
	// Students compares each row's students ("<row>/<student>"), as
	// `harness inspect --compare --by student` does; nil when no row has
	// more than one student.
	Students *inspect.Comparison `json:"students,omitempty"`
	// Routing counts the items routed between students by row, sender
	// and receiver; empty when none was.
	Routing []inspect.RouteCount `json:"routing"`
}

// Write reads the run or matrix at dir and writes the plots and summary.md
// into outDir (dir/report when empty), each file atomically. The numbers
// are those of inspect.Compare with its defaults, so the summary and
// `harness inspect --compare` always agree.
func Write(ctx context.Context, dir, outDir string) (*Summary, error) {
	if outDir == "" {
		outDir = filepath.Join(dir, DefaultOutSubdir)
	}
	cmp, series, err := inspect.CompareAndSeries(dir, inspect.CompareOptions{})
	if err != nil {
		return nil, fmt.Errorf("report on %s: %w", dir, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	students, studentSeries, err := inspect.CompareAndSeries(dir, inspect.CompareOptions{By: inspect.ByStudent})
	if err != nil {
		return nil, fmt.Errorf("report on the students of %s: %w", dir, err)
	}
	if len(students.Rows) <= len(cmp.Rows) {
		// One student a row: the rows are the students.
		students, studentSeries = nil, nil
	}
	routed, err := inspect.Routing(dir)
	if err != nil {
		return nil, fmt.Errorf("report on the routing of %s: %w", dir, err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("create report directory %s: %w", outDir, err)
	}
	sum := &Summary{Dir: dir, OutDir: outDir, Markdown: filepath.Join(outDir, SummaryFile), Comparison: cmp, Students: students,
		Routing: inspect.CountRoutes(routed)}

	type plotSpec struct {
		name   string
		make   func(context.Context, []inspect.RowSeries) (figure, error)
		series []inspect.RowSeries
	}
	plots := []plotSpec{
		{RewardPlot, rewardPlot, series},
		{SkillUpdatesPlot, skillUpdatesPlot, series},
		{TokensPlot, tokensPlot, series},
	}
	if students != nil {
		plots = append(plots, plotSpec{StudentRewardPlot, rewardPlot, studentSeries})
	}
	for _, p := range plots {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fig, err := p.make(ctx, p.series)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", p.name, err)
		}
		for _, format := range []string{"png", "svg"} {
			path := filepath.Join(outDir, p.name+"."+format)
			if err := fig.save(path, format); err != nil {
				return nil, fmt.Errorf("write %s: %w", path, err)
			}
			sum.Images = append(sum.Images, path)
		}
	}

	err = durable.WriteFileFunc(sum.Markdown, 0o644, func(w io.Writer) error {
		return writeMarkdown(w, cmp, series, students, routed)
	})
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", sum.Markdown, err)
	}
	return sum, nil
}
