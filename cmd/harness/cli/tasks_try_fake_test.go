package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
)

// refusingBackend has every image but starts no sandbox: the trial ends as
// an environment failure without an engine.
type refusingBackend struct {
	started []executor.ContainerSpec
	closed  bool
}

func (b *refusingBackend) EnsureImage(_ context.Context, task *benchmarks.Task) (string, bool, error) {
	return "harness-task-" + task.ID + ":1", false, nil
}

func (b *refusingBackend) StartSandbox(_ context.Context, spec executor.ContainerSpec) (executor.ClosableSandbox, error) {
	b.started = append(b.started, spec)
	return nil, &executor.EnvError{Op: "start", Err: errors.New("no room for another container")}
}

func (b *refusingBackend) Close() error { b.closed = true; return nil }

// tryFactory runs `tasks try` on backend, or fails to connect with openErr,
// and records the runtime it was opened with.
func tryFactory(backend *refusingBackend, openErr error, rt *config.ExecutorRuntime) *Factory {
	f := testFactory()
	f.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	f.Sandbox = func(_ context.Context, got config.ExecutorRuntime) (SandboxBackend, error) {
		*rt = got
		if openErr != nil {
			return nil, openErr
		}
		return backend, nil
	}
	return f
}

func TestTasksTryOnAFakeBackend(t *testing.T) {
	env := newTaskEnv(t, "")
	writeTask(t, env.tasksDir, "fake-task", taskFiles("fake"))

	t.Run("the trial goes through the backend it is given", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "try")
		b := &refusingBackend{}
		var rt config.ExecutorRuntime
		r := runCLI(t, tryFactory(b, nil, &rt), "tasks", "try", "fake-task", "--config-dir", env.configDir, "--out", out, "--keep", "--json")
		if r.code != ExitEnvFailures {
			t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, ExitEnvFailures, r.out, r.errOut)
		}
		if !rt.KeepContainers || !b.closed {
			t.Errorf("keep_containers %v, backend closed %v; want both", rt.KeepContainers, b.closed)
		}
		const job = "20260102T030405Z-fake-task"
		if len(b.started) != 1 || b.started[0].RunID != "tasks-try-"+job || b.started[0].Row != "tasks-try" ||
			b.started[0].TrialID != job || b.started[0].Iteration != 1 || b.started[0].Image != "harness-task-fake-task:1" {
			t.Fatalf("sandboxes asked for: %+v", b.started)
		}
		var tr executor.Trace
		if err := json.Unmarshal([]byte(r.out), &tr); err != nil {
			t.Fatalf("stdout is not a trace: %v\n%s", err, r.out)
		}
		if tr.Status != executor.StatusEnvFailure || tr.Agent != "oracle" || tr.TaskID != "fake-task" || tr.JobDir != filepath.Join(out, job) {
			t.Errorf("trace: status %s, agent %s, task %s, job dir %s", tr.Status, tr.Agent, tr.TaskID, tr.JobDir)
		}
		if _, err := os.Stat(filepath.Join(out, job, "trace.json")); err != nil {
			t.Errorf("trace not saved: %v", err)
		}
		for _, want := range []string{"trying task fake-task (task_dirs, ", "with the oracle agent; job directory " + filepath.Join(out, job),
			"environment failure: nothing was scored"} {
			if !strings.Contains(r.errOut, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.errOut)
			}
		}
		if strings.Contains(r.errOut, "the container was kept") {
			t.Errorf("no container was started, yet stderr says one was kept:\n%s", r.errOut)
		}
	})

	t.Run("no engine: exit 3 and nothing made", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "try")
		var rt config.ExecutorRuntime
		r := runCLI(t, tryFactory(nil, errors.New("cannot reach the Docker engine"), &rt), "tasks", "try", "fake-task", "--agent", "nop",
			"--config-dir", env.configDir, "--out", out)
		if r.code != ExitEnvFailures || !strings.Contains(r.errOut, "cannot reach the Docker engine; nothing was run") {
			t.Errorf("exit %d, stderr %q", r.code, r.errOut)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("--out was created although nothing ran")
		}
	})
}
