package executor

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/llm"
)

// The runner's decisions, tested against a fake backend: no Docker needed.

// fakeSandbox answers the verifier's commands: test.sh "writes" logs.
type fakeSandbox struct {
	logs     map[string]string // files of /logs/verifier after test.sh
	testRes  ExecResult
	testErr  error
	closed   int
	verified bool
}

func (s *fakeSandbox) ID() string { return "fake0123456789" }
func (s *fakeSandbox) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	if len(req.Cmd) == 3 && req.Cmd[2] == verifyScript {
		s.verified = true
		return s.testRes, s.testErr
	}
	return ExecResult{}, nil
}
func (s *fakeSandbox) ReadFile(ctx context.Context, user, p string, max int) ([]byte, error) {
	return nil, nil
}
func (s *fakeSandbox) WriteFile(ctx context.Context, user, p string, data []byte, mode int64) error {
	return nil
}
func (s *fakeSandbox) CopyDirIn(ctx context.Context, hostDir, dst string) error { return nil }
func (s *fakeSandbox) CopyOut(ctx context.Context, p string, w io.Writer) error {
	tw := tar.NewWriter(w)
	tw.WriteHeader(&tar.Header{Name: "verifier/", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, name := range slices.Sorted(maps.Keys(s.logs)) {
		body := s.logs[name]
		tw.WriteHeader(&tar.Header{Name: "verifier/" + name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))})
		io.WriteString(tw, body)
	}
	return tw.Close()
}
func (s *fakeSandbox) Close(ctx context.Context) error { s.closed++; return nil }

type fakeBackend struct {
	ensureErr error
	startErr  error
	sb        *fakeSandbox
	started   int
	spec      ContainerSpec // the last one started
}

func (b *fakeBackend) EnsureImage(ctx context.Context, task *benchmarks.Task) (string, bool, error) {
	if b.ensureErr != nil {
		return "", false, b.ensureErr
	}
	return "img:1", false, nil
}

func (b *fakeBackend) StartSandbox(ctx context.Context, spec ContainerSpec) (ClosableSandbox, error) {
	if b.startErr != nil {
		return nil, b.startErr
	}
	b.started++
	b.spec = spec
	return b.sb, nil
}

// downProvider is a model endpoint that never answers.
type downProvider struct{}

func (downProvider) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Attempts: 4}, errors.New("model m at http://x: giving up after 4 attempts: HTTP 503")
}
func (downProvider) Offline() bool { return false }

type funcAgent func(ctx context.Context, in AgentInput) (AgentResult, error)

func (funcAgent) Name() string { return "func" }
func (f funcAgent) Run(ctx context.Context, in AgentInput) (AgentResult, error) {
	return f(ctx, in)
}

func fakeTask(t *testing.T) *benchmarks.Task {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tests"), 0o755)
	os.WriteFile(filepath.Join(dir, "tests", "test.sh"), []byte("true\n"), 0o755)
	return &benchmarks.Task{ID: "fake", Dir: dir, Config: benchmarks.TaskConfig{
		Agent: benchmarks.AgentConfig{TimeoutSec: 0.05},
	}}
}

