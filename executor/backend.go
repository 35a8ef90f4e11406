package executor

import (
	"context"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
)

// Backend provides sandboxes. The Docker backend (executor/docker) is one;
// another engine (a cluster runtime) can be added by implementing this
// without touching the runner.
type Backend interface {
	// EnsureImage returns the image for the task's trials, building it if
	// needed (built reports whether it did). Failures should be *EnvError.
	EnsureImage(ctx context.Context, task *benchmarks.Task) (image string, built bool, err error)
	// StartSandbox starts a fresh sandbox for one trial.
	StartSandbox(ctx context.Context, spec ContainerSpec) (ClosableSandbox, error)
}

// ClosableSandbox is a started sandbox. Close releases it; it must be
// idempotent and must work with an already cancelled context.
type ClosableSandbox interface {
	Sandbox
	Close(ctx context.Context) error
}

// Placed is a sandbox that a backend spreading trials over several engines
// started. Such a backend learns where a trial runs only when it starts the
// sandbox, and gets the task's image there, so the sandbox reports both.
type Placed interface {
	Placement() Placement
}

// Placement is where a placed sandbox runs.
type Placement struct {
	// Engine names the engine (its address).
	Engine string
	// Image is the image the sandbox runs on that engine.
	Image string
	// Build is the part of starting the sandbox spent getting the image
	// onto the engine (building it, or copying a base image).
	Build time.Duration
}

// ContainerSpec says what to start for one trial.
type ContainerSpec struct {
	Image string
	// Task supplies the resources, environment, workdir and network policy.
	Task *benchmarks.Task
	// RunID, Row, Iteration and TrialID label the container so GC and
	// people can tell what it belongs to. RunID is unique across runs and
	// matrices: a standalone run's id, or for a matrix row the matrix's id
	// (Row then names the row).
	RunID     string
	Row       string
	Iteration int
	TrialID   string

	// ModelGateway asks for a network of the trial's own, whose host side
	// a model gateway listens on (GatewayHost), even when the task has no
	// internet: the sandbox then reaches the gateway and nothing else.
	ModelGateway bool

	// First is the agent's first command, to start with the sandbox where
	// the backend can (FirstCommand); nil: none.
	First *FirstCommand
}

// EnvError is a failure of a trial's environment (image build, container
// start), as opposed to something the agent did. Traces record it as
// env_failure, never as a reward.
type EnvError struct {
	Op  string // what was being done, e.g. "build image for task hello"
	Err error
	// Log is the tail of the build output, when there was one.
	Log string
}

func (e *EnvError) Error() string {
	msg := e.Op + ": " + e.Err.Error()
	if e.Log != "" {
		msg += "\n--- build output (tail) ---\n" + e.Log
	}
	return msg
}

func (e *EnvError) Unwrap() error { return e.Err }

// Leftovers counts what a backend removed of an earlier process's run:
// containers (with their anonymous volumes), networks and named volumes.
type Leftovers struct {
	Containers int `json:"containers"`
	Networks   int `json:"networks"`
	Volumes    int `json:"volumes"`
}

// Total is everything removed.
func (l Leftovers) Total() int { return l.Containers + l.Networks + l.Volumes }
