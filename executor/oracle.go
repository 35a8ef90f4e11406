package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
)

// SolutionDir is where the oracle copies a task's solution/ in the sandbox.
const SolutionDir = "/solution"

// OracleAgent runs the task's reference solution, solution/solve.sh, with the
// solution environment. A task it cannot solve has a broken solution or
// verifier.
type OracleAgent struct{}

// Name is "oracle".
func (OracleAgent) Name() string { return "oracle" }

// Prepare copies solution/ to /solution: the harness's setup, before the
// oracle's first instruction.
func (OracleAgent) Prepare(ctx context.Context, in AgentInput) error {
	if in.Task == nil || in.Sandbox == nil {
		return errors.New("oracle: no task or sandbox")
	}
	solDir := filepath.Join(in.Task.Dir, "solution")
	if _, err := os.Stat(filepath.Join(solDir, "solve.sh")); err != nil {
		return fmt.Errorf("oracle: task %s has no solution/solve.sh: %w", in.Task.ID, err)
	}
	if err := in.Sandbox.CopyDirIn(ctx, solDir, SolutionDir); err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	return nil
}

// Run runs bash /solution/solve.sh, which Prepare put in place, until it
// ends or ctx's deadline passes. Its stdout and stderr are saved under
// JobDir/agent/. A non-zero exit is an error.
func (OracleAgent) Run(ctx context.Context, in AgentInput) (AgentResult, error) {
	if in.Task == nil || in.Sandbox == nil {
		return AgentResult{}, errors.New("oracle: no task or sandbox")
	}
	timeout := DefaultAgentTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if timeout <= 0 {
		return AgentResult{}, fmt.Errorf("oracle: %w", context.DeadlineExceeded)
	}
	res, err := in.Sandbox.Exec(ctx, ExecRequest{
		Cmd:     []string{"bash", SolutionDir + "/solve.sh"},
		Env:     EnvList(in.Task.Config.Solution.Env),
		Timeout: timeout,
		User:    in.Task.Config.Agent.User, // the oracle is an agent: it runs as the agent's user
	})
	out := AgentResult{Output: excerpt(res.Stdout+res.Stderr, defaultExcerpt), Streams: []Stream{
		{Name: "solve_stdout", Produced: max(res.StdoutBytes, int64(len(res.Stdout))), Kept: int64(len(res.Stdout))},
		{Name: "solve_stderr", Produced: max(res.StderrBytes, int64(len(res.Stderr))), Kept: int64(len(res.Stderr))},
	}}
	if in.JobDir != "" {
		werr := errors.Join(
			durable.WriteFile(filepath.Join(in.JobDir, rundir.SolveStdoutFile), []byte(res.Stdout), 0o644),
			durable.WriteFile(filepath.Join(in.JobDir, rundir.SolveStderrFile), []byte(res.Stderr), 0o644))
		if werr != nil && err == nil {
			err = werr
		}
	}
	switch {
	case err != nil:
		return out, fmt.Errorf("oracle: %w", err)
	case res.TimedOut:
		return out, fmt.Errorf("oracle: solve.sh ran out of time: %w", context.DeadlineExceeded)
	case res.ExitCode != 0:
		return out, fmt.Errorf("oracle: solve.sh exited with code %d", res.ExitCode)
	}
	out.Submitted = true
	return out, nil
}