func TestRunnerStatuses(t *testing.T) {
	ok := funcAgent(func(ctx context.Context, in AgentInput) (AgentResult, error) {
		return AgentResult{Output: "did it", Usage: Usage{ModelCalls: 2}}, nil
	})
	slow := funcAgent(func(ctx context.Context, in AgentInput) (AgentResult, error) {
		<-ctx.Done()
		return AgentResult{}, ctx.Err()
	})
	failing := funcAgent(func(ctx context.Context, in AgentInput) (AgentResult, error) {
		return AgentResult{}, errors.New("model returned garbage")
	})
	broke := funcAgent(func(ctx context.Context, in AgentInput) (AgentResult, error) {
		return AgentResult{}, fmt.Errorf("call model: %w", llm.ErrBudgetExhausted)
	})
	panicky := funcAgent(func(ctx context.Context, in AgentInput) (AgentResult, error) {
		panic("oops")
	})
	modelDown := funcAgent(func(ctx context.Context, in AgentInput) (AgentResult, error) {
		return AgentResult{}, fmt.Errorf("lab agent: %w", &llm.CallError{Caller: "executor/t1", Err: errors.New("HTTP 503")})
	})
	// An agent whose model endpoint keeps failing: the error comes from a
	// real client, so the test follows the wrapping the lab agent sees.
	unreachable := funcAgent(func(ctx context.Context, in AgentInput) (AgentResult, error) {
		c := &llm.Client{Provider: downProvider{}, Role: "executor"}
		_, err := c.Complete(ctx, llm.Request{Caller: "executor/test"})
		return AgentResult{}, fmt.Errorf("lab agent: %w", err)
	})
	half := map[string]string{"reward.txt": "0.5\n", "ctrf.json": `{"results":{"tests":[{"status":"passed"},{"status":"failed"},{"status":"failed"},{"status":"failed"}]}}`}

	tests := []struct {
		name        string
		backend     *fakeBackend
		agent       Agent
		mode        string
		wantStatus  Status
		wantReward  *float64
		wantRewards bool
		wantVerify  bool
		wantErr     string
		wantCause   string // prefix of the trace's cause; empty: none
		// wantModel: the agent error was the model API's, not the agent's.
		wantModel bool
	}{
		{name: "scored", agent: ok, wantStatus: StatusScored, wantReward: ptr(0.5), wantRewards: true, wantVerify: true},
		{name: "binary mode", agent: ok, mode: RewardModeBinary, wantStatus: StatusScored, wantReward: ptr(0.0), wantRewards: true, wantVerify: true},
		{name: "fraction mode", agent: ok, mode: RewardModeFraction, wantStatus: StatusScored, wantReward: ptr(0.25), wantRewards: true, wantVerify: true},
		{name: "build failure", backend: &fakeBackend{ensureErr: &EnvError{Op: "build", Err: errors.New("RUN failed")}}, agent: ok,
			wantStatus: StatusEnvFailure, wantErr: "RUN failed", wantCause: "sandbox: "},
		{name: "start failure", backend: &fakeBackend{startErr: errors.New("no memory")}, agent: ok,
			wantStatus: StatusEnvFailure, wantErr: "no memory", wantCause: "sandbox: no memory"},
		{name: "agent timeout still verified", agent: slow, wantStatus: StatusAgentTimeout, wantReward: ptr(0.5), wantRewards: true, wantVerify: true, wantErr: "agent timeout", wantCause: "agent: agent did not finish"},
		{name: "agent error keeps verifier record", agent: failing, wantStatus: StatusAgentError, wantRewards: true, wantVerify: true, wantErr: "garbage", wantCause: "agent: "},
		{name: "model failed for good", agent: modelDown, wantStatus: StatusAgentError, wantRewards: true, wantVerify: true, wantErr: "HTTP 503",
			wantCause: "model: lab agent: model call for executor/t1: HTTP 503", wantModel: true},
		{name: "budget exhausted", agent: broke, wantStatus: StatusBudgetExhausted, wantRewards: true, wantVerify: true, wantErr: "budget exhausted", wantCause: "budget: "},
		{name: "agent panic", agent: panicky, wantStatus: StatusAgentError, wantRewards: true, wantVerify: true, wantErr: "panicked: oops", wantCause: "agent: "},
		{name: "model API failure", agent: unreachable, wantStatus: StatusAgentError, wantRewards: true, wantVerify: true,
			wantErr: "giving up after 4 attempts", wantModel: true, wantCause: "model: "},
		{name: "no reward file", backend: &fakeBackend{sb: &fakeSandbox{logs: map[string]string{"test-stdout.txt": "x"}}}, agent: ok,
			wantStatus: StatusVerifierError, wantVerify: true, wantErr: "neither", wantCause: "verifier: "},
		{name: "verifier timeout", backend: &fakeBackend{sb: &fakeSandbox{logs: half, testRes: ExecResult{TimedOut: true, ExitCode: 124}}}, agent: ok,
			wantStatus: StatusVerifierError, wantVerify: true, wantErr: "verifier timeout", wantCause: "verifier: "},
		{name: "agent timeout and verifier error", backend: &fakeBackend{sb: &fakeSandbox{logs: map[string]string{"reward.txt": "abc"}}}, agent: slow,
			wantStatus: StatusVerifierError, wantVerify: true, wantErr: "not a decimal", wantCause: "agent: agent did not finish"},
		{name: "unknown reward mode", agent: ok, mode: "mean", wantStatus: StatusEnvFailure, wantErr: "unknown reward mode", wantCause: "sandbox: "},
		{name: "no agent", agent: nil, wantStatus: StatusEnvFailure, wantErr: "no agent", wantCause: "sandbox: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.backend
			if b == nil {
				b = &fakeBackend{}
			}
			if b.sb == nil {
				b.sb = &fakeSandbox{logs: half}
			}
			r := &Runner{Backend: b, RewardMode: tt.mode}
			jobDir := filepath.Join(t.TempDir(), "job")
			tr := r.Run(context.Background(), TrialSpec{Task: fakeTask(t), Agent: tt.agent, JobDir: jobDir, TrialID: "t1", Iteration: 2})
			if tr.Status != tt.wantStatus {
				t.Fatalf("status %s, want %s (errors %v)", tr.Status, tt.wantStatus, tr.Errors)
			}
			if (tr.Reward == nil) != (tt.wantReward == nil) || (tr.Reward != nil && *tr.Reward != *tt.wantReward) {
				t.Errorf("reward %v, want %v", deref(tr.Reward), deref(tt.wantReward))
			}
			if (len(tr.Rewards) > 0) != tt.wantRewards {
				t.Errorf("rewards %v, want present: %v", tr.Rewards, tt.wantRewards)
			}
			if tr.ModelFailure != tt.wantModel {
				t.Errorf("model failure %v, want %v", tr.ModelFailure, tt.wantModel)
			}
			if wantFault := tt.wantStatus == StatusAgentError && !tt.wantModel; tr.AgentFault() != wantFault {
				t.Errorf("agent fault %v, want %v", tr.AgentFault(), wantFault)
			}
			if b.sb.verified != tt.wantVerify {
				t.Errorf("verifier ran: %v, want %v", b.sb.verified, tt.wantVerify)
			}
			// A verifier that ran with the default logs wrote a CTRF report.
			if _, ctrf := b.sb.logs["ctrf.json"]; tr.Tests.Reported != (tt.wantVerify && ctrf) {
				t.Errorf("tests reported: %v with logs %v", tr.Tests.Reported, b.sb.logs)
			}
			if b.sb.closed != b.started {
				t.Errorf("sandbox started %d times, closed %d times", b.started, b.sb.closed)
			}
			if !strings.HasPrefix(tr.Cause, tt.wantCause) || (tt.wantCause == "") != (tr.Cause == "") {
				t.Errorf("cause %q, want it to start with %q", tr.Cause, tt.wantCause)
			}
			if tt.wantErr != "" && !strings.Contains(strings.Join(tr.Errors, "\n"), tt.wantErr) {
				t.Errorf("errors %q lack %q", tr.Errors, tt.wantErr)
			}
			var onDisk Trace
			data, err := os.ReadFile(filepath.Join(jobDir, "trace.json"))
			if err != nil || json.Unmarshal(data, &onDisk) != nil || onDisk.Status != tr.Status || onDisk.TrialID != "t1" || onDisk.Cause != tr.Cause {
				t.Errorf("trace.json does not match the trace: %v", err)
			}
			if tr.FinishedAt.Before(tr.StartedAt) || tr.Timings.Total <= 0 {
				t.Errorf("timings not set: %+v", tr.Timings)
			}
		})
	}
}

