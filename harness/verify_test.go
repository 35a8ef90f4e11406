package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// A resume checks what the checkpoint promises before it touches anything,
// and refuses a hole naming the file, leaving the directory as it was; a
// completed run's recorded status never changes.
func TestResumeVerifiesWhatTheCheckpointPromises(t *testing.T) {
	tests := []struct {
		name string
		// total iterations of the first run and of the resume: equal means
		// the resume is of a completed run.
		first, resume int
		spoil         func(t *testing.T, dir string)
		wantErr       []string // empty: the resume goes on
	}{
		{"deleted metrics part", 2, 3, func(t *testing.T, dir string) {
			remove(t, filepath.Join(dir, "metrics", "part-00001.parquet"))
		}, []string{"metrics/part-00001.parquet", "iteration 1", "is missing"}},
		{"torn history line inside the checkpoint", 2, 3, func(t *testing.T, dir string) {
			tearLine(t, filepath.Join(dir, rundir.HistoryFile), 2)
		}, []string{"history/history.jsonl", "line 2 of the", "torn or not JSON"}},
		{"garbage last history line of a completed run", 2, 2, func(t *testing.T, dir string) {
			path := filepath.Join(dir, rundir.HistoryFile)
			tearLine(t, path, bytes.Count(readFile(t, path), []byte("\n")))
		}, []string{"history/history.jsonl", "torn or not JSON"}},
		{"deleted metrics part of a completed run", 2, 2, func(t *testing.T, dir string) {
			remove(t, filepath.Join(dir, "metrics", "part-00002.parquet"))
		}, []string{"metrics/part-00002.parquet", "is missing"}},
		{"garbage after the checkpoint is cut back", 2, 3, func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, rundir.HistoryFile), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"type":"entry","entry":{"id":"tor`)
			f.Close()
		}, nil},
		{"intact completed run", 2, 2, func(*testing.T, string) {}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tasks := []string{"a", "b"}
			tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyNone, tasks, tt.first, nil)
			tr.execute(t)
			dir := tr.run.Dir.Path
			tt.spoil(t, dir)
			manifest := readFile(t, filepath.Join(dir, rundir.ManifestFile))
			before := dirListing(t, dir)

			d, err := rundir.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			again := buildTestRun(tr.run.Config, d, conditions.LearnedMediator, conditions.PolicyNone, tasks, tt.resume)
			res := again.run.Iterate(context.Background())
			if len(tt.wantErr) == 0 {
				if res.Err != nil || res.Status != rundir.StatusCompleted || res.Iterations != tt.resume {
					t.Fatalf("resume: %+v; want completed with %d iterations", res, tt.resume)
				}
				if tt.first == tt.resume && !bytes.Equal(readFile(t, filepath.Join(dir, rundir.ManifestFile)), manifest) {
					t.Error("resuming a completed run rewrote its run.json")
				}
				return
			}
			if !errors.Is(res.Err, rundir.ErrDamaged) || res.Status == rundir.StatusCompleted {
				t.Fatalf("resume: %+v; want a refusal wrapping rundir.ErrDamaged, never completed", res)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(res.Err.Error(), want) {
					t.Errorf("refusal %q does not say %q", res.Err, want)
				}
			}
			if n := len(again.trials.specs); n != 0 {
				t.Errorf("the refused resume ran %d trials", n)
			}
			if after := dirListing(t, dir); after != before {
				t.Errorf("the refused resume changed the directory:\n%s\nwas\n%s", after, before)
			}
			if got := readFile(t, filepath.Join(dir, rundir.ManifestFile)); !bytes.Equal(got, manifest) {
				t.Errorf("the refused resume rewrote run.json:\n%s", got)
			}
		})
	}
}

// A matrix never reports a completed row with a hole as completed, and
// leaves that row's record, and its own, as they were.
func TestMatrixResumeReportsAHoleInACompletedRow(t *testing.T) {
	cfg := testConfig(t, nil)
	o := PlanOptions{Tasks: []string{"a"}, Rows: BaselineRows()[:2], Iterations: 1, Seeds: []int64{7}, Concurrency: 2, OutDir: t.TempDir()}
	out := runTestMatrix(t, cfg, o)
	rowDir := out.Rows[0].Dir
	remove(t, filepath.Join(rowDir, "metrics", "part-00001.parquet"))
	manifest := readFile(t, filepath.Join(rowDir, rundir.ManifestFile))
	matrixManifest := readFile(t, filepath.Join(out.Dir, rundir.ManifestFile))
	ex, _ := testMatrix(t, cfg, PlanOptions{Resume: out.Dir, Concurrency: 2}, false)
	res, err := ex.matrix(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status == rundir.StatusCompleted || res.Rows[0].Status != rundir.StatusFailed || !strings.Contains(res.Rows[0].Error, "part-00001.parquet") {
		t.Errorf("matrix %s, row %s: %s; want the row's hole reported", res.Status, res.Rows[0].Status, res.Rows[0].Error)
	}
	if got := readFile(t, filepath.Join(rowDir, rundir.ManifestFile)); !bytes.Equal(got, manifest) {
		t.Errorf("the row's run.json changed:\n%s", got)
	}
	if got := readFile(t, filepath.Join(out.Dir, rundir.ManifestFile)); !bytes.Equal(got, matrixManifest) {
		t.Errorf("the completed matrix's run.json changed:\n%s", got)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// tearLine cuts line n (1-based) of a file in half, keeping its newline.
func tearLine(t *testing.T, path string, n int) {
	t.Helper()
	lines := bytes.SplitAfter(readFile(t, path), []byte("\n"))
	l := lines[n-1]
	lines[n-1] = append(append([]byte{}, l[:len(l)/2]...), '\n')
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dirListing names every file of a tree with its size and modification time.
func dirListing(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&b, "%s %d %s\n", rel, info.Size(), info.ModTime())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// inspect warns of a completed iteration whose metrics part is gone.
func TestInspectWarnsOfAMissingPart(t *testing.T) {
	tr := newTestRun(t, conditions.NoFeedback, conditions.PolicyNone, []string{"a"}, 2, nil)
	tr.execute(t)
	remove(t, filepath.Join(tr.run.Dir.Path, "metrics", "part-00001.parquet"))
	v, err := inspect.ReadRunView(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(v.Warnings, "\n"), "part-00001.parquet is missing") {
		t.Errorf("warnings %q do not name the missing part", v.Warnings)
	}
}
