package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/harness/rundir"
)

const (
	leftoverOutEnv  = "HARNESS_TEST_LEFTOVER_OUT"
	leftoverKindEnv = "HARNESS_TEST_LEFTOVER_KIND"
)

var leftoverTasks = []string{"orbital-period", "log-analysis"}

// leftoverPlan is the run (or one-row matrix) the helper starts and the
// test resumes.
func leftoverPlan(t *testing.T, kind, out, resume string) *Plan {
	t.Helper()
	cfg := e2eConfig(t)
	o := PlanOptions{Tasks: leftoverTasks, Condition: conditions.NoFeedback, Policy: conditions.PolicyNone, Iterations: 2,
		Seeds: []int64{5}, Agent: AgentLab, Offline: true, Concurrency: 2, OutDir: out, Resume: resume}
	if resume != "" {
		o = PlanOptions{Resume: resume, Offline: true, Concurrency: 2}
	}
	var p *Plan
	var err error
	if kind == "matrix" {
		if resume == "" {
			o.Condition, o.Policy, o.Rows = "", conditions.Policy{}, BaselineRows()[:1]
		}
		p, err = BuildMatrixPlan(cfg, o)
	} else {
		p, err = BuildRunPlan(cfg, o)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLeftoverHelperProcess is the process the test below kills mid-trial.
func TestLeftoverHelperProcess(t *testing.T) {
	out := os.Getenv(leftoverOutEnv)
	if out == "" {
		t.Skip("helper process for TestResumeRemovesWhatAKilledProcessLeft")
	}
	p := leftoverPlan(t, os.Getenv(leftoverKindEnv), out, "")
	if _, err := ExecutePlan(context.Background(), onEngine(t, ExecOptions{Plan: p})); err != nil {
		t.Fatal(err)
	}
}

// A run (and a matrix) killed with SIGKILL while a trial's container runs
// leaves that container behind; the resume removes it before any trial
// starts, says so, and finishes the run with the dataset an uninterrupted
// run of the same plan gives.
func TestResumeRemovesWhatAKilledProcessLeft(t *testing.T) {
	requireEngine(t)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	host, _ := os.Hostname()
	for _, kind := range []string{"run", "matrix"} {
		t.Run(kind, func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestLeftoverHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), leftoverOutEnv+"="+out, leftoverKindEnv+"="+kind)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			owner := filters.NewArgs(filters.Arg("label", docker.LabelOwner+"="+host+"/"+strconv.Itoa(cmd.Process.Pid)))
			deadline := time.Now().Add(3 * time.Minute)
			for {
				list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: owner})
				if err != nil {
					t.Fatal(err)
				}
				if len(list) > 0 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the helper started no container within 3 minutes")
				}
				time.Sleep(20 * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			t.Cleanup(func() {
				list, _ := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: owner})
				for _, c := range list {
					cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
				}
			})
			left, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: owner})
			if err != nil || len(left) == 0 {
				t.Fatalf("the killed process left no container (%v): the test did not kill it mid-trial", err)
			}
			dirs, _ := filepath.Glob(filepath.Join(out, "*"))
			if len(dirs) != 1 {
				t.Fatalf("directories under %s: %v", out, dirs)
			}

			var swept []string
			res, err := ExecutePlan(context.Background(), onEngine(t, ExecOptions{Plan: leftoverPlan(t, kind, "", dirs[0]),
				Events: func(e Event) {
					if e.Kind == EventLeftoversRemoved {
						swept = append(swept, e.Message)
					}
				}}))
			if err != nil || res.Status != rundir.StatusCompleted {
				t.Fatalf("resume: %v, %+v", err, res)
			}
			remain, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: owner})
			if err != nil || len(remain) != 0 {
				t.Errorf("%d containers of the killed process remain after the resume (%v)", len(remain), err)
				for _, c := range remain {
					t.Logf("left: %s %s %s %v", c.ID[:12], c.State, c.Status, c.Labels)
				}
			}
			// A container whose creation the engine finished after the kill
			// is removed too (at the start, or when the run ends), so the
			// first sweep counts at least those seen.
			var n int
			if len(swept) == 0 {
				t.Error("the resume did not say what it removed")
			} else if _, err := fmt.Sscanf(swept[0], "removed %d containers", &n); err != nil || n < len(left) {
				t.Errorf("the resume said %q, want at least %d containers removed", swept[0], len(left))
			}
			// The same plan, uninterrupted, gives the same dataset.
			whole, err := ExecutePlan(context.Background(), onEngine(t, ExecOptions{Plan: leftoverPlan(t, kind, t.TempDir(), "")}))
			if err != nil || whole.Status != rundir.StatusCompleted {
				t.Fatalf("uninterrupted run: %v, %+v", err, whole)
			}
			got, want := outcomes(t, dirs[0]), outcomes(t, whole.Dir)
			if len(got) != len(leftoverTasks)*2 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("resumed dataset:\n%s\nuninterrupted:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// outcomes lists what each trial of a run or matrix measured, sorted.
func outcomes(t *testing.T, dir string) []string {
	t.Helper()
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		reward := "none"
		if r.Reward != nil {
			reward = fmt.Sprint(*r.Reward)
		}
		tests := "none"
		if r.TestsReported {
			tests = fmt.Sprintf("%d/%d", orZero(r.TestsPassed), orZero(r.TestsTotal))
		}
		out = append(out, fmt.Sprintf("%s %d %s %s %s %s", r.Row, r.Iteration, r.TaskID, r.Status, reward, tests))
	}
	slices.Sort(out)
	return out
}
