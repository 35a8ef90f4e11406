package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
)

const (
	// defaultExcerpt caps AgentOutput and VerifierOutput in a trace.
	defaultExcerpt = 4 << 10
	// maxTraceError caps each entry of Trace.Errors.
	maxTraceError = 4 << 10
	// copyMargin is the extra time a verifier run gets, beyond test.sh's own
	// limit, to copy tests in and logs out.
	copyMargin = 2 * time.Minute
)

// TrialSpec is one trial to run.
type TrialSpec struct {
	Task  *benchmarks.Task
	Agent Agent
	// Plan and ExecutorSkill are passed to the agent.
	Plan, ExecutorSkill string
	// JobDir is the trial's directory on the host: trace.json, agent/ and
	// verifier/ go there. Empty: nothing is written, and the verifier's logs
	// go to a temporary directory that is removed afterwards.
	JobDir    string
	RunID     string
	Row       string
	Iteration int
	TrialID   string
	Seed      int64
	Caller    string
	// Queued is how long the trial already waited for its turn before Run
	// (a budget of trials in flight); it is recorded as queue time.
	Queued time.Duration
}

// Runner runs trials: image, container, agent, verifier, cleanup.
type Runner struct {
	Backend Backend
	// Runtime supplies the default timeouts a task does not set.
	Runtime config.ExecutorRuntime
	// RewardMode is verifier (or empty), binary or fraction.
	RewardMode string
	// ExcerptCap caps AgentOutput and VerifierOutput (<= 0: 4 KiB).
	ExcerptCap int
}

// Defaults for limits that neither the task nor the runtime configuration sets.
const (
	DefaultBuildTimeout    = 20 * time.Minute
	DefaultAgentTimeout    = 15 * time.Minute
	DefaultVerifierTimeout = 10 * time.Minute
)

// BuildTimeout is the task's image build timeout, else the runtime's, else the default.
func BuildTimeout(task *benchmarks.Task, rt config.ExecutorRuntime) time.Duration {
	return firstPositive(secondsDuration(task.Config.Environment.BuildTimeoutSec), rt.BuildTimeout.Duration, DefaultBuildTimeout)
}

// AgentTimeout is the task's agent timeout, else the runtime's, else the default.
func AgentTimeout(task *benchmarks.Task, rt config.ExecutorRuntime) time.Duration {
	return firstPositive(secondsDuration(task.Config.Agent.TimeoutSec), rt.AgentTimeout.Duration, DefaultAgentTimeout)
}

// VerifierTimeout is the task's verifier timeout, else the runtime's, else the default.
func VerifierTimeout(task *benchmarks.Task, rt config.ExecutorRuntime) time.Duration {
	return firstPositive(secondsDuration(task.Config.Verifier.TimeoutSec), rt.VerifierTimeout.Duration, DefaultVerifierTimeout)
}

// secondsDuration converts a task's seconds field; 0 or less means unset.
func secondsDuration(sec float64) time.Duration {
	const maxSec = float64(math.MaxInt64 / int64(time.Second))
	if !(sec > 0) { // also NaN
		return 0
	}
	return time.Duration(math.Min(sec, maxSec) * float64(time.Second))
}

