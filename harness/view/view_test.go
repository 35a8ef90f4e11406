package view

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newTestServer(t *testing.T) (*Server, string) {
	t.Helper()
	root := t.TempDir()
	writeFixture(t, root)
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	return s, root
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestPagesShowTheirContent(t *testing.T) {
	s, _ := newTestServer(t)
	h := s.Handler()
	m := "/" + fixtureMatrix
	row := m + "/" + fixtureRow
	tests := []struct {
		name, path string
		want       []string
	}{
		{"index lists the matrix", "/", []string{fixtureMatrix, "matrix", "completed", "6/6" /* iterations summed over rows */, ">18<" /* trials */, ">1<" /* env failures */, "2400", "$1.0000"}},
		{"matrix compares rows to the baseline", "/matrix" + m, []string{"Baseline <b>no_feedback</b>", fixtureRow, "diff vs baseline", "interval", "per-task table", "whole_curve", "p (Holm)"}},
		{"per-task table has every task and row", "/tasks" + m, []string{"csv-parser", "log-analysis", "orbital-period", "no_feedback mean",
			fixtureRow + " trials", `class="sortable"`, "env_failure 1", "agent_error 1", "0.167" /* no_feedback log-analysis */}},
		{"curves draw one line per row and the update", "/curves" + m, []string{"<svg", "<polyline", "no_feedback", "in effect from iteration 2"}},
		{"run page", "/run" + row, []string{"learned_mediator", "executor/b001", "advisor_gate", "<svg", "executor skill",
			"Tournaments", "b001c2", "combine", "too few validated candidates", "about 2 saved"}},
		{"iteration lists its trials", "/iteration" + row + "?i=2", []string{"csv-parser", "scored", "given"}},
		{"trial shows the whole trial", "/trial" + row + "?task=csv-parser&i=2", []string{
			"# Parse a pipe-separated inventory format",          // instruction
			"Write parse_psv.py and run it.",                     // plan
			"run_command",                                        // a tool call
			"python3 /app/parse_psv.py",                          // the command
			"tool_error",                                         // an error
			"explore subagent, dispatch 1",                       // a nested subagent
			"list_dir",                                           // its tool call
			"The input is /app/data/inventory.psv.",              // what it returned
			"records match", "AssertionError: 3 records, want 4", // verifier
			"Check quoted fields before writing the output.", // the report
			"build 2s", // timings
		}},
		{"skill timeline diffs versions", "/skill" + row + "?role=executor", []string{
			"Version 1: executor/b001", `class="add">&#43; Always run the tests before submitting.`, "the Advisor and the validation gate (batch b001)",
			"accepted", "Tell the Executor to run the tests before it submits.", "p_better",
		}},
		{"a skill that never changed shows its one version", "/skill/" + fixtureMatrix + "/no_feedback?role=executor", []string{"Version 0", "Keep changes small."}},
		{"calls by role", "/calls" + row + "?role=mediator", []string{"planner", "mediator", "endpoint said 503", "offline-mediator"}},
		{"assets are embedded", "/static/sort.js", []string{"sortable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, h, tc.path)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d, want 200: %s", tc.path, code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s lacks %q", tc.path, w)
				}
			}
		})
	}
}

// A trial that never ran has NULL test counts and timings: the page shows
// dashes, not Go's <nil>.
func TestIterationPageShowsNullColumnsAsDashes(t *testing.T) {
	s, _ := newTestServer(t)
	path := "/iteration/" + fixtureMatrix + "/" + fixtureRow + "?i=1"
	code, body := get(t, s.Handler(), path)
	if code != http.StatusOK {
		t.Fatalf("GET %s = %d, want 200: %s", path, code, body)
	}
	if strings.Contains(body, "nil") || !strings.Contains(body, "agent_error") || !strings.Contains(body, "–/–") ||
		!strings.Contains(body, "2/4") {
		t.Errorf("GET %s: want the agent_error trial with –/– tests and the others with 2/4, no nil:\n%s", path, body)
	}
}

