package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/launch"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/slurmtest"
)

// slurmRows are the rows of the Slurm tests' matrix: two presets by two
// seeds, each one array element.
// slurmSmokeTasks is the size of the smoke task set.
var slurmSmokeTasks = len(benchmarks.SmokeIDs())

var slurmRows = []string{"no_feedback-seed1", "no_feedback-seed2", "full_coevolution-seed1", "full_coevolution-seed2"}

// slurmMatrixArgs is a small offline smoke matrix: 2 presets x 2 seeds x 6
// tasks x 1 iteration.
func slurmMatrixArgs(cfgDir, out string, extra ...string) []string {
	return append([]string{"matrix", "--task-set", "smoke", "--preset", "no_feedback,full_coevolution",
		"--seeds", "1,2", "--offline", "--iterations", "1", "--config-dir", cfgDir, "--out", out, "-j", "1"}, extra...)
}

// slurmFactory is engineFactory with Slurm's commands, whose elements run
// this test binary as the harness, with the given environment variables
// (NAME=value) added.
func slurmFactory(t *testing.T, env ...string) *Factory {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(t.TempDir(), "harness")
	vars := asHarnessEnv + "=1"
	for _, e := range env {
		name, value, _ := strings.Cut(e, "=")
		vars += " " + name + "='" + strings.ReplaceAll(value, "'", `'\''`) + "'"
	}
	script := fmt.Sprintf("#!/bin/sh\n%s exec '%s' \"$@\"\n", vars, self)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	f := engineFactory()
	f.Scheduler = launch.Exec{}
	f.Executable = func() (string, error) { return wrapper, nil }
	return f
}

// slurmConfigDir polls the scheduler every half second and shares one
// task cache between the local run, the submitter and the elements.
func slurmConfigDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf("[executor_runtime]\ntask_cache_dir = %q\n[launcher]\npoll_interval = \"500ms\"\n", t.TempDir())
	if err := os.WriteFile(filepath.Join(dir, "default.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// elementOutputs is what the array elements of every matrix under out
// wrote, for a failure message.
func elementOutputs(out string) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(out, "*-matrix", rundir.SlurmDir, "*.out"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(f), data)
	}
	return b.String()
}

func onlyMatrix(t *testing.T, out string) string {
	t.Helper()
	matrices, _ := filepath.Glob(filepath.Join(out, "*-matrix"))
	if len(matrices) != 1 {
		t.Fatalf("matrix directories in %s: %v", out, matrices)
	}
	return matrices[0]
}

// comparable is a metric row without what legitimately differs between
// two runs of the same matrix: the run and matrix ids (and the trial ids,
// which hold nothing else that differs), the measured durations and the
// trials' start and end times.
func comparable(r rundir.MetricRow) rundir.MetricRow {
	r.RunID, r.MatrixID = "", nil
	r.BuildMS, r.AgentMS, r.VerifierMS, r.TrialMS, r.QueueMS = nil, nil, nil, nil, nil
	r.TrialStartedAt, r.TrialFinishedAt = nil, nil
	return r
}