func firstPositive(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// Run runs one trial and returns its trace, never nil: every failure is
// recorded in the trace's status and errors. The sandbox is closed on every
// path, including cancellation of ctx. With a JobDir the trace is written to
// JobDir/trace.json.
//
// Statuses: a failed build or start is env_failure. An agent that runs out
// of time is agent_timeout, and the verifier still scores what it left. An
// agent error is agent_error (budget_exhausted when IsBudgetExhausted):
// the verifier still runs and its rewards and tests are
// recorded, but the trace carries no Reward, as the agent did not finish its
// work; ModelFailure is set when the error came from the model API (a call
// that failed after its retries) rather than from the agent itself. Otherwise the verifier decides: scored with a reward, or
// verifier_error without one. A cancelled ctx skips the verifier and yields
// interrupted with Cancelled set, so the trial counts for nobody.
func (r *Runner) Run(ctx context.Context, spec TrialSpec) *Trace {
	start := time.Now()
	tr := newTrace(spec, start)
	defer r.finish(tr, start, spec.Queued)

	if err := r.check(spec); err != nil {
		r.envFailure(ctx, tr, err)
		return tr
	}
	if err := makeJobDir(spec.JobDir); err != nil {
		r.envFailure(ctx, tr, err)
		return tr
	}
	sb, err := r.setUp(ctx, tr, spec)
	if err != nil {
		r.envFailure(ctx, tr, err)
		return tr
	}
	defer func() {
		if err := sb.Close(ctx); err != nil {
			addError(tr, fmt.Errorf("clean up sandbox: %w", err))
		} else if tr.Cancelled {
			tr.Errors = append(tr.Errors, "sandbox "+ShortID(sb.ID())+" removed after cancellation")
		}
	}()
	if err := r.prepareAgent(ctx, tr, spec, sb); err != nil {
		r.envFailure(ctx, tr, err)
		return tr
	}

	agentStatus := r.runAgent(ctx, tr, spec, sb)
	if ctx.Err() != nil {
		r.cancelled(ctx, tr, "agent")
		return tr
	}

	t0 := time.Now()
	vres := r.runVerifier(ctx, spec, sb)
	tr.Timings.Verifier = time.Since(t0)
	if ctx.Err() != nil {
		r.cancelled(ctx, tr, "verifier")
		return tr
	}
	r.score(tr, agentStatus, vres)
	return tr
}

// newTrace is the trace of spec's trial, begun at start.
func newTrace(spec TrialSpec, start time.Time) *Trace {
	tr := &Trace{
		Iteration: spec.Iteration,
		TrialID:   spec.TrialID,
		JobDir:    spec.JobDir,
		StartedAt: start.UTC(),
		Timings:   Timings{Queue: spec.Queued},
	}
	if spec.Task != nil {
		tr.TaskID = spec.Task.ID
	}
	if spec.Agent != nil {
		tr.Agent = spec.Agent.Name()
	}
	return tr
}

// makeJobDir creates the trial's agent/ and verifier/ directories, if the
// trial has a directory.
func makeJobDir(jobDir string) error {
	if jobDir == "" {
		return nil
	}
	for _, sub := range []string{rundir.AgentDir, rundir.VerifierDir} {
		if err := os.MkdirAll(filepath.Join(jobDir, sub), 0o755); err != nil {
			return fmt.Errorf("create job directory: %w", err)
		}
	}
	return nil
}

// setUp ensures the task's image and starts the trial's sandbox, recording
// build and setup times, where it ran and what it could not honour.
func (r *Runner) setUp(ctx context.Context, tr *Trace, spec TrialSpec) (ClosableSandbox, error) {
	t0 := time.Now()
	image, _, err := r.Backend.EnsureImage(ctx, spec.Task)
	tr.Timings.Build = time.Since(t0)
	tr.Image = image
	if err != nil {
		return nil, err
	}
	t0 = time.Now()
	image, gateway, err := r.installAgent(ctx, image, spec.Agent)
	tr.Timings.Build += time.Since(t0)
	if err != nil {
		return nil, err
	}
	tr.Image = image
	var first *FirstCommand
	if fs, ok := spec.Agent.(FirstStarter); ok {
		first = fs.FirstCommand(spec.Task, AgentTimeout(spec.Task, r.Runtime))
	}
	t0 = time.Now()
	sb, err := r.Backend.StartSandbox(ctx, ContainerSpec{
		Image:        image,
		Task:         spec.Task,
		RunID:        spec.RunID,
		Row:          spec.Row,
		Iteration:    spec.Iteration,
		TrialID:      spec.TrialID,
		ModelGateway: gateway,
		First:        first,
	})
	tr.Timings.Setup = time.Since(t0)
	if err != nil {
		return nil, err
	}
	if p, ok := sb.(Placed); ok {
		pl := p.Placement()
		tr.Engine, tr.Image = pl.Engine, cmp.Or(pl.Image, tr.Image)
		tr.Timings.Build += pl.Build
		tr.Timings.Setup -= pl.Build
	}
	if q, ok := sb.(interface{ QueueWait() time.Duration }); ok {
		// Waiting for a container slot is queueing, not setting up.
		tr.Timings.Setup -= q.QueueWait()
		tr.Timings.Queue += q.QueueWait()
	}
	if w, ok := sb.(interface{ Warnings() []string }); ok {
		tr.Warnings = append(tr.Warnings, w.Warnings()...)
	}
	return sb, nil
}

// prepareAgent runs an agent's own setup (Preparer) as part of the trial's
// setup, on a clock of its own, so that the agent timeout starts with the
// agent's first instruction. It is bounded by the agent timeout, but never
// below FileOpTimeout: a short agent budget must not fail the copy.
func (r *Runner) prepareAgent(ctx context.Context, tr *Trace, spec TrialSpec, sb Sandbox) error {
	p, ok := spec.Agent.(Preparer)
	if !ok {
		return nil
	}
	timeout := max(AgentTimeout(spec.Task, r.Runtime), FileOpTimeout)
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0 := time.Now()
	err := p.Prepare(pctx, agentInput(spec, sb))
	tr.Timings.Setup += time.Since(t0)
	if err != nil && pctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		return fmt.Errorf("prepare the agent's files within %s: %w", timeout, err)
	}
	if err != nil {
		return fmt.Errorf("prepare the agent's files: %w", err)
	}
	return nil
}

