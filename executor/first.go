package executor

import (
	"context"
	"io"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
)

// FirstCommand is an agent's first command, which a backend may start
// together with the sandbox, beside its keep-alive, instead of as an exec
// of its own once the sandbox runs: on an engine where an exec costs as
// much as a small container, that is one round of the engine's work less
// per trial. It runs only where the sandbox's default user is root, under
// the same in-sandbox time limit an exec gets; elsewhere the sandbox skips
// it and the agent runs it the ordinary way.
type FirstCommand struct {
	Cmd []string
	Env []string
	// WriteStdin, when set, writes the command's standard input; the
	// stream is closed after it returns.
	WriteStdin func(w io.Writer) error
	// Timeout bounds the command inside the sandbox (rounded up to a
	// whole second).
	Timeout time.Duration
	// OutputCap caps stdout and stderr each (<= 0: DefaultOutputCap).
	OutputCap int
	// Token is the agent's own: the agent recognises its markers by it.
	Token string
}

// FirstStarter is an agent whose first command can start with the sandbox.
// FirstCommand returns nil when it has none for task; timeout is the
// agent timeout.
type FirstStarter interface {
	FirstCommand(task *benchmarks.Task, timeout time.Duration) *FirstCommand
}

// FirstRunner is a sandbox that may have started a first command with
// itself. FirstResult waits for it and returns its result and the command;
// a nil command means the sandbox did not run one, and the agent runs its
// command itself. Like Exec, a command stopped by its limit is a result
// with TimedOut set, and an error is a failure of the sandbox or ctx. A
// sandbox that wraps one of a backend that runs first commands must pass
// FirstResult on, or the agent runs its command a second time.
type FirstRunner interface {
	FirstResult(ctx context.Context) (ExecResult, *FirstCommand, error)
}
