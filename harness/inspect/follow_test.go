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
	holdDir(t, dir)
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
	holdDir(t, dir)
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
	holdDir(t, dir)
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

// holdDir takes dir's lock for the test, as the process writing a run
// holds it: a running directory nobody holds shows as stopped.
func holdDir(t *testing.T, dir string) *rundir.Dir {
	t.Helper()
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Lock(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Unlock() })
	return d
}

// A run whose process died leaves run.json saying running: with no live
// holder of its lock it shows as stopped, and --follow ends instead of
// waiting forever. A matrix is live while any of its rows is held.
func TestFollowEndsWhenNoProcessHoldsTheRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "20250301T120000Z-1-no_feedback")
	writeManifest(t, dir, rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusRunning, Iterations: 2})
	writer := holdDir(t, dir)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, dir, out, 5*time.Millisecond) }()
	waitFor(t, out, "following run 20250301T120000Z-1-no_feedback (running)")
	writer.Unlock() // the writer dies without recording how it ended
	if err := <-done; err != nil {
		t.Fatalf("Follow = %v, want nil once no process holds the run", err)
	}
	if !strings.Contains(out.String(), "ended: stopped (no process holds it)") {
		t.Errorf("no stopped line:\n%s", out.String())
	}
	v, err := ReadRunView(dir)
	if err != nil || v.Status != StatusStopped {
		t.Fatalf("Run view status %v (%v), want stopped", v.Status, err)
	}
	var text bytes.Buffer
	if err := v.WriteText(&text, false); err != nil || !strings.Contains(text.String(), "(stopped (no process holds it))") {
		t.Errorf("run view header does not say stopped:\n%s", text.String())
	}
}

func TestMatrixIsLiveWhileARowIsHeld(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "m-matrix")
	writeManifest(t, dir, rundir.Manifest{Kind: rundir.KindMatrix, Status: rundir.StatusRunning, Rows: []string{"a", "b"}})
	writeManifest(t, filepath.Join(dir, "a"), rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusRunning, Iterations: 1})
	writeManifest(t, filepath.Join(dir, "b"), rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusRunning, Iterations: 1})
	element := holdDir(t, filepath.Join(dir, "b")) // a Slurm element holds only its row

	status := func() rundir.Status {
		t.Helper()
		list, err := List(root)
		if err != nil || len(list) != 1 {
			t.Fatalf("List = %+v, %v", list, err)
		}
		return list[0].Status
	}
	if got := status(); got != rundir.StatusRunning {
		t.Errorf("matrix with a held row lists as %s, want running", got)
	}
	rows, err := List(dir)
	if err != nil || len(rows) != 2 || rows[0].Status != StatusStopped || rows[1].Status != rundir.StatusRunning {
		t.Errorf("rows = %+v (%v), want a stopped (nobody holds it) and b running", rows, err)
	}
	element.Unlock()
	if got := status(); got != StatusStopped {
		t.Errorf("matrix nobody holds lists as %s, want stopped", got)
	}
}

func TestFollowMissingDirectory(t *testing.T) {
	err := Follow(context.Background(), filepath.Join(t.TempDir(), "nope"), &bytes.Buffer{}, time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("err = %v", err)
	}
}

