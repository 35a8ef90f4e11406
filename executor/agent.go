package executor

import (
	"context"

	"github.com/mediated-coevo/harness/benchmarks"
)

// Agent does the work of a trial inside a sandbox. The verifier runs after
// Run returns, whatever it returns.
type Agent interface {
	// Name is the agent's kind: lab, oracle, nop.
	Name() string
	Run(ctx context.Context, in AgentInput) (AgentResult, error)
}

// Preparer is an agent with setup of its own in the sandbox before its
// first instruction, such as the oracle copying its solution in. The runner
// calls Prepare before Run and counts it as the trial's setup: the agent
// timeout starts with Run, so a slow engine cannot spend the agent's time
// on the harness's own work.
type Preparer interface {
	Prepare(ctx context.Context, in AgentInput) error
}

// AgentInput is what an agent gets for one trial.
type AgentInput struct {
	Task    *benchmarks.Task
	Sandbox Sandbox
	// Plan is the Planner's plan, shown beside the unmodified instruction.
	Plan string
	// ExecutorSkill is the active executor SKILL.md content.
	ExecutorSkill string
	// JobDir is the trial's directory on the host, for transcripts and logs.
	JobDir string
	// Seed is the trial's seed, derived from the run seed and the trial id.
	Seed int64
	// Caller is the ledger path of this agent's work (rundir.ExecutorCaller,
	// rundir.ValidationCaller); an agent of several loops appends each
	// loop's agent kind as one more segment.
	Caller string
	// Iteration is the run's iteration of this trial (0 when unknown), for
	// the trajectory's record.
	Iteration int
}

// AgentResult is what an agent reports when it stops.
type AgentResult struct {
	// Output is a short excerpt of what the agent did or said (capped).
	Output string
	// TranscriptPath is relative to the job directory.
	TranscriptPath string
	Usage          Usage
	// Submitted reports whether the agent ended with its terminal tool.
	Submitted bool
	// Streams are the bytes produced and kept of the outputs the agent
	// captured (the oracle's solve.sh).
	Streams []Stream
}
