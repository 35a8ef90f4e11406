package view

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// The benchmarks read a synthetic matrix of 10 rows x 100 tasks x 100
// iterations: 100,000 metric rows in 1,000 Parquet parts, the size the
// viewer must stay fast on. It is written once per test binary.
const (
	benchRows, benchTasks, benchIterations = 10, 100, 100
	benchMatrix                            = "20260301T120000Z-1-big-matrix"
)

var (
	bigOnce sync.Once
	bigRoot string
	bigErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if bigRoot != "" {
		os.RemoveAll(bigRoot)
	}
	os.Exit(code)
}

func bigMatrix(b *testing.B) string {
	b.Helper()
	bigOnce.Do(func() {
		bigRoot, bigErr = os.MkdirTemp("", "view-bench-")
		if bigErr == nil {
			bigErr = writeBigMatrix(b, filepath.Join(bigRoot, benchMatrix))
		}
	})
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return bigRoot
}

func writeBigMatrix(b *testing.B, dir string) error {
	rows := make([]string, benchRows)
	for i := range rows {
		rows[i] = fmt.Sprintf("row%02d", i)
	}
	manifest(b, dir, rundir.Manifest{Kind: rundir.KindMatrix, Name: "big", Status: rundir.StatusCompleted, Rows: rows,
		Iterations: benchIterations, Seed: 1})
	for ri, row := range rows {
		rdir := filepath.Join(dir, row)
		manifest(b, rdir, rundir.Manifest{Kind: rundir.KindRun, Name: row, MatrixID: benchMatrix, Status: rundir.StatusCompleted,
			Iterations: benchIterations, CompletedIterations: benchIterations, Condition: "no_feedback", Policy: "none", Seed: 1})
		benchState(b, rdir)
		part := make([]rundir.MetricRow, benchTasks)
		for it := 1; it <= benchIterations; it++ {
			for ti := range part {
				task := fmt.Sprintf("task-%03d", ti)
				part[ti] = metricRow(row, "no_feedback", "none", task, it, float64((ti*7+it*3+ri)%5)/4)
			}
			if err := rundir.WriteMetricsPart(filepath.Join(rdir, rundir.MetricsDir), it, part); err != nil {
				return err
			}
		}
		trace(b, rdir, "task-000", 50, 0.5)
	}
	return nil
}

// benchState writes a checkpoint whose ledger has the three callers
// (planner, executor, mediator) of every trial, as a real run's does.
func benchState(b *testing.B, dir string) {
	callers := map[string]any{}
	calls := 0
	for it := 1; it <= benchIterations; it++ {
		for ti := range benchTasks {
			trial := fmt.Sprintf("i%04d-task-%03d", it, ti)
			for _, c := range []string{"planner/", "executor/student-1/", "mediator/"} {
				callers[c+trial] = map[string]any{"input_tokens": 1000, "output_tokens": 100, "cost_usd": 0.001, "cost_known": true, "calls": 1}
				calls++
			}
		}
	}
	// As the harness writes it: the per-caller map and its total.
	total := map[string]any{"input_tokens": 1000 * calls, "output_tokens": 100 * calls, "cost_usd": 0.001 * float64(calls), "cost_known": true, "calls": calls}
	mustJSON(b, filepath.Join(dir, rundir.StateFile), map[string]any{"version": 1, "ledger": map[string]any{"by_caller": callers, "total": total}})
}

// benchPage answers path with a fresh server each time when cold (nothing
// computed yet: what the first visit costs), or with one warmed server.
func benchPage(b *testing.B, path string, cold bool) {
	root := bigMatrix(b)
	newServer := func() http.Handler {
		s, err := New(root)
		if err != nil {
			b.Fatal(err)
		}
		return s.Handler()
	}
	h := newServer()
	serve := func(h http.Handler) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s = %d: %.300s", path, rec.Code, rec.Body.String())
		}
	}
	serve(h)
	b.ReportAllocs()
	b.ResetTimer()
	// CPU time is taken around the requests alone: on a shared machine
	// wall time also measures the neighbours.
	var cpu time.Duration
	for b.Loop() {
		if cold {
			b.StopTimer()
			h = newServer()
			b.StartTimer()
		}
		start := processCPU()
		serve(h)
		cpu += processCPU() - start
	}
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkPages100k(b *testing.B) {
	m := "/" + benchMatrix
	row := m + "/row03"
	for _, p := range []struct{ name, path string }{
		{"index", "/"},
		{"matrix", "/matrix" + m},
		{"tasks", "/tasks" + m},
		{"curves", "/curves" + m},
		{"run", "/run" + row},
		{"iteration", "/iteration" + row + "?i=50"},
		{"trial", "/trial" + row + "?task=task-000&i=50"},
	} {
		b.Run(p.name+"/cold", func(b *testing.B) { benchPage(b, p.path, true) })
		b.Run(p.name+"/warm", func(b *testing.B) { benchPage(b, p.path, false) })
	}
}