// writeFile writes data at path, creating its directory.
func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Follow shows each trial's outcome as its trace lands, before the
// iteration's metrics, and the phases between iterations: the Advisor's
// review, the validation of a batch with its trials and decision, and a
// reflection. What was on disk when following began is not repeated.
func TestFollowShowsTrialsAndPhases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "20250301T120000Z-1-full")
	m := rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusRunning, Condition: "learned_mediator",
		Tasks: []string{"a", "b"}, Iterations: 3, CompletedIterations: 1}
	writeManifest(t, dir, m)
	holdDir(t, dir)
	trace := func(status, reward string) string {
		return `{"status":"` + status + `","reward":` + reward + `,"timings":{"total_ns":1500000000},"errors":["container died"]}`
	}
	writeFile(t, filepath.Join(dir, rundir.JobDir("a", 1), rundir.TraceFile), trace("scored", "0.25"))
	appendLine(t, filepath.Join(dir, rundir.CallsFile), `{"caller":"coevo/advisor/b000","role":"advisor"}`)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, dir, out, 5*time.Millisecond) }()
	waitFor(t, out, "following run")

	// A trace being written is not shown until it is whole.
	writeFile(t, filepath.Join(dir, rundir.JobDir("a", 2), rundir.TraceFile), `{"status":"sco`)
	writeFile(t, filepath.Join(dir, rundir.JobDir("b", 2), rundir.TraceFile), trace("env_failure", "null"))
	waitFor(t, out, "i2 b trial: env_failure, 1.5s: container died")
	writeFile(t, filepath.Join(dir, rundir.JobDir("a", 2), rundir.TraceFile), trace("scored", "1"))
	waitFor(t, out, "i2 a trial: scored, reward 1.000, 1.5s\n") // no error on a scored trial
	// One of several students' trials of a task names its student.
	writeFile(t, filepath.Join(dir, rundir.JobDir(rundir.StudentTrialKey("b", "weak"), 2), rundir.TraceFile), trace("scored", "0"))
	waitFor(t, out, "i2 b trial by weak: scored, reward 0.000")

	appendLine(t, filepath.Join(dir, rundir.CallsFile), `{"caller":"coevo/advisor/b001","role":"advisor"}`)
	waitFor(t, out, "the Advisor is reviewing batch b001")
	batch := filepath.Join(dir, rundir.ValidationBatchDir("b001"))
	writeFile(t, filepath.Join(batch, rundir.ValidationTrialDir("candidate", "a", 0), rundir.TraceFile), trace("scored", "0.5"))
	waitFor(t, out, "validation of batch b001 started")
	waitFor(t, out, "validation b001 candidate trial: a k0: scored, reward 0.500")
	writeFile(t, filepath.Join(batch, rundir.DecisionFile), `{"decision":{"accept":false,"rule":"posterior","reason":"P(better) 0.59 < 0.80"}}`)
	waitFor(t, out, "validation of batch b001: rejected by posterior: P(better) 0.59 < 0.80")

	writeFile(t, filepath.Join(dir, rundir.EvalJobDir(2, 1, "b"), rundir.TraceFile), trace("scored", "0"))
	waitFor(t, out, "held-out trial of the skills after iteration 2: b k01: scored, reward 0.000")
	appendLine(t, filepath.Join(dir, rundir.CallsFile), `{"caller":"coevo/reflector/planner/i0002","role":"reflector"}`)
	appendLine(t, filepath.Join(dir, rundir.CallsFile), `{"caller":"coevo/reflector/planner/i0002","role":"reflector"}`)
	waitFor(t, out, "i2 reflection on the planner skill under way")

	m.Status, m.CompletedIterations = rundir.StatusCompleted, 3
	writeManifest(t, dir, m)
	if err := <-done; err != nil {
		t.Fatalf("Follow = %v, want nil once the run completed", err)
	}
	got := out.String()
	for _, repeated := range []string{"i1 a trial", "b000"} {
		if strings.Contains(got, repeated) {
			t.Errorf("%q was on disk before following and was shown:\n%s", repeated, got)
		}
	}
	for _, once := range []string{"i2 a trial", "reflection on the planner skill", "validation of batch b001 started", "b001: rejected"} {
		if n := strings.Count(got, once); n != 1 {
			t.Errorf("%q shown %d times, want once:\n%s", once, n, got)
		}
	}
}

// A row's status line comes after the lines of what it finished: its
// iteration's metrics are shown before "status completed" even when both
// land between two polls.
func TestFollowPrintsARowsStatusAfterItsLastLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m-matrix")
	mm := rundir.Manifest{Kind: rundir.KindMatrix, Status: rundir.StatusRunning, Rows: []string{"r"}}
	writeManifest(t, dir, mm)
	holdDir(t, dir)
	row := filepath.Join(dir, "r")
	rm := rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusRunning, Iterations: 1}
	writeManifest(t, row, rm)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, dir, out, 400*time.Millisecond) }()
	waitFor(t, out, "following matrix")
	writeMetrics(t, row, rowsOf("m/r", "r", "no_feedback", "none", 1, scored(1, "a", 1)))
	rm.Status, rm.CompletedIterations = rundir.StatusCompleted, 1
	writeManifest(t, row, rm)
	mm.Status = rundir.StatusCompleted
	writeManifest(t, dir, mm)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	iter, status := strings.Index(got, "[r] iteration 1:"), strings.Index(got, "[r] status completed")
	if iter < 0 || status < 0 || status < iter {
		t.Errorf("want the iteration line before the row's status line:\n%s", got)
	}
	if ended := strings.Index(got, "status running -> completed"); ended < status {
		t.Errorf("want the matrix's status change after its rows' lines:\n%s", got)
	}
}
