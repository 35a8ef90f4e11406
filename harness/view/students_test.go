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

// writeAllStudentsRun writes one iteration of a run whose two students
// both attempted task a (assignment = "all"), each trial with its own
// trace and report under its student's key.
func writeAllStudentsRun(t *testing.T, root string) string {
	t.Helper()
	name := "20250301T120000Z-7-all-students-run"
	dir := filepath.Join(root, name)
	manifest(t, dir, rundir.Manifest{Kind: rundir.KindRun, Name: "all", Status: rundir.StatusCompleted, Tasks: []string{"a"},
		Iterations: 1, CompletedIterations: 1, Condition: "learned_mediator", Policy: "none", Lab: "default", Agent: "lab", Seed: 7})
	var part []rundir.MetricRow
	for _, st := range []string{"strong", "weak"} {
		id := rundir.StudentTrialID(1, "a", st)
		r := metricRow("all", "learned_mediator", "none", "a", 1, 1)
		r.RunID, r.MatrixID, r.Student, r.TrialID = name, nil, st, id
		part = append(part, r)
		key := rundir.StudentTrialKey("a", st)
		mustJSON(t, filepath.Join(dir, rundir.TracePath(key, 1)), map[string]any{"task_id": "a", "iteration": 1, "trial_id": id,
			"agent": "lab", "status": "scored", "reward": 1})
		mustJSON(t, filepath.Join(dir, rundir.ReportPath(key, 1)), map[string]any{"task_id": "a", "iteration": 1, "trial_id": id,
			"content": "REPORT-FOR-" + st})
	}
	if err := rundir.WriteMetricsPart(filepath.Join(dir, rundir.MetricsDir), 1, part); err != nil {
		t.Fatal(err)
	}
	return name
}

// When several students attempted a task in one iteration, the iteration
// page links each student's trial, and each trial page shows that
// student's trial and report alone.
func TestViewReachesEachStudentsTrial(t *testing.T) {
	s, root := newTestServer(t)
	run := writeAllStudentsRun(t, root)
	h := s.Handler()
	tests := []struct {
		name, path string
		code       int
		want, not  []string
	}{
		{"iteration links each student's trial", "/iteration/" + run + "?i=1", http.StatusOK,
			[]string{"i=1&amp;student=strong&amp;task=a", "i=1&amp;student=weak&amp;task=a"}, nil},
		{"strong's trial", "/trial/" + run + "?task=a&i=1&student=strong", http.StatusOK,
			[]string{"i0001-a@strong", "REPORT-FOR-strong"}, []string{"REPORT-FOR-weak"}},
		{"weak's trial", "/trial/" + run + "?task=a&i=1&student=weak", http.StatusOK,
			[]string{"i0001-a@weak", "REPORT-FOR-weak"}, []string{"REPORT-FOR-strong"}},
		{"the task alone names no trial", "/trial/" + run + "?task=a&i=1", http.StatusNotFound, []string{"no trace of task a in iteration 1"}, nil},
		{"an unknown student", "/trial/" + run + "?task=a&i=1&student=nobody", http.StatusNotFound,
			[]string{"no trace of task a by student nobody"}, nil},
		{"a student id that leaves the run", "/trial/" + run + "?task=a&i=1&student=..%2f..", http.StatusNotFound,
			[]string{"is not a student id"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, h, tc.path)
			if code != tc.code {
				t.Fatalf("GET %s = %d, want %d: %s", tc.path, code, tc.code, body)
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
}
