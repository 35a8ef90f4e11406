package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/skills"
)

// Benchmarks of the orchestrator's own cost (docs/performance.md). The ones
// named Container* start containers, so run them with a small fixed count
// (.ci/bench uses -benchtime 5x); they skip when no engine answers or
// harness-base:bookworm is missing.

const benchBaseImage = "harness-base:bookworm"

// newBenchRun is a fresh run directory and Run on fake trials and the
// offline provider, built like the tests' runs (buildTestRun).
func newBenchRun(b *testing.B, base string, cond conditions.Condition, pol conditions.Policy, agent string, taskIDs []string, iterations int) *testRun {
	b.Helper()
	cfg, err := config.Default()
	if err != nil {
		b.Fatal(err)
	}
	cfg.SetOffline()
	parent, err := os.MkdirTemp(base, "run-")
	if err != nil {
		b.Fatal(err)
	}
	d, err := rundir.Create(parent, rundir.Spec{Manifest: rundir.Manifest{Kind: rundir.KindRun, Condition: string(cond),
		Policy: pol.String(), Seed: 7, Iterations: iterations, Tasks: taskIDs}, Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	if err := skills.WriteDefaults(filepath.Join(d.Path, "skills")); err != nil {
		b.Fatal(err)
	}
	tr := buildTestRun(cfg, d, cond, pol, taskIDs, iterations)
	tr.run.AgentKind = agent
	return tr
}

// BenchmarkIterationOverhead is the orchestrator's own work per trial, with
// the trials themselves faked away: planning bookkeeping, the trace file,
// history and delayed rewards, the metrics part, the state checkpoint and,
// for the lab, the offline Planner, Mediator and co-evolution flows. Each op
// is a whole run of 4 tasks x 3 iterations; ns/trial is the figure to read.
func BenchmarkIterationOverhead(b *testing.B) {
	cases := []struct {
		name  string
		agent string
		cond  conditions.Condition
		pol   conditions.Policy
	}{
		{"nop/no_feedback", AgentNop, conditions.NoFeedback, conditions.PolicyNone},
		{"lab/learned_mediator/all", AgentLab, conditions.LearnedMediator, conditions.PolicyAll},
	}
	tasks := []string{"a", "b", "c", "d"}
	const iterations = 3
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			base := b.TempDir()
			trials := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				tr := newBenchRun(b, base, c.cond, c.pol, c.agent, tasks, iterations)
				b.StartTimer()
				res := tr.run.Iterate(context.Background())
				if res.Err != nil || res.Scored != len(tasks)*iterations {
					b.Fatalf("run: status %s, %d scored of %d, err %v", res.Status, res.Scored, len(tasks)*iterations, res.Err)
				}
				trials += res.Trials
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(trials), "ns/trial")
		})
	}
}

// benchEngine skips unless an engine answers and has the base image.
func benchEngine(b *testing.B) {
	b.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Skipf("no Docker client: %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		b.Skipf("no Docker engine: %v", err)
	}
	if _, err := cli.ImageInspect(ctx, benchBaseImage); err != nil {
		b.Skipf("%s is absent: build it with `make base-image` first", benchBaseImage)
	}
}

