package inspect

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// syncBuffer lets the test read what Follow writes from another goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until out contains want; the deadline only guards against
// a hang, it measures nothing.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("output never showed %q:\n%s", want, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

func TestFollowTailsARunUntilItEnds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "20250301T120000Z-1-no_feedback")
	m := rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusRunning, Condition: "no_feedback",
		Tasks: []string{"a"}, Iterations: 2}
	writeManifest(t, dir, m)
	// Already on disk before following: not repeated.
	appendLine(t, filepath.Join(dir, rundir.HistoryFile), `{"type":"entry","entry":{"id":"old","role":"planner","kind":"plan","task_id":"a","iteration":1}}`)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, dir, out, 5*time.Millisecond) }()

	waitFor(t, out, "following run")
	appendLine(t, filepath.Join(dir, rundir.HistoryFile), `{"type":"entry","entry":{"id":"new-plan","role":"planner","kind":"plan","task_id":"a","iteration":2}}`)
	waitFor(t, out, "i2 a planner plan new-plan")
	// A half-written line is not shown until it is complete.
	f, _ := os.OpenFile(filepath.Join(dir, rundir.HistoryFile), os.O_APPEND|os.O_WRONLY, 0o644)
	f.WriteString(`{"type":"reward","ids":["new-plan"],`)
	f.Close()
	writeMetrics(t, dir, rowsOf("r", "no_feedback", "no_feedback", "none", 1, scored(1, "a", 1), trial{1, "b", "env_failure", nil}))
	waitFor(t, out, "iteration 1: 2 trials, 1 scored, 1 env failures, mean reward 1.000")
	appendLine(t, filepath.Join(dir, rundir.HistoryFile), `"reward":1,"task_id":"a","iteration":2}`)
	waitFor(t, out, "i2 a delayed reward 1.000 for 1 entries")
	appendLine(t, filepath.Join(dir, rundir.SkillUpdatesFile), `{"id":"executor/b-1","role":"executor","flow":"advisor_gate","iteration":2,"old_hash":"x","new_hash":"y"}`)
	appendLine(t, filepath.Join(dir, rundir.RejectedFile), `{"type":"batch","batch_id":"b-2","iteration":2,"reason":"too vague","proposals":[{}]}`)
	waitFor(t, out, "i2 skill update executor executor/b-1 (advisor_gate) x -> y")
	waitFor(t, out, "i2 rejected batch b-2 (1 proposals): too vague")

	m.Status, m.CompletedIterations = rundir.StatusCompleted, 2
	writeManifest(t, dir, m)
	if err := <-done; err != nil {
		t.Fatalf("Follow = %v, want nil once the run completed", err)
	}
	if strings.Contains(out.String(), " old") {
		t.Errorf("a record from before following was repeated:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "run 20250301T120000Z-1-no_feedback ended: completed") {
		t.Errorf("no end line:\n%s", out.String())
	}
}

func TestFollowFollowsMatrixRows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-matrix")
	mm := rundir.Manifest{Kind: rundir.KindMatrix, Status: rundir.StatusRunning, Rows: []string{"no_feedback", "full"}}
	writeManifest(t, dir, mm)
	writeManifest(t, filepath.Join(dir, "no_feedback"), rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusRunning, Iterations: 1})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, dir, out, 5*time.Millisecond) }()
	waitFor(t, out, "following matrix")

	// A row that starts later is read from its beginning.
	full := filepath.Join(dir, "full")
	writeManifest(t, full, rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusRunning, Iterations: 1})
	appendLine(t, filepath.Join(full, rundir.HistoryFile), `{"type":"entry","entry":{"id":"f1","role":"mediator","kind":"report","task_id":"a","iteration":1,"withheld":true}}`)
	waitFor(t, out, "[full] i1 a mediator report f1 (withheld)")

	mm.Status = "interrupted"
	writeManifest(t, dir, mm)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestFollowStopsWithItsContext(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r")
	writeManifest(t, dir, rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusRunning})
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, dir, out, 5*time.Millisecond) }()
	waitFor(t, out, "following run")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Follow = %v, want context.Canceled", err)
	}
}

func TestFollowMissingDirectory(t *testing.T) {
	err := Follow(context.Background(), filepath.Join(t.TempDir(), "nope"), &bytes.Buffer{}, time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("err = %v", err)
	}
}
