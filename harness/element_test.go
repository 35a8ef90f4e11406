package harness

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// A launcher opens the matrix and holds its lock; each element then runs
// its one row beside it, locking only that row, and leaves the matrix's
// own run.json to the launcher.
func TestElementsRunOneRowEachBesideTheLauncher(t *testing.T) {
	cfg := testConfig(t, nil)
	o := PlanOptions{Tasks: []string{"a"}, Rows: BaselineRows()[:1], Iterations: 1, Seeds: []int64{1, 2}, Concurrency: 1, OutDir: t.TempDir()}
	launcher, _ := testMatrix(t, cfg, o, false)
	md, refused, err := launcher.openMatrix()
	if err != nil || refused != nil {
		t.Fatalf("open matrix: %v, %+v", err, refused)
	}
	defer md.Unlock()
	manifest := readFile(t, filepath.Join(md.Path, rundir.ManifestFile))
	for _, row := range []string{"no_feedback-seed2", "no_feedback-seed1"} {
		ex, ft := testMatrix(t, cfg, PlanOptions{Resume: md.Path, OnlyRow: row, Concurrency: 1}, false)
		out, err := ex.matrix(context.Background())
		if err != nil || out.Err != nil {
			t.Fatalf("element %s: %v, %+v", row, err, out)
		}
		if len(out.Rows) != 1 || out.Rows[0].Name != row || out.Rows[0].Status != rundir.StatusCompleted || len(ft.specs) != 1 {
			t.Errorf("element %s ran %+v with %d trials, want its row alone, completed, with 1 trial", row, out.Rows, len(ft.specs))
		}
		if seed := ex.opts.Plan.Config().Experiment.Seed; seed != 1 {
			t.Errorf("element %s runs under the matrix seed %d, want the matrix's first seed 1 (its fingerprint)", row, seed)
		}
	}
	if got := readFile(t, filepath.Join(md.Path, rundir.ManifestFile)); !bytes.Equal(got, manifest) {
		t.Errorf("an element rewrote the matrix run.json:\n%s", got)
	}
}

// An element given a seed runs every row of that seed, side by side, and
// no other; the matrix's run.json stays the launcher's.
func TestElementsRunTheRowsOfOneSeed(t *testing.T) {
	cfg := testConfig(t, nil)
	o := PlanOptions{Tasks: []string{"a"}, Rows: BaselineRows()[:2], Iterations: 1, Seeds: []int64{1, 2}, Concurrency: 1, OutDir: t.TempDir()}
	launcher, _ := testMatrix(t, cfg, o, false)
	md, refused, err := launcher.openMatrix()
	if err != nil || refused != nil {
		t.Fatalf("open matrix: %v, %+v", err, refused)
	}
	defer md.Unlock()
	manifest := readFile(t, filepath.Join(md.Path, rundir.ManifestFile))
	for _, seed := range []int64{2, 1} {
		ex, ft := testMatrix(t, cfg, PlanOptions{Resume: md.Path, OnlySeed: &seed, Concurrency: 1}, false)
		out, err := ex.matrix(context.Background())
		if err != nil || out.Err != nil {
			t.Fatalf("element of seed %d: %v, %+v", seed, err, out)
		}
		var names []string
		for _, r := range out.Rows {
			names = append(names, r.Name)
			if r.Status != rundir.StatusCompleted {
				t.Errorf("seed %d: row %s %s, want completed", seed, r.Name, r.Status)
			}
		}
		want := []string{fmt.Sprintf("no_feedback-seed%d", seed), fmt.Sprintf("full_trace_same_task-seed%d", seed)}
		if !slices.Equal(names, want) || len(ft.specs) != 2 {
			t.Errorf("element of seed %d ran rows %v with %d trials, want %v with 2", seed, names, len(ft.specs), want)
		}
	}
	if got := readFile(t, filepath.Join(md.Path, rundir.ManifestFile)); !bytes.Equal(got, manifest) {
		t.Errorf("an element rewrote the matrix run.json:\n%s", got)
	}
}

func TestOnlyRowPlanErrors(t *testing.T) {
	cfg := testConfig(t, nil)
	base := PlanOptions{Tasks: []string{"a"}, Rows: BaselineRows()[:1], Iterations: 1, Seeds: []int64{1, 2}, Concurrency: 1, OutDir: t.TempDir(),
		Agent: AgentNop, Offline: true}
	p, err := BuildMatrixPlan(cfg, base)
	if err != nil {
		t.Fatal(err)
	}
	md, _, err := OpenMatrix(ExecOptions{Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	md.Unlock()
	seed1, seed3 := int64(1), int64(3)
	tests := []struct {
		name string
		o    PlanOptions
		want string
	}{
		{"without resume", PlanOptions{Tasks: []string{"a"}, OnlyRow: "no_feedback-seed1", OutDir: t.TempDir()}, "--resume DIR"},
		{"unknown row", PlanOptions{Resume: md.Path, OnlyRow: "no_feedback"}, "its rows are no_feedback-seed1, no_feedback-seed2"},
		{"seed without resume", PlanOptions{Tasks: []string{"a"}, OnlySeed: &seed1, OutDir: t.TempDir()}, "--resume DIR"},
		{"unknown seed", PlanOptions{Resume: md.Path, OnlySeed: &seed3}, "its seeds are [1 2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Agent, tt.o.Offline = AgentNop, true
			if _, err := BuildMatrixPlan(cfg, tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
}
