package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/internal/tartree"
)

// SolutionDir is where the oracle copies a task's solution/ in the sandbox.
const SolutionDir = "/solution"

// OracleAgent runs the task's reference solution, solution/solve.sh, with the
// solution environment. A task it cannot solve has a broken solution or
// verifier.
type OracleAgent struct{}

// Name is "oracle".
func (OracleAgent) Name() string { return "oracle" }

// Prepare checks that the task has solution/solve.sh and copies solution/
// to /solution, unless solve.sh's own exec unpacks it (inlineSolution):
// the harness's setup, before the oracle's first instruction.
func (OracleAgent) Prepare(ctx context.Context, in AgentInput) error {
	if in.Task == nil || in.Sandbox == nil {
		return errors.New("oracle: no task or sandbox")
	}
	solDir := filepath.Join(in.Task.Dir, "solution")
	if _, err := os.Stat(filepath.Join(solDir, "solve.sh")); err != nil {
		return fmt.Errorf("oracle: task %s has no solution/solve.sh: %w", in.Task.ID, err)
	}
	if inlineSolution(in) {
		return nil
	}
	return copySolution(ctx, in)
}

func copySolution(ctx context.Context, in AgentInput) error {
	if err := in.Sandbox.CopyDirIn(ctx, filepath.Join(in.Task.Dir, "solution"), SolutionDir); err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	return nil
}

// inlineSolution reports whether solve.sh runs as root, so that its exec
// can unpack the solution itself from a tar on its stdin before solve.sh
// starts: that saves a copy through the engine's archive API, which costs
// the engine as much as an exec. Another user could not create /solution.
func inlineSolution(in AgentInput) bool {
	if user := in.Task.Config.Agent.User; user != "" {
		return IsRootUser(user)
	}
	rooted, ok := in.Sandbox.(interface{ DefaultUserIsRoot() bool })
	return ok && rooted.DefaultUserIsRoot()
}

// Markers of oracleScript on stderr, each followed by the exec's token, with
// exit codes solve.sh's own cannot be mistaken for, since the token is new.
const (
	solutionNoTar      = "harness: no tar in the image to unpack the solution"
	solutionNoTarCode  = 98
	solutionUnpack     = "harness: could not unpack the solution"
	solutionUnpackCode = 97
)

// oracleScript unpacks the solution from stdin (solutionTar: the stream
// itself creates SolutionDir, which saves a mkdir) and runs solve.sh with
// no stdin; %[1]s is the exec's token.
var oracleScript = `command -v tar >/dev/null 2>&1 || { echo '` + solutionNoTar + ` %[1]s' >&2; exit ` + fmt.Sprint(solutionNoTarCode) + `; }
tar -x -f - -C / || { echo '` + solutionUnpack + ` %[1]s' >&2; exit ` + fmt.Sprint(solutionUnpackCode) + `; }
exec bash ` + SolutionDir + `/solve.sh </dev/null`

// Run runs bash /solution/solve.sh until it ends or ctx's deadline passes,
// with the solution unpacked by the same exec or put in place by Prepare.
// Its stdout and stderr are saved under JobDir/agent/. A non-zero exit is
// an error.
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
	res, err := runSolve(ctx, in, timeout)
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

// FirstCommand is solve.sh's exec as the sandbox's first command: it
// unpacks the solution from its stdin and runs solve.sh, so the trial
// makes no exec for the oracle at all. None when solve.sh runs as a user
// other than root (who could not create /solution) or is missing.
func (OracleAgent) FirstCommand(task *benchmarks.Task, timeout time.Duration) *FirstCommand {
	if task == nil || (task.Config.Agent.User != "" && !IsRootUser(task.Config.Agent.User)) {
		return nil
	}
	solDir := filepath.Join(task.Dir, "solution")
	if _, err := os.Stat(filepath.Join(solDir, "solve.sh")); err != nil {
		return nil
	}
	token := randomHex()
	return &FirstCommand{
		Cmd:        []string{"bash", "-c", fmt.Sprintf(oracleScript, token)},
		Env:        EnvList(task.Config.Solution.Env),
		WriteStdin: func(w io.Writer) error { return solutionTar(w, task) },
		Timeout:    timeout,
		Token:      token,
	}
}

// runSolve runs solve.sh as the agent's user (the oracle is an agent): it
// takes the result of the sandbox's first command when the sandbox ran it,
// else runs one exec that unpacks the solution first when inlineSolution
// allows. An image without tar gets the solution through the sandbox's
// copy instead.
func runSolve(ctx context.Context, in AgentInput, timeout time.Duration) (ExecResult, error) {
	req := ExecRequest{
		Cmd:     []string{"bash", SolutionDir + "/solve.sh"},
		Env:     EnvList(in.Task.Config.Solution.Env),
		Timeout: timeout,
		User:    in.Task.Config.Agent.User,
	}
	if fr, ok := in.Sandbox.(FirstRunner); ok {
		res, first, err := fr.FirstResult(ctx)
		if err != nil || first != nil {
			return inlineOutcome(ctx, in, req, res, err, first)
		}
	}
	if !inlineSolution(in) {
		return in.Sandbox.Exec(ctx, req)
	}
	token := randomHex()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(solutionTar(pw, in.Task)) }()
	defer pr.CloseWithError(errors.New("solve.sh's exec ended"))
	inline := req
	inline.Cmd = []string{"bash", "-c", fmt.Sprintf(oracleScript, token)}
	inline.Stdin = pr
	res, err := in.Sandbox.Exec(ctx, inline)
	return inlineOutcome(ctx, in, req, res, err, &FirstCommand{Token: token})
}

// solutionTar writes task's solution/ as a tar stream of SolutionDir, to
// unpack at /.
func solutionTar(w io.Writer, task *benchmarks.Task) error {
	return tartree.WriteUnder(w, filepath.Join(task.Dir, "solution"), path.Base(SolutionDir), tartree.Walk)
}

// inlineOutcome reads the result of oracleScript (run with cmd's token):
// an unpacking failure is an error, and an image without tar gets the
// solution copied in and solve.sh run by req.
func inlineOutcome(ctx context.Context, in AgentInput, req ExecRequest, res ExecResult, err error, cmd *FirstCommand) (ExecResult, error) {
	switch {
	case err != nil:
		return res, err
	case scriptSaid(res, solutionUnpackCode, solutionUnpack, cmd.Token):
		return res, fmt.Errorf("unpack the solution into %s: %s", SolutionDir, Clip(strings.TrimSpace(res.Stderr), 300))
	case !scriptSaid(res, solutionNoTarCode, solutionNoTar, cmd.Token):
		return res, nil
	}
	if err := copySolution(ctx, in); err != nil {
		return ExecResult{}, err
	}
	return in.Sandbox.Exec(ctx, req)
}

// scriptSaid reports whether an exec ended with code after writing marker
// and the exec's token on stderr.
func scriptSaid(res ExecResult, code int, marker, token string) bool {
	return res.ExitCode == code && strings.Contains(res.Stderr, marker+" "+token)
}
