package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/executor"
)

// Benchmarks of the executor's own cost (docs/performance.md). The ones
// named Container* start containers, so run them with a small fixed count
// (.ci/bench uses -benchtime 5x). Every Docker benchmark skips when no engine
// answers or harness-base:bookworm is missing.

// benchDocker connects to the engine with the test runtime, or skips.
func benchDocker(b *testing.B) *Backend {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := New(ctx, testRuntime())
	if err != nil {
		b.Skipf("no Docker engine: %v", err)
	}
	b.Cleanup(func() { d.Close() })
	ok, err := d.imageExists(ctx, baseImage)
	if err != nil {
		b.Fatal(err)
	}
	if !ok {
		b.Skipf("%s is absent: build it with benchmarks/baseimage/build.sh (make base-image) first", baseImage)
	}
	return d
}

// nopTaskFiles is the smallest task a trial can score: the image is the
// base image plus a workdir, and the verifier only writes reward 1.
var nopTaskFiles = map[string]string{
	"environment/Dockerfile": "FROM " + baseImage + "\nWORKDIR /app\n",
	"tests/test.sh":          "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
}

// benchNopTask writes the nop fixture task and builds its image once, so the
// benchmarks below time the cached path only.
func benchNopTask(b *testing.B, d *Backend, id string) *benchmarks.Task {
	b.Helper()
	dir := filepath.Join(b.TempDir(), id)
	for name, content := range nopTaskFiles {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	task := &benchmarks.Task{ID: id, Dir: dir, Config: benchmarks.TaskConfig{
		Verifier:    benchmarks.VerifierConfig{TimeoutSec: 30},
		Environment: benchmarks.EnvConfig{Workdir: "/app"},
	}}
	if _, _, err := d.EnsureImage(context.Background(), task); err != nil {
		b.Fatalf("build the fixture image: %v", err)
	}
	return task
}

// BenchmarkEnsureImageCached is the price of asking for the image of a task
// whose build context did not change: hash the context, inspect the base
// image and the tag. It fails if the image is ever rebuilt.
func BenchmarkEnsureImageCached(b *testing.B) {
	d := benchDocker(b)
	task := benchNopTask(b, d, "bench-nop")
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, built, err := d.EnsureImage(ctx, task)
		if err != nil {
			b.Fatal(err)
		}
		if built {
			b.Fatal("EnsureImage rebuilt an image whose build context is unchanged")
		}
	}
}