func TestRunnerCancelledClosesSandbox(t *testing.T) {
	b := &fakeBackend{sb: &fakeSandbox{logs: map[string]string{"reward.txt": "1"}}}
	ctx, cancel := context.WithCancel(context.Background())
	agent := funcAgent(func(actx context.Context, in AgentInput) (AgentResult, error) {
		cancel()
		<-actx.Done()
		return AgentResult{}, actx.Err()
	})
	tr := (&Runner{Backend: b}).Run(ctx, TrialSpec{Task: fakeTask(t), Agent: agent})
	if !tr.Cancelled || tr.Status != StatusInterrupted || tr.Reward != nil {
		t.Errorf("cancelled %v status %s reward %v", tr.Cancelled, tr.Status, tr.Reward)
	}
	if b.sb.verified {
		t.Errorf("verifier ran after cancellation")
	}
	if b.sb.closed != 1 {
		t.Errorf("sandbox closed %d times, want 1", b.sb.closed)
	}
	if !strings.Contains(strings.Join(tr.Errors, "\n"), "removed after cancellation") {
		t.Errorf("errors %q do not say the sandbox was removed", tr.Errors)
	}
}

func TestRunnerIgnoresStaleVerifierFiles(t *testing.T) {
	b := &fakeBackend{sb: &fakeSandbox{logs: map[string]string{"reward.txt": "0"}}}
	jobDir := t.TempDir()
	os.MkdirAll(filepath.Join(jobDir, "verifier"), 0o755)
	os.WriteFile(filepath.Join(jobDir, "verifier", "reward.json"), []byte(`{"reward":1}`), 0o644)
	tr := (&Runner{Backend: b}).Run(context.Background(), TrialSpec{Task: fakeTask(t), Agent: NopAgent{}, JobDir: jobDir})
	if tr.Reward == nil || *tr.Reward != 0 {
		t.Errorf("reward %v, want 0 from this attempt's reward.txt (errors %v)", deref(tr.Reward), tr.Errors)
	}
}

