package view

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// writeStudentsRun writes a run of two students rotating over two tasks
// for two iterations: strong scores 1, weak 0.
func writeStudentsRun(t *testing.T, root string) string {
	t.Helper()
	name := "20250301T120000Z-7-students-run"
	dir := filepath.Join(root, name)
	manifest(t, dir, rundir.Manifest{Kind: rundir.KindRun, Name: "mixed", Status: rundir.StatusCompleted, Tasks: []string{"a", "b"},
		Iterations: 2, CompletedIterations: 2, Condition: "no_feedback", Policy: "none", Lab: "default", Agent: "lab", Seed: 7})
	students := []string{"strong", "weak"}
	for it := 1; it <= 2; it++ {
		var part []rundir.MetricRow
		for ti, task := range []string{"a", "b"} {
			st := students[(ti+it-1)%2]
			reward := 0.0
			if st == "strong" {
				reward = 1
			}
			r := metricRow("mixed", "no_feedback", "none", task, it, reward)
			r.RunID, r.MatrixID, r.Student, r.StudentModel = name, nil, st, new("model-"+st)
			part = append(part, r)
		}
		if err := rundir.WriteMetricsPart(filepath.Join(dir, rundir.MetricsDir), it, part); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// The curves of a run with several students can be drawn per student, and
// an iteration's trials name their student and filter by one; rows of a
// single student offer no per-student view.
func TestViewShowsStudents(t *testing.T) {
	s, root := newTestServer(t)
	run := writeStudentsRun(t, root)
	h := s.Handler()
	tests := []struct {
		name, path string
		want, not  []string
	}{
		{"curves offer students", "/curves/" + run, []string{"per student", "by=student"}, nil},
		{"curves per student", "/curves/" + run + "?by=student", []string{"mixed/strong", "mixed/weak", "<polyline"}, nil},
		{"one student a row: no student curves", "/curves/" + fixtureMatrix + "?by=student", []string{"no_feedback"}, []string{"per student", "/student-1"}},
		{"iteration names students", "/iteration/" + run + "?i=1", []string{"strong", "weak", "model-weak", "student=weak"}, nil},
		{"iteration keeps one student", "/iteration/" + run + "?i=1&student=weak", []string{"model-weak", ">b</a>"}, []string{">a</a>"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, h, tc.path)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d: %s", tc.path, code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s lacks %q", tc.path, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(body, w) {
					t.Errorf("GET %s has %q", tc.path, w)
				}
			}
		})
	}
	if code, body := get(t, h, fmt.Sprintf("/curves/%s?by=model", run)); code != http.StatusNotFound || !strings.Contains(body, "by row or student") {
		t.Errorf("?by=model: %d %s, want 404 naming the choices", code, body)
	}
}