// agentInput is what the agent of spec gets in sb.
func agentInput(spec TrialSpec, sb Sandbox) AgentInput {
	return AgentInput{
		Task:          spec.Task,
		Sandbox:       sb,
		Plan:          spec.Plan,
		ExecutorSkill: spec.ExecutorSkill,
		JobDir:        spec.JobDir,
		Seed:          spec.Seed,
		Caller:        spec.Caller,
		Iteration:     spec.Iteration,
	}
}

func (r *Runner) check(spec TrialSpec) error {
	switch {
	case r.Backend == nil:
		return errors.New("runner has no sandbox backend")
	case spec.Task == nil:
		return errors.New("trial has no task")
	case spec.Agent == nil:
		return errors.New("trial has no agent")
	case !ValidRewardMode(r.RewardMode):
		_, err := ApplyRewardMode(r.RewardMode, 0, Tests{}, false)
		return err
	}
	return nil
}

// runAgent runs the agent under the agent timeout, which starts here, at
// its first instruction, and returns the status it earned ("" when it
// finished cleanly).
func (r *Runner) runAgent(ctx context.Context, tr *Trace, spec TrialSpec, sb Sandbox) Status {
	timeout := AgentTimeout(spec.Task, r.Runtime)
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0 := time.Now()
	res, err := safeRun(actx, spec.Agent, agentInput(spec, sb))
	tr.Timings.Agent = time.Since(t0)
	if spec.JobDir != "" && res.Output != "" {
		if werr := durable.WriteFile(filepath.Join(spec.JobDir, rundir.AgentOutputFile), []byte(res.Output), 0o644); werr != nil {
			addError(tr, werr)
		}
	}
	tr.AgentOutput = excerpt(res.Output, r.excerptCap())
	tr.Streams = append(tr.Streams, res.Streams...)
	tr.TranscriptPath = res.TranscriptPath
	tr.Usage = res.Usage
	switch {
	case err == nil:
		return ""
	case ctx.Err() != nil:
		return "" // cancellation is reported by the caller
	case IsBudgetExhausted(err):
		addError(tr, fmt.Errorf("agent: %w", err))
		SetCause(tr, CauseBudget, err)
		return StatusBudgetExhausted
	case errors.Is(err, context.DeadlineExceeded) || actx.Err() == context.DeadlineExceeded:
		err = fmt.Errorf("agent did not finish within %s (agent timeout): %w", timeout, err)
		addError(tr, err)
		SetCause(tr, CauseAgent, err)
		return StatusAgentTimeout
	default:
		addError(tr, fmt.Errorf("agent: %w", err))
		SetCause(tr, AgentCause(err), err)
		tr.ModelFailure = IsModelFailure(err)
		return StatusAgentError
	}
}

// safeRun turns an agent's panic into an error, so the sandbox is still
// cleaned up and the run goes on.
func safeRun(ctx context.Context, a Agent, in AgentInput) (res AgentResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("agent %s panicked: %v\n%s", a.Name(), p, debug.Stack())
		}
	}()
	return a.Run(ctx, in)
}

func (r *Runner) runVerifier(ctx context.Context, spec TrialSpec, sb Sandbox) VerifierResult {
	timeout := VerifierTimeout(spec.Task, r.Runtime)
	logDir := ""
	if spec.JobDir != "" {
		logDir = filepath.Join(spec.JobDir, rundir.VerifierDir)
	} else {
		tmp, err := os.MkdirTemp("", "harness-verifier-*")
		if err != nil {
			return VerifierResult{Err: fmt.Errorf("create a directory for verifier logs: %w", err)}
		}
		defer os.RemoveAll(tmp)
		logDir = filepath.Join(tmp, rundir.VerifierDir)
	}
	vctx, cancel := context.WithTimeout(ctx, timeout+copyMargin)
	defer cancel()
	return RunVerifier(vctx, sb, spec.Task, VerifyOptions{Timeout: timeout, LogDir: logDir,
		KeepAgentProcesses: r.Runtime.KeepAgentProcesses})
}

