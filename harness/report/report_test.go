package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func reward(v float64) *float64 { return &v }

// writeRow writes one run directory: tasks a, b, c over three iterations
// with rewards from fn, an env failure on b in iteration 2, spend on every
// row and one skill update in iteration 2.
func writeRow(t *testing.T, dir, row, condition string, fn func(task string, it int) float64) {
	t.Helper()
	writeJSON(t, filepath.Join(dir, rundir.ManifestFile), rundir.Manifest{ID: filepath.Base(dir), Kind: rundir.KindRun,
		Status: rundir.StatusCompleted, Condition: condition, Tasks: []string{"a", "b", "c"}, Iterations: 3, CompletedIterations: 3})
	for it := 1; it <= 3; it++ {
		var rows []rundir.MetricRow
		for _, task := range []string{"a", "b", "c"} {
			r := rundir.MetricRow{RunID: filepath.Base(dir), Row: row, Condition: condition, Seed: 42, Iteration: int32(it),
				TaskID: task, Status: "scored", Reward: reward(fn(task, it)),
				PlannerInputTokens: 1000, PlannerOutputTokens: 100, ExecutorInputTokens: 5000, ExecutorOutputTokens: 700,
				MediatorInputTokens: 300, CoevoInputTokens: 50}
			if task == "b" && it == 2 {
				r.Status, r.Reward, r.EnvFailure = "env_failure", nil, true
			}
			rows = append(rows, r)
		}
		if err := rundir.WriteMetricsPart(filepath.Join(dir, "metrics"), it, rows); err != nil {
			t.Fatal(err)
		}
		if it == 2 && condition != "no_feedback" {
			u := rundir.UpdateRow{RunID: filepath.Base(dir), Row: row, Seed: 42, Iteration: int32(it), Role: "executor",
				ProvenanceID: "executor/b-1", OldHash: "x", NewHash: "y"}
			if err := rundir.WriteUpdatesPart(filepath.Join(dir, "metrics"), it, []rundir.UpdateRow{u}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func matrixFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "20250301T120000Z-42-report-matrix")
	writeJSON(t, filepath.Join(dir, rundir.ManifestFile), rundir.Manifest{ID: filepath.Base(dir), Kind: rundir.KindMatrix,
		Status: rundir.StatusCompleted, Rows: []string{"no_feedback", "full_coevolution"}, Iterations: 3})
	writeRow(t, filepath.Join(dir, "no_feedback"), "no_feedback", "no_feedback", func(task string, it int) float64 {
		if task == "a" {
			return 1
		}
		return 0
	})
	writeRow(t, filepath.Join(dir, "full_coevolution"), "full_coevolution", "learned_mediator", func(task string, it int) float64 {
		if task == "c" && it < 3 {
			return 0
		}
		return 1
	})
	return dir
}

func TestWriteProducesPlotsAndSummary(t *testing.T) {
	dir := matrixFixture(t)
	out := filepath.Join(t.TempDir(), "out")
	sum, err := Write(context.Background(), dir, out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.OutDir != out || sum.Markdown != filepath.Join(out, SummaryFile) || len(sum.Images) != 6 {
		t.Errorf("summary = %+v", sum)
	}
	for _, name := range []string{RewardPlot, SkillUpdatesPlot, TokensPlot} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join(out, name+".png"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("%s.png does not decode: %v", name, err)
			}
			if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
				t.Errorf("%s.png is %v", name, b)
			}

			data, err := os.ReadFile(filepath.Join(out, name+".svg"))
			if err != nil {
				t.Fatal(err)
			}
			dec := xml.NewDecoder(bytes.NewReader(data))
			root := ""
			for {
				tok, err := dec.Token()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s.svg is not well-formed XML: %v", name, err)
				}
				if se, ok := tok.(xml.StartElement); ok && root == "" {
					root = se.Name.Local
				}
			}
			if root != "svg" {
				t.Errorf("%s.svg root element = %q", name, root)
			}
		})
	}

	md, err := os.ReadFile(sum.Markdown)
	if err != nil {
		t.Fatal(err)
	}
	// no_feedback: a 1, b 0, c 0 -> 1/3; full_coevolution: a 1, b 1,
	// c (0, 0, 1) -> (1 + 1 + 1/3)/3 = 0.778; paired diff (0 + 1 + 1/3)/3.
	for _, want := range []string{
		"# Report: 20250301T120000Z-42-report-matrix",
		"| `no_feedback` | 42 | 3 | 8 | 1 | 0 | 0.333 |",
		"| `full_coevolution` | 42 | 3 | 8 | 1 | 0 | 0.778 |",
		"| pass@3 | pass^3 |",
		"| 0.444 |",
		"against `no_feedback` (no_feedback row)",
		"![Reward per iteration](reward.svg)",
		"[PNG](reward.png)",
		"[PNG](skill_updates.png)",
		"[PNG](tokens.png)",
		"| `full_coevolution` | executor | 45000 | 6300 | 0.00 |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
}