// BenchmarkContextHash is the host-side part of EnsureImage on a 1 MiB
// build context of 64 files; it needs no engine.
func BenchmarkContextHash(b *testing.B) {
	dir := b.TempDir()
	chunk := []byte(strings.Repeat("harness context bytes\n", 745))[:16<<10]
	for i := range 64 {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%8), fmt.Sprintf("f%02d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, chunk, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(64 * int64(len(chunk)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ContextHash(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// bareLifecycle creates, starts, execs `true` in and removes a container
// through the plain API with no hardening and no network: the least any
// sandbox backend must pay per trial. It returns the exec's share.
func bareLifecycle(ctx context.Context, cli *client.Client) (execTime time.Duration, err error) {
	created, err := cli.ContainerCreate(ctx,
		&container.Config{Image: baseImage, Cmd: []string{"sleep", "infinity"},
			Labels: map[string]string{LabelManaged: "1", LabelRun: "bench"}},
		&container.HostConfig{NetworkMode: network.NetworkNone}, nil, nil, "")
	if err != nil {
		return 0, fmt.Errorf("create: %w", err)
	}
	defer func() {
		rerr := cli.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true})
		if rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove: %w", rerr))
		}
	}()
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return 0, fmt.Errorf("start: %w", err)
	}
	t0 := time.Now()
	ex, err := cli.ContainerExecCreate(ctx, created.ID, container.ExecOptions{Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return 0, fmt.Errorf("exec create: %w", err)
	}
	hj, err := cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return 0, fmt.Errorf("exec attach: %w", err)
	}
	_, err = io.Copy(io.Discard, hj.Reader)
	hj.Close()
	if err != nil {
		return 0, fmt.Errorf("exec output: %w", err)
	}
	// The engine may report the exec running for a moment after its stream ends.
	for {
		ins, err := cli.ContainerExecInspect(ctx, ex.ID)
		if err != nil {
			return 0, fmt.Errorf("exec inspect: %w", err)
		}
		if !ins.Running {
			if ins.ExitCode != 0 {
				return 0, fmt.Errorf("true exited %d", ins.ExitCode)
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(t0), nil
}

// BenchmarkContainerLifecycle compares one container's life three ways:
// the plain API (the floor), the harness's hardened Start+Exec+Close, and
// the docker CLI's `docker run --rm` that people compare against.
func BenchmarkContainerLifecycle(b *testing.B) {
	d := benchDocker(b)
	ctx := context.Background()
	b.Run("api", func(b *testing.B) {
		var execTotal time.Duration
		for i := 0; i < b.N; i++ {
			e, err := bareLifecycle(ctx, d.cli)
			if err != nil {
				b.Fatalf("bare lifecycle: %v", err)
			}
			execTotal += e
		}
		b.ReportMetric(ms(execTotal)/float64(b.N), "exec-ms/op")
	})
	b.Run("harness", func(b *testing.B) {
		task := &benchmarks.Task{ID: "bench-lifecycle"}
		for i := 0; i < b.N; i++ {
			c, err := d.Start(ctx, executor.ContainerSpec{Image: baseImage, Task: task, RunID: "bench", TrialID: fmt.Sprint(i)})
			if err != nil {
				b.Fatal(err)
			}
			res, err := c.Exec(ctx, executor.ExecRequest{Cmd: []string{"true"}, Timeout: 30 * time.Second})
			if cerr := c.Close(ctx); err == nil {
				err = cerr
			}
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("exec true: exit %d, %v", res.ExitCode, err)
			}
		}
	})
	b.Run("cli", func(b *testing.B) {
		if _, err := exec.LookPath("docker"); err != nil {
			b.Skip("no docker CLI on PATH")
		}
		for i := 0; i < b.N; i++ {
			out, err := exec.CommandContext(ctx, "docker", "run", "--rm", baseImage, "true").CombinedOutput()
			if err != nil {
				b.Fatalf("docker run: %v\n%s", err, out)
			}
		}
	})
}

// phaseClock adds up the time a trial spends in each sandbox call.
type phaseClock struct {
	mu     sync.Mutex
	phases map[string]time.Duration
}

func (p *phaseClock) add(phase string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.phases == nil {
		p.phases = map[string]time.Duration{}
	}
	p.phases[phase] += d
}

func (p *phaseClock) take() map[string]time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.phases
	p.phases = nil
	return out
}

// clockedBackend wraps a Backend so each sandbox reports its calls' times.
type clockedBackend struct {
	executor.Backend
	clock *phaseClock
}

func (c clockedBackend) StartSandbox(ctx context.Context, spec executor.ContainerSpec) (executor.ClosableSandbox, error) {
	sb, err := c.Backend.StartSandbox(ctx, spec)
	if err != nil {
		return nil, err
	}
	return clockedSandbox{ClosableSandbox: sb, clock: c.clock}, nil
}

type clockedSandbox struct {
	executor.ClosableSandbox
	clock *phaseClock
}

func (s clockedSandbox) Exec(ctx context.Context, req executor.ExecRequest) (executor.ExecResult, error) {
	phase := "exec"
	// On a root image the reset of the verifier's directories and the tars
	// of the tests and logs ride along in the exec of test.sh, so they are
	// timed with it; beyond-bare-ms counts them as the harness's.
	if len(req.Cmd) > 0 && strings.Contains(req.Cmd[len(req.Cmd)-1], "bash /tests/test.sh") {
		phase = "test.sh"
	}
	defer s.time(phase)()
	return s.ClosableSandbox.Exec(ctx, req)
}

// DefaultUserIsRoot passes the container's answer on, so the verifier takes
// the same path as in a real trial.
func (s clockedSandbox) DefaultUserIsRoot() bool {
	r, ok := s.ClosableSandbox.(interface{ DefaultUserIsRoot() bool })
	return ok && r.DefaultUserIsRoot()
}

func (s clockedSandbox) CopyDirIn(ctx context.Context, hostDir, dst string) error {
	defer s.time("copy-in")()
	return s.ClosableSandbox.CopyDirIn(ctx, hostDir, dst)
}