// score sets the status and reward from the agent's status and the
// verifier's result.
func (r *Runner) score(tr *Trace, agentStatus Status, v VerifierResult) {
	tr.VerifierOutput = excerpt(v.Output, r.excerptCap())
	if v.Stream.Name != "" {
		tr.Streams = append(tr.Streams, v.Stream)
	}
	tr.Rewards = v.Rewards
	tr.Tests = v.Tests
	// Everything the verifier said is marked as its own, so what reaches a
	// model can follow [experiment] verifier_feedback.
	for _, n := range v.Notes {
		addError(tr, errors.New(VerifierErrorPrefix+n))
	}
	if v.Err != nil {
		addError(tr, fmt.Errorf("%s%w", VerifierErrorPrefix, v.Err))
	}
	switch agentStatus {
	case StatusAgentError, StatusBudgetExhausted:
		tr.Status = agentStatus
		return
	}
	if v.Err != nil {
		tr.Status = StatusVerifierError
		SetCause(tr, CauseVerifier, v.Err)
		return
	}
	reward, err := ApplyRewardMode(r.RewardMode, v.Reward, v.Tests, v.HaveTests)
	if err != nil {
		tr.Status = StatusVerifierError
		addError(tr, err)
		SetCause(tr, CauseVerifier, err)
		return
	}
	tr.Reward = &reward
	tr.Status = StatusScored
	if agentStatus == StatusAgentTimeout {
		tr.Status = StatusAgentTimeout
	}
}

func (r *Runner) envFailure(ctx context.Context, tr *Trace, err error) {
	tr.Status = StatusEnvFailure
	if ctx.Err() != nil {
		r.cancelled(ctx, tr, "setup")
	}
	addError(tr, err)
	SetCause(tr, CauseSandbox, err)
}

func (r *Runner) cancelled(ctx context.Context, tr *Trace, phase string) {
	tr.Status = StatusInterrupted
	tr.Cancelled = true
	tr.Reward = nil
	err := fmt.Errorf("trial cancelled during %s: %w", phase, context.Cause(ctx))
	addError(tr, err)
	SetCause(tr, CauseCancelled, err)
}

// finish completes the trace. queued is the wait before Run, which start
// already leaves out; the wait for a container slot since is taken out too.
func (r *Runner) finish(tr *Trace, start time.Time, queued time.Duration) {
	if tr.Status != StatusScored && tr.Cause == "" && len(tr.Errors) > 0 {
		// A failure recorded without a part: blame the part the status names.
		part := map[Status]string{StatusEnvFailure: CauseSandbox, StatusVerifierError: CauseVerifier,
			StatusBudgetExhausted: CauseBudget}[tr.Status]
		tr.Cause = cmp.Or(part, CauseAgent) + ": " + tr.Errors[0]
	}
	tr.FinishedAt = time.Now().UTC()
	tr.Timings.Total = time.Since(start) - (tr.Timings.Queue - queued)
	if tr.JobDir == "" {
		return
	}
	if err := durable.WriteJSON(filepath.Join(tr.JobDir, rundir.TraceFile), tr); err != nil {
		addError(tr, err)
	}
}

func (r *Runner) excerptCap() int {
	if r.ExcerptCap > 0 {
		return r.ExcerptCap
	}
	return defaultExcerpt
}

func addError(tr *Trace, err error) {
	tr.Errors = append(tr.Errors, Clip(err.Error(), maxTraceError))
}

// excerpt shortens s to about max bytes, keeping its head and a longer tail
// (where test summaries and final errors are).
func excerpt(s string, max int) string {
	if len(s) <= max {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	head := max / 4
	tail := max - head
	omitted := len(s) - head - tail
	return strings.ToValidUTF8(s[:head], "") +
		fmt.Sprintf("\n…[%d bytes omitted]…\n", omitted) +
		strings.ToValidUTF8(s[len(s)-tail:], "")
}

// ShortID is the short form of a sandbox id that logs show.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