func sortedMetrics(t *testing.T, dir string) []string {
	t.Helper()
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		b, err := json.Marshal(comparable(r))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// slurmCompareTasks are the smoke tasks of the Slurm-against-local
// comparison: two are enough for a dataset to differ row for row, and each
// task more costs two trials per row (one local, one on Slurm).
var slurmCompareTasks = []string{"log-analysis", "orbital-period"}

// A matrix launched on Slurm runs every (row, seed) as one element of a
// job array, records the job, and writes the same dataset, row for row, as
// the same matrix run locally; inspect --compare reads it.
func TestMatrixOnSlurmMatchesLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster and runs containers")
	}
	dockerForTest(t)
	slurmtest.Start(t)
	cfgDir := slurmConfigDir(t)

	// The two matrices are independent: the local one runs while the
	// Slurm one does, from a task cache of its own so that neither writes
	// into the other's.
	localOut, slurmOut := t.TempDir(), t.TempDir()
	tasks := strings.Join(slurmCompareTasks, ",")
	waitLocal := runInBackground(t, engineFactory(), slurmMatrixArgs(slurmConfigDir(t), localOut, "--launcher", "local", "--tasks", tasks)...)
	r := runCLI(t, slurmFactory(t), slurmMatrixArgs(cfgDir, slurmOut, "--launcher", "slurm", "--tasks", tasks)...)
	if lr := waitLocal(); lr.code != ExitOK {
		t.Fatalf("local: exit %d\n%s\n%s", lr.code, lr.out, lr.errOut)
	}
	if r.code != ExitOK {
		t.Fatalf("slurm: exit %d\n%s\n%s\nelements:\n%s", r.code, r.out, r.errOut, elementOutputs(slurmOut))
	}
	dir := onlyMatrix(t, slurmOut)

	jobs, err := launch.ReadJobs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID == "" {
		t.Fatalf("recorded jobs: %+v, want one job array", jobs)
	}
	if got := jobs[0].Rows(); !slices.Equal(got, slurmRows) {
		t.Errorf("array elements run rows %v, want %v", got, slurmRows)
	}
	for _, e := range jobs[0].Elements {
		if _, err := os.Stat(filepath.Join(dir, rundir.SlurmOutput(jobs[0].ID, e.Index))); err != nil {
			t.Errorf("element %d (%s) left no output: %v", e.Index, e.Row, err)
		}
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st := d.Manifest().Status; st != rundir.StatusCompleted {
		t.Errorf("matrix status %s, want completed", st)
	}

	local, onSlurm := sortedMetrics(t, onlyMatrix(t, localOut)), sortedMetrics(t, dir)
	if want := len(slurmRows) * len(slurmCompareTasks); len(onSlurm) != want {
		t.Errorf("%d metric rows on Slurm, want %d (%d rows x %d tasks)", len(onSlurm), want, len(slurmRows), len(slurmCompareTasks))
	}
	if !slices.Equal(local, onSlurm) {
		t.Errorf("the Slurm dataset differs from the local one:\nlocal:\n%s\nslurm:\n%s", strings.Join(local, "\n"), strings.Join(onSlurm, "\n"))
	}

	r = runCLI(t, nil, "inspect", dir, "--compare", "--json")
	if r.code != ExitOK {
		t.Fatalf("inspect --compare: exit %d: %s", r.code, r.errOut)
	}
	var cmp inspect.Comparison
	if err := json.Unmarshal([]byte(r.out), &cmp); err != nil {
		t.Fatal(err)
	}
	if len(cmp.Rows) == 0 {
		t.Errorf("inspect --compare shows no rows: %s", r.out)
	}
}

