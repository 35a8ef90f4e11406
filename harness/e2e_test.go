package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/dockertest"
	"github.com/mediated-coevo/harness/skills"
)

// requireEngine skips a test when no Docker engine answers or the local
// base image is missing; CI has both, so there these tests always run.
func requireEngine(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("Docker end-to-end test")
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		dockertest.Unavailable(t, "no Docker client: %v", err)
	}
	defer cli.Close()
	if _, err := cli.Ping(context.Background()); err != nil {
		dockertest.Unavailable(t, "no Docker engine: %v", err)
	}
	if _, err := cli.ImageInspect(context.Background(), "harness-base:bookworm"); err != nil {
		dockertest.Unavailable(t, "harness-base:bookworm is absent: build it with `make base-image` first")
	}
}

// onEngine completes o as the command line does: the plan's tasks and
// validation pool resolved, the Docker backend and the configured model
// providers.
func onEngine(t *testing.T, o ExecOptions) ExecOptions {
	t.Helper()
	cfg := o.Plan.Config()
	r, err := benchmarks.NewResolver(cfg.ExecutorRuntime)
	if err != nil {
		t.Fatal(err)
	}
	if o.Tasks, err = r.Resolve(context.Background(), o.Plan.Tasks); err != nil {
		t.Fatal(err)
	}
	if ids := cfg.Validation.Pool; len(ids) > 0 {
		if o.Pool, err = r.Resolve(context.Background(), ids); err != nil {
			t.Fatal(err)
		}
	}
	d, err := docker.New(context.Background(), cfg.ExecutorRuntime)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	o.Backend, o.Providers = d, providers.New
	return o
}

// offlineIterations is how long TestOfflineRunEachCondition runs each
// condition.
const offlineIterations = 2

func e2eConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	// Keep the smoke tasks' materialised copies out of the user's cache.
	cfg.ExecutorRuntime.TaskCacheDir = filepath.Join(t.TempDir(), "cache")
	return cfg
}

// conditionTasks are the smoke tasks each condition runs on: what differs
// between conditions is the lab around the trial, not the task, and every
// smoke task's image and verifier are checked on the engine by
// executor/docker's TestSmokeTasksOracleSolvesNopFails.
var conditionTasks = []string{"log-analysis", "orbital-period"}

