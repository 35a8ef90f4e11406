package harness

import (
	"context"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// A matrix resumed while another process holds one of its rows skips that
// row and says so; the matrix stays resumable (interrupted, never failed),
// and a later resume finishes the row.
func TestMatrixResumeSkipsARowHeldElsewhere(t *testing.T) {
	cfg := testConfig(t, nil)
	o := PlanOptions{Tasks: []string{"a"}, Rows: BaselineRows()[:2], Iterations: 1, Seeds: []int64{7}, Concurrency: 2, OutDir: t.TempDir()}
	first := runTestMatrix(t, cfg, o)
	held, free := first.Rows[0].Name, first.Rows[1].Name

	md, err := rundir.Open(first.Dir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := md.OpenRow(held)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Lock(); err != nil { // another writer of the row
		t.Fatal(err)
	}
	resumed, _ := testMatrix(t, cfg, PlanOptions{Resume: first.Dir, Iterations: 2, Concurrency: 2}, false)
	var said []Event
	resumed.opts.Events = func(e Event) {
		if e.Kind == EventRowHeld {
			said = append(said, e)
		}
	}
	out, err := resumed.matrix(context.Background())
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if out.Status != rundir.StatusInterrupted {
		t.Errorf("outcome %s, want interrupted (resumable)", out.Status)
	}
	for _, r := range out.Rows {
		switch r.Name {
		case held:
			if r.Status != rundir.StatusInterrupted || !strings.Contains(r.Error, "another process is running it") {
				t.Errorf("held row: %s (%s), want interrupted, saying another process runs it", r.Status, r.Error)
			}
		case free:
			if r.Status != rundir.StatusCompleted || r.Result.Iterations != 2 {
				t.Errorf("free row: %s after %d iterations, want completed after 2", r.Status, r.Result.Iterations)
			}
		}
	}
	if len(said) != 1 || said[0].Row != held {
		t.Errorf("row-held events %+v, want one for row %s", said, held)
	}
	m, err := rundir.Open(first.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if st := m.Manifest().Status; st == rundir.StatusFailed || st == rundir.StatusCompleted {
		t.Errorf("matrix run.json says %s with a row unfinished, want it resumable", st)
	}
	if hm, err := rundir.Open(md.RowPath(held)); err != nil || hm.Manifest().Status == rundir.StatusFailed {
		t.Errorf("the held row's run.json: %v, %+v; want it untouched", err, hm)
	}

	other.Unlock()
	again, _ := testMatrix(t, cfg, PlanOptions{Resume: first.Dir, Iterations: 2, Concurrency: 2}, false)
	out, err = again.matrix(context.Background())
	if err != nil || out.Status != rundir.StatusCompleted {
		t.Fatalf("resume after the holder left: %v, %+v", err, out)
	}
}