func TestUnknownAndOutsidePathsAreNotFound(t *testing.T) {
	s, root := newTestServer(t)
	outside := t.TempDir()
	writeFixture(t, outside)
	if err := os.Symlink(filepath.Join(outside, fixtureMatrix), filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	row := "/" + fixtureMatrix + "/" + fixtureRow
	for _, path := range []string{
		"/nope",
		"/run/no-such-run",
		"/run/%2e%2e/%2e%2e/etc",
		"/run/..%2f..%2fetc",
		"/matrix/escape",
		"/trial" + row + "?task=..%2f..%2frun.json&i=1",
		"/trial" + row + "?task=csv-parser&i=99",
		"/trial" + row + "?task=csv-parser&i=x",
		"/iteration" + row + "?i=42",
		"/skill" + row + "?role=../../x",
		"/calls/" + fixtureMatrix,
		"/static/..%2fview.go",
	} {
		code, body := get(t, h, path)
		if code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404: %.200s", path, code, body)
		}
	}
}

func TestKindRedirects(t *testing.T) {
	s, _ := newTestServer(t)
	h := s.Handler()
	for path, want := range map[string]string{
		"/run/" + fixtureMatrix:                       "/matrix/" + fixtureMatrix,
		"/matrix/" + fixtureMatrix + "/" + fixtureRow: "/run/" + fixtureMatrix + "/" + fixtureRow,
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusFound || rec.Header().Get("Location") != want {
			t.Errorf("GET %s = %d to %q, want a redirect to %s", path, rec.Code, rec.Header().Get("Location"), want)
		}
	}
}

func TestRunningRunRefreshes(t *testing.T) {
	root := t.TempDir()
	mdir := writeFixture(t, root)
	row := filepath.Join(mdir, fixtureRow)
	data, err := os.ReadFile(filepath.Join(row, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(row, "run.json"), []byte(strings.Replace(string(data), `"completed"`, `"running"`, 1)))
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		"/run/" + fixtureMatrix + "/" + fixtureRow: true,
		"/matrix/" + fixtureMatrix:                 false,
		"/run/" + fixtureMatrix + "/no_feedback":   false,
	} {
		_, body := get(t, s.Handler(), path)
		if got := strings.Contains(body, `http-equiv="refresh"`); got != want {
			t.Errorf("GET %s refreshes = %v, want %v", path, got, want)
		}
	}
}

func TestCacheSeesNewMetrics(t *testing.T) {
	s, root := newTestServer(t)
	h := s.Handler()
	path := "/tasks/" + fixtureMatrix
	if _, body := get(t, h, path); strings.Contains(body, "fresh-task") {
		t.Fatal("the fixture already has fresh-task")
	}
	dir := filepath.Join(root, fixtureMatrix, "no_feedback", "metrics")
	row := metricRow("no_feedback", "no_feedback", "none", "fresh-task", 4, 1)
	if err := writePart(dir, 4, row); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, h, path); !strings.Contains(body, "fresh-task") {
		t.Error("a new metrics part is not shown: the cache kept a stale table")
	}
}

func TestServeStopsWhenCancelled(t *testing.T) {
	s, _ := newTestServer(t)
	ln, err := Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(URL(ln), "http://127.0.0.1:") {
		t.Errorf("URL = %s, want 127.0.0.1", URL(ln))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	resp, err := http.Get(URL(ln))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), fixtureMatrix) {
		t.Errorf("GET / = %d, want the index", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve = %v after cancel, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its context was cancelled")
	}
}

func TestNewAndListenRefuseBadInput(t *testing.T) {
	if _, err := New(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("New(missing) = %v, want an error saying it does not exist", err)
	}
	if _, err := Listen(70000); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("Listen(70000) = %v, want out of range", err)
	}
}