// benchNopTasks writes n copies of the smallest scorable task: the base
// image plus a workdir, and a verifier that writes reward 1.
func benchNopTasks(b *testing.B, n int) []*benchmarks.Task {
	b.Helper()
	files := map[string]string{
		"environment/Dockerfile": "FROM " + benchBaseImage + "\nWORKDIR /app\n",
		"tests/test.sh":          "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
		"instruction.md":         "Do nothing.\n",
	}
	root := b.TempDir()
	var tasks []*benchmarks.Task
	for i := range n {
		id := fmt.Sprintf("bench-nop-%d", i)
		for name, content := range files {
			p := filepath.Join(root, id, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		tasks = append(tasks, &benchmarks.Task{ID: id, Dir: filepath.Join(root, id), Instruction: "Do nothing.",
			Config: benchmarks.TaskConfig{
				Verifier:    benchmarks.VerifierConfig{TimeoutSec: 30},
				Environment: benchmarks.EnvConfig{Workdir: "/app"},
			}})
	}
	return tasks
}

// BenchmarkContainerRunNop is the wall time of a run of 4 nop trials (4
// tasks, one iteration) on the real engine, through the orchestrator and
// executor.Runner, at -j 1 and -j 2. Images are built before the timer, so
// the ratio of the two is what concurrency buys on this machine.
func BenchmarkContainerRunNop(b *testing.B) {
	benchEngine(b)
	const nTasks = 4
	tasks := benchNopTasks(b, nTasks)
	for _, j := range []int{1, 2} {
		b.Run(fmt.Sprintf("j=%d", j), func(b *testing.B) {
			ctx := context.Background()
			rt := config.ExecutorRuntime{
				AgentTimeout:    config.Duration{Duration: time.Minute},
				VerifierTimeout: config.Duration{Duration: time.Minute},
				BuildTimeout:    config.Duration{Duration: 5 * time.Minute},
				CPUs:            1, MemoryMB: 512, PidsLimit: 256,
				Concurrency: j, MaxContainers: j,
			}
			d, err := docker.New(ctx, rt)
			if err != nil {
				b.Skipf("no Docker engine: %v", err)
			}
			defer d.Close()
			for _, task := range tasks {
				if _, _, err := d.EnsureImage(ctx, task); err != nil {
					b.Fatalf("build the fixture image: %v", err)
				}
			}
			runner := &executor.Runner{Backend: d, Runtime: rt}
			base := b.TempDir()
			ids := make([]string, nTasks)
			for i, t := range tasks {
				ids[i] = t.ID
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				tr := newBenchRun(b, base, conditions.NoFeedback, conditions.PolicyNone, AgentNop, ids, 1)
				tr.run.Tasks, tr.run.Trials, tr.run.Concurrency = tasks, runner, j
				b.StartTimer()
				res := tr.run.Iterate(ctx)
				if res.Err != nil || res.Scored != nTasks {
					b.Fatalf("run at -j %d: status %s, %d of %d scored, %d env failures, err %v",
						j, res.Status, res.Scored, nTasks, res.EnvFailures, res.Err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*nTasks), "ms/trial")
		})
	}
}

// BenchmarkIterationGrowth checks that the orchestrator's cost per trial
// does not grow with the run: one op is a whole offline lab run of 50 tasks
// x 50 iterations on fake trials, under learned_mediator (a Planner and a
// Mediator call per trial, so the ledger gains callers with every trial)
// and without skill updates, whose validation trials would make some
// iterations do more work than others. It reports the cost per trial of
// iteration 2 (early-ns/trial) and of iteration 50 (late-ns/trial), each
// an iteration's wall time over its trials, and their ratio (late/early),
// plus the medians over iterations 2-11 and 41-50 (early10-, late10-ns/trial)
// and their ratio, which a busy machine disturbs less.
func BenchmarkIterationGrowth(b *testing.B) {
	const nTasks, iterations = 50, 50
	tasks := make([]string, nTasks)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("t%02d", i)
	}
	base := b.TempDir()
	perTrial := make([]float64, iterations+1)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tr := newBenchRun(b, base, conditions.LearnedMediator, conditions.PolicyNone, AgentLab, tasks, iterations)
		var started time.Time
		tr.run.Events = func(e Event) {
			switch e.Kind {
			case EventIterationStart:
				started = time.Now()
			case EventIterationDone:
				perTrial[e.Iteration] += float64(time.Since(started).Nanoseconds()) / nTasks / float64(b.N)
			}
		}
		b.StartTimer()
		if res := tr.run.Iterate(context.Background()); res.Err != nil || res.Scored != nTasks*iterations {
			b.Fatalf("run: status %s, %d scored of %d, err %v", res.Status, res.Scored, nTasks*iterations, res.Err)
		}
	}
	b.StopTimer()
	median := func(from, to int) float64 {
		v := slices.Clone(perTrial[from : to+1])
		slices.Sort(v)
		return (v[(len(v)-1)/2] + v[len(v)/2]) / 2
	}
	series := make([]string, 0, iterations)
	for it := 1; it <= iterations; it++ {
		series = append(series, fmt.Sprintf("%.1f", perTrial[it]/1e6))
	}
	b.Logf("ms per trial by iteration: %s", strings.Join(series, " "))
	b.ReportMetric(perTrial[2], "early-ns/trial")
	b.ReportMetric(perTrial[iterations], "late-ns/trial")
	b.ReportMetric(perTrial[iterations]/perTrial[2], "late/early")
	early, late := median(2, 11), median(iterations-9, iterations)
	b.ReportMetric(early, "early10-ns/trial")
	b.ReportMetric(late, "late10-ns/trial")
	b.ReportMetric(late/early, "late10/early10")
}