// TestOfflineRunEachCondition runs two smoke tasks offline for two
// iterations (the second is the first to read feedback) under each of the
// five conditions and checks the directory. The runs are independent and
// run side by side, as many as go test's -parallel allows.
func TestOfflineRunEachCondition(t *testing.T) {
	requireEngine(t)
	for _, cond := range conditions.All() {
		t.Run(string(cond), func(t *testing.T) {
			t.Parallel()
			cfg := e2eConfig(t)
			cfg.Experiment.SharedNotes = "Check every output path twice."
			p, err := BuildRunPlan(cfg, PlanOptions{Tasks: conditionTasks, Condition: cond,
				Policy: conditions.PolicyNone, Iterations: offlineIterations, Seeds: []int64{42}, Agent: AgentLab, Offline: true,
				Concurrency: 2, OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			out, err := ExecutePlan(context.Background(), onEngine(t, ExecOptions{Plan: p}))
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != rundir.StatusCompleted || out.EnvFailures != 0 {
				t.Fatalf("outcome %+v", out)
			}
			for _, rel := range []string{"config.toml", "run.json", "state.json", "metrics", "artifacts/traces",
				"artifacts/reports", "artifacts/validation", "history/history.jsonl", "jobs", "skills/executor/SKILL.md",
				"skills_snapshots"} {
				if _, err := os.Stat(filepath.Join(out.Dir, rel)); err != nil {
					t.Errorf("missing %s: %v", rel, err)
				}
			}
			rows, err := rundir.ReadMetrics(out.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if want := len(conditionTasks) * offlineIterations; len(rows) != want {
				t.Errorf("%d metric rows, want %d", len(rows), want)
			}
			reports, _ := filepath.Glob(filepath.Join(out.Dir, "artifacts", "reports", "*", "*.json"))
			if cond.MediatorRuns() != (len(reports) > 0) {
				t.Errorf("condition %s wrote %d reports", cond, len(reports))
			}
			m := out.Rows[0]
			d, _ := rundir.Open(m.Dir)
			if !d.Manifest().Offline {
				t.Error("run.json does not say the run was offline")
			}
		})
	}
}

// TestOfflineFullCoevolutionOnSmoke is the evolution acceptance run: the
// offline provider makes the Advisor approve and reject, and the gate adopt
// and reject, deterministically. It runs in the in-memory world: the flow
// from proposals to adopted skills is under test, not the engine, whose
// validation and reflection trials the command-line tests run in containers
// (TestVerifierDiagnostics, TestMatrixWithSplitsEvaluatesHeldOutTasks).
func TestOfflineFullCoevolutionOnSmoke(t *testing.T) {
	cfg := e2eConfig(t)
	cfg.Experiment.AdvisorBufferMax = 3
	cfg.Experiment.CoevoInterval = 2
	// The flow is under test here, not the gate's statistics (its own
	// simulations cover those): one paired trial per task and side under
	// no_regress decides quickly, adopting an edit that changes nothing and
	// rejecting one that makes any task worse.
	cfg.Validation.Rule = "no_regress"
	cfg.Validation.TrialsPerTask, cfg.Validation.MaxTrials, cfg.Validation.EarlyStop = 1, 1, false
	p, err := BuildRunPlan(cfg, PlanOptions{Tasks: benchmarks.SmokeIDs(), Preset: "full_coevolution", Iterations: 8,
		Seeds: []int64{42}, Agent: AgentLab, Offline: true, Concurrency: 2, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	repoSkills, err := skills.ValidateDefaults()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ExecutePlan(context.Background(), onMemWorld(t, ExecOptions{Plan: p}))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != rundir.StatusCompleted {
		t.Fatalf("outcome %+v", out)
	}
	dir := out.Rows[0].Dir
	updates := readJSONL[Provenance](t, filepath.Join(dir, rundir.SkillUpdatesFile))
	rejected := readJSONL[rejection](t, filepath.Join(dir, rundir.RejectedFile))
	reflections := readJSONL[reflectionRecord](t, filepath.Join(dir, rundir.ReflectionsFile))
	var adopted, candidatesRejected, batchesRejected int
	for _, u := range updates {
		if u.Flow == "advisor_gate" {
			adopted++
		}
	}
	for _, r := range rejected {
		switch r.Type {
		case "candidate":
			candidatesRejected++
		case "batch":
			batchesRejected++
		}
	}
	t.Logf("adopted %d, candidates rejected %d, batches rejected %d, reflections %d", adopted, candidatesRejected, batchesRejected, len(reflections))
	if adopted == 0 || candidatesRejected+batchesRejected == 0 {
		t.Errorf("want at least one adopted and one rejected executor-skill change")
	}
	byIt := map[int]int{}
	for _, r := range reflections {
		byIt[r.Iteration]++
	}
	for _, it := range []int{2, 4, 6, 8} {
		if byIt[it] != 2 {
			t.Errorf("iteration %d: %d reflections, want planner and mediator", it, byIt[it])
		}
	}
	validations, _ := filepath.Glob(filepath.Join(dir, "artifacts", "validation", "*", "decision.json"))
	if len(validations) == 0 {
		t.Error("no validation evidence on disk")
	}
	assertUpdatesInMetrics(t, dir, updates)
	after, err := skills.ValidateDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for i := range after.Roles {
		if after.Roles[i].Hash != repoSkills.Roles[i].Hash {
			t.Errorf("the shipped %s skill changed", after.Roles[i].Role)
		}
	}
}

// TestMatrixInterruptedMidRowResumes cancels a matrix in the middle of a
// row and resumes it: no metric row is missing or duplicated.
func TestMatrixInterruptedMidRowResumes(t *testing.T) {
	requireEngine(t)
	cfg := e2eConfig(t)
	tasks := []string{"orbital-period", "log-analysis"}
	p, err := BuildMatrixPlan(cfg, PlanOptions{Tasks: tasks, Rows: BaselineRows()[:3], Iterations: 2,
		Seeds: []int64{42}, Agent: AgentLab, Offline: true, Concurrency: 2, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var done atomic.Int32
	out, err := ExecutePlan(ctx, onEngine(t, ExecOptions{Plan: p, Events: func(e Event) {
		if e.Kind == "trial_done" && done.Add(1) == 5 {
			cancel() // mid-row: the third iteration-trial of some row
		}
	}}))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != rundir.StatusInterrupted {
		t.Fatalf("status %s after cancel, want interrupted", out.Status)
	}
	resumed, err := BuildMatrixPlan(cfg, PlanOptions{Resume: out.Dir, Offline: true, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	out2, err := ExecutePlan(context.Background(), onEngine(t, ExecOptions{Plan: resumed}))
	if err != nil {
		t.Fatal(err)
	}
	if out2.Status != rundir.StatusCompleted {
		t.Fatalf("resumed status %s", out2.Status)
	}
	rows, err := rundir.ReadMetrics(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range rows {
		seen[fmt.Sprintf("%s/%s/%d", r.Row, r.TaskID, r.Iteration)]++
	}
	if want := 3 * len(tasks) * 2; len(rows) != want || len(seen) != want {
		t.Errorf("%d rows covering %d row-task-iterations, want %d of each", len(rows), len(seen), want)
	}

	// Once more: every row is complete, so nothing runs, and each still
	// reports its two iterations.
	again, err := BuildMatrixPlan(cfg, PlanOptions{Resume: out.Dir, Offline: true, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	out3, err := ExecutePlan(context.Background(), onEngine(t, ExecOptions{Plan: again}))
	if err != nil {
		t.Fatal(err)
	}
	if out3.Status != rundir.StatusCompleted || out3.Trials != 0 || !out3.Resumed {
		t.Errorf("resume of a completed matrix: status %s, %d trials, resumed %v", out3.Status, out3.Trials, out3.Resumed)
	}
	for _, ro := range out3.Rows {
		if ro.Result.Iterations != 2 {
			t.Errorf("row %s reports %d iterations, want 2", ro.Name, ro.Result.Iterations)
		}
	}
}