func TestRunnerWithoutJobDir(t *testing.T) {
	b := &fakeBackend{sb: &fakeSandbox{logs: map[string]string{"reward.txt": "1"}}}
	tr := (&Runner{Backend: b}).Run(context.Background(), TrialSpec{Task: fakeTask(t), Agent: NopAgent{}})
	if tr.Status != StatusScored || tr.Reward == nil || *tr.Reward != 1 {
		t.Errorf("status %s reward %v errors %v", tr.Status, deref(tr.Reward), tr.Errors)
	}
}

func ptr(f float64) *float64 { return &f }

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

func TestRunnerWritesJobDir(t *testing.T) {
	b := &fakeBackend{sb: &fakeSandbox{logs: map[string]string{"reward.txt": "1", "test-stdout.txt": "ok"}}}
	agent := funcAgent(func(ctx context.Context, in AgentInput) (AgentResult, error) {
		return AgentResult{Output: strings.Repeat("x", 10000) + "END"}, nil
	})
	jobDir := t.TempDir()
	tr := (&Runner{Backend: b}).Run(context.Background(), TrialSpec{Task: fakeTask(t), Agent: agent, JobDir: jobDir})
	for _, f := range []string{"trace.json", "agent/output.txt", "verifier/reward.txt", "verifier/test-stdout.txt"} {
		if _, err := os.Stat(filepath.Join(jobDir, f)); err != nil {
			t.Errorf("job dir lacks %s: %v", f, err)
		}
	}
	if len(tr.AgentOutput) > defaultExcerpt+100 || !strings.HasSuffix(tr.AgentOutput, "END") {
		t.Errorf("agent output excerpt of %d bytes", len(tr.AgentOutput))
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("a", 1000) + "TAIL"
	got := excerpt(long, 100)
	if len(got) > 140 || !strings.HasSuffix(got, "TAIL") || !strings.Contains(got, "bytes omitted") {
		t.Errorf("excerpt = %q", got)
	}
	if got := excerpt("short", 100); got != "short" {
		t.Errorf("short excerpt = %q", got)
	}
	if got := excerpt(strings.Repeat("é", 100), 51); !strings.HasSuffix(got, "é") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("excerpt split a rune: %q", got)
	}
}

// queuedBackend's StartSandbox takes wait, of which queued is spent
// waiting for a slot, as the Docker backend reports it.
type queuedBackend struct {
	fakeBackend
	wait, queued time.Duration
}

