package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
)

const (
	resumeDirEnv   = "HARNESS_TEST_RESUME_DIR"
	resumeIters    = 6
	resumeTaskList = "a,b,c"
)

var resumeTasks = []string{"a", "b", "c"}

// TestResumeHelperProcess is the child the resume test kills: it runs (or
// resumes) a full-coevolution row with slow fake trials in the directory
// the parent names. It does nothing in a normal test run.
func TestResumeHelperProcess(t *testing.T) {
	dir := os.Getenv(resumeDirEnv)
	if dir == "" {
		t.Skip("helper process for TestSIGKILLAndResume")
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := d.ResolvedConfig()
	if err != nil {
		t.Fatal(err)
	}
	tr := buildTestRun(cfg, d, conditions.LearnedMediator, conditions.PolicyAll, resumeTasks, resumeIters)
	tr.trials.delay = 15 * time.Millisecond
	if res := tr.run.Iterate(context.Background()); res.Err != nil {
		t.Fatal(res.Err)
	}
}

// TestSIGKILLAndResume kills a running row with SIGKILL at several points
// and resumes it each time; in the end there is exactly one metric row per
// task per iteration and every Parquet file is readable.
func TestSIGKILLAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	cfg := testConfig(t, func(c *config.Config) {
		c.Experiment.AdvisorBufferMax = 3
		c.Experiment.CoevoInterval = 2
	})
	d, err := rundir.Create(t.TempDir(), rundir.Spec{Manifest: rundir.Manifest{Kind: rundir.KindRun, Condition: "learned_mediator",
		Policy: "all", Seed: 7, Iterations: resumeIters, Tasks: resumeTasks}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeDefaultSkills(d); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestResumeHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), resumeDirEnv+"="+d.Path)
		return cmd
	}
	// Kill after the first, second, ... part appears, plus a random delay
	// that lands the kill anywhere in the following iteration.
	for _, afterParts := range []int{0, 1, 3, 4} {
		cmd := child()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for countParts(d.Path) < afterParts+1 && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		t.Logf("killed with %d parts on disk", countParts(d.Path))
	}
	out, err := child().CombinedOutput()
	if err != nil {
		t.Fatalf("final resume failed: %v\n%s", err, out)
	}
	rows, err := rundir.ReadMetrics(d.Path)
	if err != nil {
		t.Fatalf("metrics unreadable after kills: %v", err)
	}
	seen := map[string]int{}
	for _, r := range rows {
		seen[fmt.Sprintf("%s/%d", r.TaskID, r.Iteration)]++
	}
	for _, task := range resumeTasks {
		for it := 1; it <= resumeIters; it++ {
			if n := seen[fmt.Sprintf("%s/%d", task, it)]; n != 1 {
				t.Errorf("%s iteration %d has %d metric rows, want exactly 1", task, it, n)
			}
		}
	}
	if len(rows) != len(resumeTasks)*resumeIters {
		t.Errorf("%d rows, want %d", len(rows), len(resumeTasks)*resumeIters)
	}
	// Each committed update is in the updates table once, whatever
	// iterations the kills made the run redo.
	assertUpdatesInMetrics(t, d.Path, readJSONL[Provenance](t, filepath.Join(d.Path, rundir.SkillUpdatesFile)))
	// Every history id is unique and every reward names a known entry.
	entries := historyEntries(t, d.Path)
	ids := map[string]bool{}
	for _, e := range entries {
		if ids[e.ID] {
			t.Errorf("history id %s appears twice", e.ID)
		}
		ids[e.ID] = true
	}
	reopened, _ := rundir.Open(d.Path)
	if s := reopened.Manifest().Status; s != rundir.StatusCompleted {
		t.Errorf("status %q after the final resume", s)
	}
}

func countParts(dir string) int {
	parts, _ := filepath.Glob(filepath.Join(dir, "metrics", "part-*.parquet"))
	return len(parts)
}

func TestCorruptStateIsMovedAsideNotTrusted(t *testing.T) {
	tr := newTestRun(t, conditions.NoFeedback, conditions.PolicyNone, []string{"a"}, 2, nil)
	tr.execute(t)
	path := filepath.Join(tr.run.Dir.Path, "state.json")
	if err := os.WriteFile(path, []byte(`{"version": 1, "completed_iter`), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := LoadState(tr.run.Dir.Path)
	if st != nil || !errors.Is(err, rundir.ErrCorruptState) {
		t.Fatalf("LoadState = %v, %v; want rundir.ErrCorruptState", st, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("the corrupt state.json is still in place")
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("corrupt file not kept aside: %v", aside)
	}
	if !strings.Contains(err.Error(), aside[0]) {
		t.Errorf("message does not say where the file went: %v", err)
	}
}
