package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// studentsFixture is a run of two students rotating over tasks a and b for
// four iterations; strong scores 1, weak 0.
func studentsFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "20250301T120000Z-42-full_coevolution-run")
	writeJSON(t, filepath.Join(dir, rundir.ManifestFile), rundir.Manifest{ID: filepath.Base(dir), Kind: rundir.KindRun,
		Status: rundir.StatusCompleted, Condition: "learned_mediator", Tasks: []string{"a", "b"}, Iterations: 4, CompletedIterations: 4})
	students := []string{"strong", "weak"}
	for it := 1; it <= 4; it++ {
		var rows []rundir.MetricRow
		for ti, task := range []string{"a", "b"} {
			st := students[(ti+it-1)%2]
			r := 0.0
			if st == "strong" {
				r = 1
			}
			rows = append(rows, rundir.MetricRow{RunID: filepath.Base(dir), Row: "full_coevolution", Condition: "learned_mediator", Seed: 42,
				Iteration: int32(it), TaskID: task, TrialID: fmt.Sprintf("i%04d-%s", it, task), Status: "scored", Reward: reward(r), Student: st})
		}
		if err := rundir.WriteMetricsPart(filepath.Join(dir, "metrics"), it, rows); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A report on rows with several students adds their table, with
// intervals, and a reward curve per student; rows of one student get
// neither.
func TestReportShowsStudents(t *testing.T) {
	tests := []struct {
		name string
		dir  string
		want bool
	}{
		{"two students", studentsFixture(t), true},
		{"one student a row", matrixFixture(t), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			sum, err := Write(context.Background(), tc.dir, out)
			if err != nil {
				t.Fatal(err)
			}
			md, err := os.ReadFile(sum.Markdown)
			if err != nil {
				t.Fatal(err)
			}
			_, plotErr := os.Stat(filepath.Join(out, StudentRewardPlot+".svg"))
			has := strings.Contains(string(md), "## Students")
			if has != tc.want || (plotErr == nil) != tc.want || (sum.Students != nil) != tc.want {
				t.Fatalf("students section %v, plot %v, comparison %v; want %v\n%s", has, plotErr == nil, sum.Students != nil, tc.want, md)
			}
			if !tc.want {
				return
			}
			if len(sum.Students.Rows) != 2 {
				t.Fatalf("student rows %+v, want strong and weak", sum.Students.Rows)
			}
			for _, r := range sum.Students.Rows {
				line := fmt.Sprintf("| `%s` |", r.Row)
				if !strings.Contains(string(md), line) || r.CILow == nil {
					t.Errorf("summary lacks the row of %s with its interval\n%s", r.Row, md)
				}
			}
			if !strings.Contains(string(md), "`full_coevolution/strong`") || !strings.Contains(string(md), "`full_coevolution/weak`") {
				t.Errorf("summary does not name both students\n%s", md)
			}
		})
	}
}