// Trials without a reward that were not environment failures (an agent
// error here) have their own column and a warning in summary.md.
func TestWriteShowsUnscoredTrials(t *testing.T) {
	dir := matrixFixture(t)
	row := filepath.Join(dir, "full_coevolution")
	err := rundir.WriteMetricsPart(filepath.Join(row, "metrics"), 4, []rundir.MetricRow{{RunID: "full_coevolution",
		Row: "full_coevolution", Condition: "learned_mediator", Seed: 42, Iteration: 4, TaskID: "a", Status: "agent_error"}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Write(context.Background(), dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(sum.Markdown)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		want    string
		present bool
	}{
		{"| row | seeds | tasks | scored | env failures | unscored | mean reward |", true},
		// The agent error is counted and left out of the mean (still 0.778).
		{"| `full_coevolution` | 42 | 3 | 8 | 1 | 1 | 0.778 |", true},
		{"| `no_feedback` | 42 | 3 | 8 | 1 | 0 | 0.333 |", true},
		{"- `full_coevolution`: unscored trials (agent errors, verifier errors) left out of the means: 1", true},
		{"- `no_feedback`: unscored trials", false},
	}
	for _, tc := range tests {
		if strings.Contains(string(md), tc.want) != tc.present {
			t.Errorf("summary.md contains %q: %v, want %v:\n%s", tc.want, !tc.present, tc.present, md)
		}
	}
}

func TestWriteDefaultsIntoTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "20250301T120000Z-1-no_feedback")
	writeRow(t, dir, "no_feedback", "no_feedback", func(string, int) float64 { return 0.5 })
	sum, err := Write(context.Background(), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, DefaultOutSubdir); sum.OutDir != want {
		t.Errorf("out dir = %s, want %s", sum.OutDir, want)
	}
	if _, err := os.Stat(filepath.Join(dir, DefaultOutSubdir, "reward.svg")); err != nil {
		t.Error(err)
	}
}

func TestWriteErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Write(ctx, matrixFixture(t), t.TempDir()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
	if _, err := Write(context.Background(), filepath.Join(t.TempDir(), "nope"), t.TempDir()); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing dir: err = %v", err)
	}
}

func TestWriteEmptyRun(t *testing.T) {
	// A run that has not finished an iteration yet still gets a report.
	dir := filepath.Join(t.TempDir(), "r")
	writeJSON(t, filepath.Join(dir, rundir.ManifestFile), rundir.Manifest{ID: "r", Kind: rundir.KindRun, Status: rundir.StatusRunning})
	sum, err := Write(context.Background(), dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(sum.Markdown)
	if !strings.Contains(string(md), "No metric rows yet.") {
		t.Errorf("summary.md:\n%s", md)
	}
}

func TestWholeTicks(t *testing.T) {
	tests := []struct {
		min, max float64
		want     []float64
	}{
		{1, 2, []float64{1, 2}},
		{0.5, 3.5, []float64{1, 2, 3}},
		{1, 10, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{1, 30, []float64{5, 10, 15, 20, 25, 30}},
		{1, 200, []float64{20, 40, 60, 80, 100, 120, 140, 160, 180, 200}},
		{1.2, 1.8, nil},
	}
	for _, tt := range tests {
		var got []float64
		for _, tick := range (wholeTicks{}).Ticks(tt.min, tt.max) {
			if tick.Label != fmt.Sprintf("%.0f", tick.Value) {
				t.Errorf("tick %v labelled %q", tick.Value, tick.Label)
			}
			got = append(got, tick.Value)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Ticks(%v, %v) = %v, want %v", tt.min, tt.max, got, tt.want)
		}
	}
}
