package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/mediated-coevo/harness/executor"
)

// The marker ends the first command's stream wherever the engine's frames
// cut it: what comes before it passes on whole, the marker and all after
// it do not, and its value is read.
func TestMarkWriter(t *testing.T) {
	pat := "\n" + firstMarker + " tok "
	tests := []struct {
		name      string
		chunks    []string
		wantOut   string
		wantValue string
		wantDone  bool
	}{
		{"one write", []string{"OK\n" + pat + "0\nlater\n"}, "OK\n", "0", true},
		{"no newline before", []string{"OK" + pat + "3\n"}, "OK", "3", true},
		{"cut inside the marker", []string{"out", pat[:5], pat[5:12], pat[12:] + "12", "4\n", "tail"}, "out", "124", true},
		{"a near miss passes on", []string{"a\nharness: first commander\n", pat + "skipped\n"}, "a\nharness: first commander\n", "skipped", true},
		{"another token is output", []string{"\n" + firstMarker + " other 0\n", "x"}, "\n" + firstMarker + " other 0\nx", "", false},
		{"no marker yet", []string{"partial\n" + pat[:4]}, "partial\n", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &capWriter{max: 1 << 10}
			marked := 0
			m := &markWriter{w: out, pat: []byte(pat), marked: func() { marked++ }}
			for _, c := range tt.chunks {
				if n, err := m.Write([]byte(c)); n != len(c) || err != nil {
					t.Fatalf("write %q: %d, %v", c, n, err)
				}
			}
			if got := out.String(); got != tt.wantOut {
				t.Errorf("passed on %q, want %q", got, tt.wantOut)
			}
			if m.done() != tt.wantDone || m.value != tt.wantValue || marked != map[bool]int{true: 1}[tt.wantDone] {
				t.Errorf("done %v value %q marked %d, want %v %q", m.done(), m.value, marked, tt.wantDone, tt.wantValue)
			}
		})
	}
}

// The main process runs the command after the token, its environment and
// "--", under timeout with the agent's limit.
func TestFirstEntrypoint(t *testing.T) {
	got := strings.Join(firstEntrypoint(testFirst()), "|")
	want := "/bin/sh|-c|" + firstScript + "|harness-first|tok|A=1|B=2|--|timeout|-k|5s|90|bash|-c|echo hi"
	if got != want {
		t.Errorf("entrypoint\n%q\nwant\n%q", got, want)
	}
	// The container's stdin is open once, for the command, and no log
	// of its output grows on the engine's disk.
	cfg, hc := &container.Config{}, &container.HostConfig{}
	setFirst(cfg, hc, testFirst())
	if !cfg.OpenStdin || !cfg.StdinOnce || !cfg.AttachStdin || hc.LogConfig.Type != "none" ||
		strings.Join(cfg.Entrypoint, "|") != want {
		t.Errorf("config %+v, log %+v", cfg, hc.LogConfig)
	}
}

func testFirst() *executor.FirstCommand {
	return &executor.FirstCommand{Cmd: []string{"bash", "-c", "echo hi"}, Env: []string{"A=1", "B=2"}, Timeout: 90 * time.Second, Token: "tok"}
}

// countingBackend counts the execs of the sandboxes it starts.
type countingBackend struct {
	*Backend
	execs atomic.Int32
}

func (b *countingBackend) StartSandbox(ctx context.Context, spec executor.ContainerSpec) (executor.ClosableSandbox, error) {
	c, err := b.Backend.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &countingContainer{Container: c, n: &b.execs}, nil
}

type countingContainer struct {
	*Container
	n *atomic.Int32
}

func (c *countingContainer) Exec(ctx context.Context, req executor.ExecRequest) (executor.ExecResult, error) {
	c.n.Add(1)
	return c.Container.Exec(ctx, req)
}

// On an image whose user is root the oracle's solve.sh starts with the
// container, so the trial's only exec is the verifier's; its output, exit
// code and time limit come through as an exec's would.
func TestDockerOracleStartsWithContainer(t *testing.T) {
	d := newTestDocker(t)
	tests := []struct {
		name       string
		solve      string
		timeoutSec float64
		wantStatus executor.Status
		wantReward float64
		wantErr    string
	}{
		{"solved", greetFiles["solution/solve.sh"], 0, executor.StatusScored, 1, ""},
		{"exit code", "#!/bin/bash\necho solving\nexit 3\n", 0, executor.StatusAgentError, -1, "solve.sh exited with code 3"},
		{"time limit", "#!/bin/bash\necho solving\nsleep 60\n", 1, executor.StatusAgentTimeout, 0, "agent timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := greetConfig()
			cfg.Agent.TimeoutSec = tt.timeoutSec
			task := writeTask(t, "greet", cfg, greetFiles, map[string]string{"solution/solve.sh": tt.solve})
			b := &countingBackend{Backend: d}
			r := &executor.Runner{Backend: b, Runtime: testRuntime(), RewardMode: executor.RewardModeVerifier}
			trial := "trial-" + randomID(t)
			jobDir := filepath.Join(t.TempDir(), "job")
			start := time.Now()
			tr := r.Run(context.Background(), executor.TrialSpec{Task: task, Agent: executor.OracleAgent{}, JobDir: jobDir,
				RunID: "test-run", Row: "row", Iteration: 1, TrialID: trial, Caller: "executor/test"})
			if tr.Status != tt.wantStatus || (tt.wantReward >= 0) != (tr.Reward != nil) ||
				(tr.Reward != nil && *tr.Reward != tt.wantReward) {
				t.Fatalf("status %s reward %v errors %v, want %s %v", tr.Status, tr.Reward, tr.Errors, tt.wantStatus, tt.wantReward)
			}
			if tt.wantErr != "" && !strings.Contains(strings.Join(tr.Errors, "\n"), tt.wantErr) {
				t.Errorf("errors %q, want one saying %q", tr.Errors, tt.wantErr)
			}
			if n := b.execs.Load(); n != 1 {
				t.Errorf("the trial made %d execs, want only the verifier's", n)
			}
			out, err := os.ReadFile(filepath.Join(jobDir, "agent", "solve-stdout.txt"))
			if err != nil || string(out) != "solving\n" {
				t.Errorf("solve.sh's stdout %q (%v), want exactly what it wrote", out, err)
			}
			if tt.timeoutSec > 0 && time.Since(start) > 40*time.Second {
				t.Errorf("a trial with a 1 s agent limit took %s", time.Since(start))
			}
			if left := listByLabel(t, d, LabelTrial+"="+trial); len(left) != 0 {
				t.Errorf("container of trial %s still exists: %v", trial, left[0].ID)
			}
		})
	}
}
