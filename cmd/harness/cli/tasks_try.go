package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
)

// DefaultTryOut is where `harness tasks try` makes its job directories.
const DefaultTryOut = "data/tasks-try"

// TasksTryOptions are the arguments of `harness tasks try`.
type TasksTryOptions struct {
	IO        IOStreams
	ConfigDir string
	// Task is a task id, or a path (it holds a path separator) of a task
	// directory.
	Task  string
	Agent string // oracle or nop
	// Out receives the job directory <UTC time>-<task>.
	Out string
	// Keep leaves the container in place after the trial.
	Keep bool
	JSON bool
	// Now stamps the job directory's name; nil means time.Now.
	Now      func() time.Time
	Resolver ResolverFunc
	// Sandbox connects to the engine the trial runs on.
	Sandbox func(ctx context.Context, rt config.ExecutorRuntime) (SandboxBackend, error)
}

// NewCmdTasksTry builds `harness tasks try TASK`.
func NewCmdTasksTry(f *Factory, runF func(context.Context, *TasksTryOptions) error) *cobra.Command {
	o := &TasksTryOptions{}
	cmd := &cobra.Command{
		Use:   "try TASK [--agent oracle|nop]",
		Short: "Run one trial of a task with its reference solution (or with no agent)",
		Long: `Run one trial of TASK in Docker, outside any experiment: build the task's image if
needed, start a container, let the agent work, run the verifier, and print the
trace summary (status, reward, tests, timings, errors) or the trace as JSON.

TASK is a task id (found as 'harness tasks list' shows) or a path to a task
directory. The agent is the oracle (runs solution/solve.sh; a correct task scores
1) or nop (does nothing; a correct task scores below 1). The trial's files
(trace.json, agent/ and verifier/ logs) go to a new job directory
<UTC time>-<task> under --out, which is kept.

The container is removed after the trial, also on Ctrl-C; --keep leaves it for
inspection ('harness gc' removes it later).

Exit codes: 0 the trial was scored (whatever the reward), 1 it failed (agent or
verifier error, agent timeout), 2 bad usage (unknown task, invalid task or
configuration), 3 environment failure (no Docker engine, failed image build),
130 interrupted.`,
		Example: `  harness tasks try csv-parser
  harness tasks try path/to/my-task --agent nop --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("%s takes exactly one task id or task directory (got %d arguments)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IO, o.Now, o.Resolver, o.Sandbox = f.IO, f.Now, f.Resolver, f.Sandbox
			o.Task = args[0]
			if err := checkTryFlags(o); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runTasksTry(cmd.Context(), o)
		},
	}
	configDirFlag(cmd, &o.ConfigDir)
	fl := cmd.Flags()
	fl.StringVar(&o.Agent, "agent", harness.AgentOracle, "agent doing the task: oracle (reference solution) or nop (does nothing)")
	fl.StringVar(&o.Out, "out", DefaultTryOut, "directory that receives the trial's job directory")
	fl.BoolVar(&o.Keep, "keep", false, "keep the container after the trial, for inspection ('harness gc' removes it)")
	fl.BoolVar(&o.JSON, "json", false, "print the trace as JSON")
	_ = cmd.MarkFlagDirname("out")
	registerTryCompletion(cmd, f)
	return cmd
}

// checkTryFlags refuses an agent try cannot run and an empty --out.
func checkTryFlags(o *TasksTryOptions) error {
	switch o.Agent {
	case harness.AgentOracle, harness.AgentNop:
	case harness.AgentLab:
		return usagef("--agent lab is not available here: try checks a task with the oracle or nop agent; the lab's agents run with 'harness run --agent lab'")
	default:
		return usagef("unknown agent %q for --agent: use oracle (the task's reference solution) or nop (does nothing)", o.Agent)
	}
	if strings.TrimSpace(o.Out) == "" {
		return usagef("--out must name a directory")
	}
	return nil
}

// registerTryCompletion completes the argument (a task id, or a task
// directory when no id matches) and --agent.
func registerTryCompletion(cmd *cobra.Command, f *Factory) {
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ids, _ := completeTaskIDs(f, false)(cmd, args, toComplete)
		var match []cobra.Completion
		for _, id := range ids {
			if strings.HasPrefix(id, toComplete) {
				match = append(match, id)
			}
		}
		if len(match) == 0 {
			return nil, cobra.ShellCompDirectiveFilterDirs
		}
		return match, cobra.ShellCompDirectiveNoFileComp
	}
	_ = cmd.RegisterFlagCompletionFunc("agent", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{
			cobra.CompletionWithDesc(harness.AgentOracle, "the task's reference solution"),
			cobra.CompletionWithDesc(harness.AgentNop, "does nothing"),
		}, cobra.ShellCompDirectiveNoFileComp
	})
}

func runTasksTry(ctx context.Context, o *TasksTryOptions) error {
	cfg, r, err := loadTaskConfig(o.ConfigDir, o.Resolver)
	if err != nil {
		return err
	}
	task, err := findTryTask(ctx, r, o.Task)
	if err != nil {
		return err
	}
	if o.Agent == harness.AgentOracle && !task.HasSolution() {
		return usagef("task %s has no solution/solve.sh, so the oracle cannot run it; add one, or try --agent nop", task.ID)
	}

	cfg.ExecutorRuntime.KeepContainers = cfg.ExecutorRuntime.KeepContainers || o.Keep
	if o.Sandbox == nil {
		return &ExitError{Code: ExitEnvFailures, Err: errors.New("no sandbox engine is available in this build; nothing was run")}
	}
	backend, err := o.Sandbox(ctx, cfg.ExecutorRuntime)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted before the trial started: %w", ctx.Err())
		}
		return &ExitError{Code: ExitEnvFailures, Err: fmt.Errorf("%w; nothing was run", err)}
	}
	defer backend.Close()

	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	jobDir, err := newJobDir(o.Out, now().UTC().Format("20060102T150405Z")+"-"+task.ID)
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	name := filepath.Base(jobDir)
	runID := "tasks-try-" + name
	from := task.Source
	if from == "" {
		from = "path"
	}
	fmt.Fprintf(o.IO.ErrOut, "trying task %s (%s, %s) with the %s agent; job directory %s\n", task.ID, from, task.Dir, o.Agent, jobDir)

	// RunTrial returns only after the container is gone (or kept), also
	// when ctx is cancelled, so exiting right after it leaves nothing running.
	tr, err := harness.RunTrial(ctx, harness.TrialOptions{
		Config:  cfg,
		Backend: &announcingBackend{Backend: backend, w: o.IO.ErrOut, after: time.Second, now: now},
		Task:    task,
		Agent:   o.Agent,
		JobDir:  jobDir,
		RunID:   runID,
		Row:     "tasks-try",
		TrialID: name,
		Caller:  "tasks-try",
	})
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}

	if o.JSON {
		if err := writeJSON(o.IO.Out, tr); err != nil {
			return err
		}
	} else {
		writeTraceSummary(o.IO.Out, tr, task)
	}
	if o.Keep && !tr.Cancelled && tr.Status != harness.TrialEnvFailure {
		fmt.Fprintf(o.IO.ErrOut, "the container was kept; remove it with: harness gc --run %s\n", runID)
	}
	return tryExit(ctx, tr, jobDir)
}

// findTryTask resolves TASK: a path when it holds a separator, else an id.
// A missing or invalid task is bad usage: nothing has started.
func findTryTask(ctx context.Context, r *benchmarks.Resolver, arg string) (*benchmarks.Task, error) {
	if arg == "." || arg == ".." || strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, filepath.Separator) {
		if _, err := os.Stat(arg); err != nil {
			return nil, usagef("task directory %s does not exist (give a task id or the path of a task directory)", arg)
		}
		t, err := benchmarks.Load(arg)
		if err != nil {
			return nil, UsageError(fmt.Errorf("task %s is invalid (see 'harness tasks validate %s'): %w", arg, arg, err))
		}
		return t, nil
	}
	tasks, err := r.Resolve(ctx, []string{arg})
	if err != nil {
		var missing *benchmarks.MissingTasksError
		var invalid *benchmarks.InvalidTaskError
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("interrupted before the trial started: %w", ctx.Err())
		case errors.As(err, &missing):
			return nil, UsageError(fmt.Errorf("%w (see 'harness tasks list')", err))
		case errors.As(err, &invalid):
			return nil, UsageError(fmt.Errorf("task %s is invalid: %w", arg, err))
		}
		return nil, &ExitError{Code: ExitFailed, Err: fmt.Errorf("find task %s: %w", arg, err)}
	}
	return tasks[0], nil
}

// newJobDir creates a fresh directory named name (or name-2, name-3, ...)
// under parent and returns its absolute path. It never reuses a directory,
// so an earlier trial's files are never mixed with this one's.
func newJobDir(parent, name string) (string, error) {
	abs, err := filepath.Abs(parent)
	if err != nil {
		return "", fmt.Errorf("job directory under %s: %w", parent, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", parent, err)
	}
	for i := 1; i <= 1000; i++ {
		dir := filepath.Join(abs, name)
		if i > 1 {
			dir += "-" + strconv.Itoa(i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("create job directory: %w", err)
		}
	}
	return "", fmt.Errorf("create job directory: %s/%s and its numbered variants all exist", abs, name)
}

// tryExit maps how the trial ended to the exit code.
func tryExit(ctx context.Context, tr *harness.Trace, jobDir string) error {
	switch {
	case tr.Cancelled || tr.Status == harness.TrialInterrupted || (ctx.Err() != nil && tr.Status == harness.TrialEnvFailure):
		return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("interrupted: the trial was abandoned before it was scored; its record is in %s", jobDir)}
	case tr.Status == harness.TrialScored:
		return nil
	case tr.Status == harness.TrialEnvFailure:
		return &ExitError{Code: ExitEnvFailures, Err: fmt.Errorf("environment failure: nothing was scored (errors above; logs in %s)", jobDir)}
	case tr.Status == harness.TrialAgentTimeout:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("the %s agent did not finish within the agent timeout; raise [agent] timeout_sec or check the task (logs in %s)", tr.Agent, jobDir)}
	}
	return &ExitError{Code: ExitFailed, Err: fmt.Errorf("the trial failed: %s (errors above; logs in %s)", tr.Status, jobDir)}
}

// writeTraceSummary prints the parts of a trace a task author checks.
func writeTraceSummary(w io.Writer, tr *harness.Trace, task *benchmarks.Task) {
	row := func(label, value string) { fmt.Fprintf(w, "%-10s %s\n", label, value) }
	row("task", tr.TaskID)
	row("agent", tr.Agent)
	row("status", string(tr.Status))
	if tr.Reward != nil {
		row("reward", strconv.FormatFloat(*tr.Reward, 'g', -1, 64))
	} else {
		row("reward", "none (no valid reward: never counted as 0)")
	}
	if t := tr.Tests; t.Total > 0 {
		s := fmt.Sprintf("%d passed, %d failed, %d total", t.Passed, t.Failed, t.Total)
		if t.Skipped > 0 {
			s = fmt.Sprintf("%d passed, %d failed, %d skipped, %d total", t.Passed, t.Failed, t.Skipped, t.Total)
		}
		row("tests", s)
	} else {
		row("tests", "no per-test report (ctrf.json)")
	}
	round := func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
	tm := tr.Timings
	row("timings", fmt.Sprintf("build %s, setup %s, agent %s, verifier %s, total %s",
		round(tm.Build), round(tm.Setup), round(tm.Agent), round(tm.Verifier), round(tm.Total)))
	if tr.Image != "" {
		row("image", tr.Image)
	}
	row("job dir", tr.JobDir)
	if len(tr.Errors) == 0 {
		row("errors", "none")
	} else {
		row("errors", "")
		for _, e := range tr.Errors {
			for _, line := range strings.Split(strings.TrimRight(e, "\n"), "\n") {
				fmt.Fprintln(w, "  "+line)
			}
		}
	}
	for _, w := range tr.Warnings {
		row("warning", w)
	}
	if tr.Status == harness.TrialVerifierError && tr.VerifierOutput != "" {
		fmt.Fprintln(w, "verifier output (excerpt):")
		for _, line := range lastLines(tr.VerifierOutput, 20) {
			fmt.Fprintln(w, "  "+line)
		}
	}
	if tr.Reward != nil && *tr.Reward < 1 && tr.Agent == harness.AgentOracle && tr.Status == harness.TrialScored {
		fmt.Fprintf(w, "note: the oracle should score 1; check %s's solution and verifier\n", task.ID)
	}
}

func lastLines(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// announcingBackend tells the user when a trial's image is being built,
// which can take minutes where everything else takes seconds. The backend
// decides whether to build, so the notice appears once EnsureImage has been
// busy for longer than a lookup of an existing image takes.
type announcingBackend struct {
	harness.Backend
	w     io.Writer
	after time.Duration
	now   func() time.Time // the clock the build is timed with
}

func (b *announcingBackend) EnsureImage(ctx context.Context, task *benchmarks.Task) (string, bool, error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTimer(b.after)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			fmt.Fprintf(b.w, "building the image for task %s from %s (this can take a few minutes)...\n", task.ID, task.EnvironmentDir())
		}
	}()
	start := b.now()
	image, built, err := b.Backend.EnsureImage(ctx, task)
	close(done)
	wg.Wait() // the notice is never written after the lines that follow it
	if err == nil && built {
		fmt.Fprintf(b.w, "built image %s in %s\n", image, b.now().Sub(start).Round(100*time.Millisecond))
	}
	return image, built, err
}