type queuedSandbox struct {
	*fakeSandbox
	queued time.Duration
}

func (s queuedSandbox) QueueWait() time.Duration { return s.queued }

func (b *queuedBackend) StartSandbox(ctx context.Context, spec ContainerSpec) (ClosableSandbox, error) {
	time.Sleep(b.wait)
	return queuedSandbox{b.sb, b.queued}, nil
}

// The wait for a turn is queue time: before Run (TrialSpec.Queued) and for
// a container slot inside setup. Neither is setup, nor in the total.
func TestRunnerRecordsQueueApartFromSetup(t *testing.T) {
	const slot, setup, before = 60 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond
	b := &queuedBackend{fakeBackend: fakeBackend{sb: &fakeSandbox{logs: map[string]string{"reward.txt": "1"}}}, wait: slot + setup, queued: slot}
	start := time.Now()
	tr := (&Runner{Backend: b}).Run(context.Background(), TrialSpec{Task: fakeTask(t), Agent: NopAgent{}, Queued: before})
	wall := time.Since(start)
	if tr.Timings.Queue != before+slot {
		t.Errorf("queue %v; want %v (before Run) + %v (container slot)", tr.Timings.Queue, before, slot)
	}
	if tr.Timings.Setup < setup || tr.Timings.Setup >= slot+setup {
		t.Errorf("setup %v; want %v or a little more, without the slot's %v", tr.Timings.Setup, setup, slot)
	}
	if tr.Timings.Total > wall-slot {
		t.Errorf("total %v; want at most the trial's %v less the slot's %v", tr.Timings.Total, wall, slot)
	}
}

// slowCopySandbox takes copyDelay to copy a directory in, as a loaded
// engine does.
type slowCopySandbox struct {
	fakeSandbox
	copyDelay time.Duration
}

func (s *slowCopySandbox) CopyDirIn(ctx context.Context, hostDir, dst string) error {
	select {
	case <-time.After(s.copyDelay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type closableSlowCopy struct{ *slowCopySandbox }

func (s closableSlowCopy) Close(ctx context.Context) error { return nil }

type slowCopyBackend struct{ sb *slowCopySandbox }

func (b slowCopyBackend) EnsureImage(ctx context.Context, task *benchmarks.Task) (string, bool, error) {
	return "img:1", false, nil
}

func (b slowCopyBackend) StartSandbox(ctx context.Context, spec ContainerSpec) (ClosableSandbox, error) {
	return closableSlowCopy{b.sb}, nil
}

// The agent timeout starts at the agent's first instruction: the oracle's
// solution, copied in by the harness more slowly than the whole agent
// budget, still runs, and the copy counts as setup.
func TestAgentTimeoutStartsAfterTheHarnessSetup(t *testing.T) {
	task := fakeTask(t) // agent timeout 50 ms
	os.MkdirAll(filepath.Join(task.Dir, "solution"), 0o755)
	os.WriteFile(filepath.Join(task.Dir, "solution", "solve.sh"), []byte("true\n"), 0o755)
	sb := &slowCopySandbox{fakeSandbox: fakeSandbox{logs: map[string]string{"reward.txt": "1\n"}}, copyDelay: 300 * time.Millisecond}
	r := &Runner{Backend: slowCopyBackend{sb}}
	tr := r.Run(context.Background(), TrialSpec{Task: task, Agent: OracleAgent{}, TrialID: "t1"})
	if tr.Status != StatusScored || tr.Reward == nil || *tr.Reward != 1 {
		t.Fatalf("status %s reward %v errors %v, want scored 1", tr.Status, tr.Reward, tr.Errors)
	}
	if tr.Timings.Setup < sb.copyDelay {
		t.Errorf("setup %s does not include the %s copy of the solution", tr.Timings.Setup, sb.copyDelay)
	}
	if tr.Timings.Agent >= sb.copyDelay {
		t.Errorf("agent time %s includes the copy of the solution", tr.Timings.Agent)
	}
}