func (s clockedSandbox) CopyOut(ctx context.Context, p string, w io.Writer) error {
	defer s.time("copy-out")()
	return s.ClosableSandbox.CopyOut(ctx, p, w)
}

func (s clockedSandbox) Close(ctx context.Context) error {
	defer s.time("close")()
	return s.ClosableSandbox.Close(ctx)
}

func (s clockedSandbox) time(phase string) func() {
	t0 := time.Now()
	return func() { s.clock.add(phase, time.Since(t0)) }
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkContainerTrialNop runs full trials (cached image, fresh hardened
// container, nop agent, verifier that writes reward 1, removal, trace and
// logs on disk) and splits each into its parts. Before each trial, with the
// timer stopped, a bare API lifecycle is measured on the same engine, so
// both see the same load.
//
// harness-ms/op is the harness's own share: the trial's wall time minus the
// bare lifecycle's create+start+remove, the exec of test.sh and the agent
// (the nop agent takes microseconds).
// harness-% is that share over the bare lifecycle (create+start+exec+remove).
// beyond-bare-ms/op is stricter: the trial's wall time minus the whole bare
// lifecycle and the agent, so the verifier exec's own work (resetting its
// directories, the tars, bash and the trivial test.sh) counts against the
// harness; beyond-bare-% is that over the bare lifecycle.
func BenchmarkContainerTrialNop(b *testing.B) {
	d := benchDocker(b)
	task := benchNopTask(b, d, "bench-nop")
	clock := &phaseClock{}
	r := &executor.Runner{Backend: clockedBackend{Backend: d, clock: clock}, Runtime: testRuntime()}
	ctx := context.Background()
	jobs := b.TempDir()

	var total, bare, bareExec, build, setup, agent, testSh, prepare, copyIn, copyOut, closing time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		t0 := time.Now()
		e, err := bareLifecycle(ctx, d.cli)
		if err != nil {
			b.Fatalf("bare lifecycle: %v", err)
		}
		bare += time.Since(t0)
		bareExec += e
		clock.take()
		b.StartTimer()

		tr := r.Run(ctx, executor.TrialSpec{Task: task, Agent: executor.NopAgent{}, JobDir: filepath.Join(jobs, fmt.Sprint(i)),
			RunID: "bench", Row: "bench", Iteration: 1, TrialID: fmt.Sprintf("bench-%d", i), Seed: 1, Caller: "executor/bench"})

		b.StopTimer()
		if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 1 {
			b.Fatalf("nop trial: status %s reward %v errors %v", tr.Status, tr.Reward, tr.Errors)
		}
		p := clock.take()
		total += tr.Timings.Total
		build += tr.Timings.Build
		setup += tr.Timings.Setup
		agent += tr.Timings.Agent
		testSh += p["test.sh"]
		prepare += p["exec"]
		copyIn += p["copy-in"]
		copyOut += p["copy-out"]
		closing += p["close"]
		b.StartTimer()
	}
	b.StopTimer()

	n := float64(b.N)
	harness := total - (bare - bareExec) - testSh - agent
	// The rest is Go work on the host: job directory, trace.json, reward
	// parsing, log writes; everything outside a sandbox or engine call.
	host := total - build - setup - agent - prepare - copyIn - copyOut - testSh - closing
	b.ReportMetric(ms(bare)/n, "bare-ms/op")
	b.ReportMetric(ms(testSh)/n, "testsh-ms/op")
	b.ReportMetric(ms(harness)/n, "harness-ms/op")
	b.ReportMetric(100*float64(harness)/float64(bare), "harness-%")
	beyond := total - bare - agent
	b.ReportMetric(ms(beyond)/n, "beyond-bare-ms/op")
	b.ReportMetric(100*float64(beyond)/float64(bare), "beyond-bare-%")
	b.ReportMetric(ms(build)/n, "build-ms/op")
	b.ReportMetric(ms(setup)/n, "setup-ms/op")
	b.ReportMetric(ms(prepare)/n, "prepare-ms/op")
	b.ReportMetric(ms(copyIn)/n, "copyin-ms/op")
	b.ReportMetric(ms(copyOut)/n, "copyout-ms/op")
	b.ReportMetric(ms(closing)/n, "close-ms/op")
	b.ReportMetric(ms(host)/n, "host-ms/op")
}