// Interrupting a matrix that runs on Slurm cancels its array and leaves it
// resumable: each running element is given the time it needs to save its
// row and remove its containers, even longer than the cluster's KillWait;
// the resume submits only the unfinished rows, sweeps nothing, and
// completes the matrix with the dataset of a matrix never interrupted.
func TestSlurmMatrixCancelThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster and runs containers")
	}
	engine := dockerForTest(t)
	cluster := slurmtest.Start(t)
	cfgDir := slurmConfigDir(t)
	out := t.TempDir()

	// The same matrix, never interrupted, run locally beside the Slurm one
	// from a task cache of its own: the dataset the resume must end with.
	refOut := t.TempDir()
	reference := runInBackground(t, engineFactory(), slurmMatrixArgs(slurmConfigDir(t), refOut, "--launcher", "local")...)

	// Interrupt once a row has completed and a row that had not started
	// then is running: that element has all its trials ahead, so it cannot
	// end its row before the cluster would kill it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan string, 1)
	go func() {
		var waiting map[string]bool // rows not started when the first completed
		for ctx.Err() == nil {
			if matrices, _ := filepath.Glob(filepath.Join(out, "*-matrix")); len(matrices) == 1 {
				rows := launch.ReadRows(matrices[0], slurmRows)
				if waiting == nil && slices.ContainsFunc(rows, func(st launch.RowState) bool { return st.Status == rundir.StatusCompleted }) {
					waiting = map[string]bool{}
					for _, st := range rows {
						waiting[st.Row] = st.Status == ""
					}
				}
				for _, st := range rows {
					if waiting[st.Row] && st.Status == rundir.StatusRunning {
						started <- st.Row
						cancel()
						return
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	// Each element takes twice KillWait to stop: killed after KillWait, as
	// a plain scancel would have it, it could not save its row.
	f := slurmFactory(t, stopDelayEnv+"="+(2*cluster.KillWait).String())
	var stdout, stderr strings.Builder
	f.IO = IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr}
	if code := Run(ctx, f, slurmMatrixArgs(cfgDir, out, "--launcher", "slurm")); code != ExitInterrupted {
		t.Fatalf("interrupted matrix: exit %d, want %d\n%s\n%s\nelements:\n%s", code, ExitInterrupted, stdout.String(), stderr.String(), elementOutputs(out))
	}
	t.Logf("interrupted matrix:\n%s%s", stdout.String(), stderr.String())
	dir := onlyMatrix(t, out)
	checkElementsSaved(t, engine, dir, <-started, stdout.String())
	completed := map[string]bool{}
	for _, st := range launch.ReadRows(dir, slurmRows) {
		completed[st.Row] = st.Status == rundir.StatusCompleted
	}
	unfinished := len(slurmRows) - len(slices.DeleteFunc(slices.Collect(maps.Values(completed)), func(c bool) bool { return !c }))
	if unfinished == 0 || unfinished == len(slurmRows) {
		t.Fatalf("%d of %d rows unfinished after the interrupt, want some but not all\n%s", unfinished, len(slurmRows), stderr.String())
	}

	r := runCLI(t, slurmFactory(t), "matrix", "--resume", dir, "--launcher", "slurm")
	if r.code != ExitOK {
		t.Fatalf("resume: exit %d\n%s\n%s\nelements:\n%s", r.code, r.out, r.errOut, elementOutputs(out))
	}
	jobs, err := launch.ReadJobs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("recorded jobs: %+v, want the first array and the resume's", jobs)
	}
	if n := len(jobs[1].Elements); n != unfinished {
		t.Errorf("the resume submitted %d rows (%v), want the %d unfinished", n, jobs[1].Rows(), unfinished)
	}
	for _, row := range jobs[1].Rows() {
		if completed[row] {
			t.Errorf("the resume submitted row %s, which had completed", row)
		}
	}
	for _, e := range jobs[1].Elements {
		data, _ := os.ReadFile(filepath.Join(dir, rundir.SlurmOutput(jobs[1].ID, e.Index)))
		if m := sweptRE.FindSubmatch(data); m != nil {
			t.Errorf("the resume of row %s had to sweep what the cancelled element left: %s", e.Row, m[0])
		}
	}
	for _, st := range launch.ReadRows(dir, slurmRows) {
		if st.Status != rundir.StatusCompleted || st.Iterations != 1 {
			t.Errorf("row %s: %s with %d iterations, want completed with 1", st.Row, st.Status, st.Iterations)
		}
	}
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range rows {
		seen[m.Row+" "+m.TaskID+" "+fmt.Sprint(m.Iteration)]++
	}
	for _, row := range slurmRows {
		for _, task := range benchmarks.SmokeIDs() {
			if n := seen[row+" "+task+" 1"]; n != 1 {
				t.Errorf("row %s task %s: %d metric rows, want exactly 1", row, task, n)
			}
		}
	}
	if len(rows) != len(slurmRows)*slurmSmokeTasks {
		t.Errorf("%d metric rows, want %d", len(rows), len(slurmRows)*slurmSmokeTasks)
	}
	ref := reference()
	if ref.code != ExitOK {
		t.Fatalf("uninterrupted local matrix: exit %d\n%s\n%s", ref.code, ref.out, ref.errOut)
	}
	if want, got := sortedMetrics(t, onlyMatrix(t, refOut)), sortedMetrics(t, dir); !slices.Equal(want, got) {
		t.Errorf("the resumed matrix's dataset differs from the uninterrupted one:\nuninterrupted:\n%s\nresumed:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// runInBackground runs a command line beside the test; the function it
// returns waits for its result. A test that ends first interrupts it and
// waits for it, so that it writes nothing after the test's directories
// are removed.
func runInBackground(t *testing.T, f *Factory, args ...string) func() result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var r result
	go func() {
		defer close(done)
		var out, errOut strings.Builder
		f.IO = IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
		r.code = Run(ctx, f, args)
		r.out, r.errOut = out.String(), errOut.String()
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() result { <-done; return r }
}

// sweptRE is a resume's report of leftovers it removed, some of them.
var sweptRE = regexp.MustCompile(`removed (\d*[1-9]\d* containers|\d+ containers, \d*[1-9]\d* networks|\d+ containers, \d+ networks and \d*[1-9]\d* volumes)`)

// checkElementsSaved checks that the cancelled elements of a matrix's
// array ended as the harness's own Ctrl-C ends a run: no element was
// killed (Slurm's SIGKILL shows as ExitCode=0:9 in the summary), every row
// says completed, interrupted, or nothing (never started), the row whose
// element was running says interrupted, and none of the matrix's
// containers is left.
func checkElementsSaved(t *testing.T, engine *client.Client, dir, running, summary string) {
	t.Helper()
	if strings.Contains(summary, "ExitCode=0:9") {
		t.Errorf("an element was killed before it could save its row:\n%s", summary)
	}
	for _, st := range launch.ReadRows(dir, slurmRows) {
		switch {
		case st.Row == running && st.Status != rundir.StatusInterrupted:
			t.Errorf("row %s, running when the matrix was interrupted, says %q after its element ended, want %q", st.Row, st.Status, rundir.StatusInterrupted)
		case st.Status != rundir.StatusCompleted && st.Status != rundir.StatusInterrupted && st.Status != "":
			t.Errorf("row %s says %q after its element ended, want completed or interrupted", st.Row, st.Status)
		}
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if left := containersLabelled(t, engine, docker.LabelRun+"="+d.Manifest().ID); len(left) > 0 {
		names := make([]string, len(left))
		for i, c := range left {
			names[i] = strings.Join(c.Names, ",") + " (" + c.State + ")"
		}
		t.Errorf("the cancelled elements left %d containers of the matrix: %v", len(left), names)
	}
}

// networkSlurmConfigDir is slurmConfigDir with two labs for a network.
func networkSlurmConfigDir(t *testing.T) string {
	t.Helper()
	dir := slurmConfigDir(t)
	data, err := os.ReadFile(filepath.Join(dir, "default.toml"))
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, "[labs.a]\nstudents = 1\n[labs.b]\nstudents = 1\n"...)
	if err := os.WriteFile(filepath.Join(dir, "default.toml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// slurmNetworkArgs is the smallest network that exchanges items: 2 labs on
// a ring, mediated diffusion, 2 seeds (two array elements), 1 task, 2
// iterations (a barrier, then an iteration that takes in what it brought).
func slurmNetworkArgs(cfgDir, out string, extra ...string) []string {
	return append([]string{"network", "--labs", "a,b", "--topology", "ring", "--diffusion", "mediated", "--seeds", "1,2",
		"--tasks", slurmCompareTasks[0], "--iterations", "2", "--offline", "--skip-stability-check",
		"--config-dir", cfgDir, "--out", out, "-j", "1"}, extra...)
}

// diffusionItems are a network's items as inspect --diffusion --json
// lists them, sorted.
func diffusionItems(t *testing.T, dir string) []string {
	t.Helper()
	r := runCLI(t, nil, "inspect", dir, "--diffusion", "--json")
	if r.code != ExitOK {
		t.Fatalf("inspect --diffusion: exit %d: %s", r.code, r.errOut)
	}
	var items []map[string]any
	if err := json.Unmarshal([]byte(r.out), &items); err != nil {
		t.Fatalf("inspect --diffusion --json: %v\n%s", err, r.out)
	}
	var out []string
	for _, it := range items {
		b, _ := json.Marshal(it)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// A network launched on Slurm runs each seed as one element of a job
// array, all that seed's labs side by side, and writes the same dataset
// and the same diffusion items as the same network run locally.
func TestNetworkOnSlurmMatchesLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster and runs containers")
	}
	dockerForTest(t)
	slurmtest.Start(t)

	localOut, slurmOut := t.TempDir(), t.TempDir()
	waitLocal := runInBackground(t, engineFactory(), slurmNetworkArgs(networkSlurmConfigDir(t), localOut, "--launcher", "local")...)
	r := runCLI(t, slurmFactory(t), slurmNetworkArgs(networkSlurmConfigDir(t), slurmOut, "--launcher", "slurm")...)
	if lr := waitLocal(); lr.code != ExitOK {
		t.Fatalf("local: exit %d\n%s\n%s", lr.code, lr.out, lr.errOut)
	}
	if r.code != ExitOK {
		t.Fatalf("slurm: exit %d\n%s\n%s\nelements:\n%s", r.code, r.out, r.errOut, elementOutputs(slurmOut))
	}
	dir, localDir := onlyMatrix(t, slurmOut), onlyMatrix(t, localOut)
	jobs, err := launch.ReadJobs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || len(jobs[0].Elements) != 2 || jobs[0].Elements[0].Row != "seed1" || jobs[0].Elements[1].Row != "seed2" {
		t.Fatalf("recorded jobs: %+v, want one array of two elements, seed1 and seed2", jobs)
	}
	for _, e := range jobs[0].Elements {
		if len(e.Rows) != 2 {
			t.Errorf("element %s runs rows %v, want both labs", e.Row, e.Rows)
		}
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st := d.Manifest().Status; st != rundir.StatusCompleted {
		t.Errorf("network status %s, want completed", st)
	}
	local, onSlurm := sortedMetrics(t, localDir), sortedMetrics(t, dir)
	if want := 2 * 2 * 2; len(onSlurm) < want {
		t.Errorf("%d metric rows on Slurm, want at least %d (2 labs x 2 seeds x 2 iterations)", len(onSlurm), want)
	}
	if !slices.Equal(local, onSlurm) {
		t.Errorf("the Slurm dataset differs from the local one:\nlocal:\n%s\nslurm:\n%s", strings.Join(local, "\n"), strings.Join(onSlurm, "\n"))
	}
	localItems, slurmItems := diffusionItems(t, localDir), diffusionItems(t, dir)
	if len(slurmItems) == 0 {
		t.Error("the network on Slurm sent no items")
	}
	if !slices.Equal(localItems, slurmItems) {
		t.Errorf("the Slurm network's items differ from the local one's:\nlocal:\n%s\nslurm:\n%s", strings.Join(localItems, "\n"), strings.Join(slurmItems, "\n"))
	}
}
