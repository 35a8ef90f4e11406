package executor

import "github.com/mediated-coevo/harness/harness/rundir"

// The trial record is part of the run directory's format, so rundir
// defines it; these names let the runner and its users speak of it as the
// trial contract's own.
type (
	// Status is how a trial ended.
	Status = rundir.TrialStatus
	// Trace is the record of one trial: what happened and how it was scored.
	Trace = rundir.Trace
	// TestResult is one test from a CTRF report.
	TestResult = rundir.TestResult
	// Tests summarises the verifier's per-test results.
	Tests = rundir.Tests
	// Stream records the bytes produced and kept of one captured output.
	Stream = rundir.Stream
	// Timings are the durations of a trial's phases.
	Timings = rundir.Timings
	// Usage counts the model tokens and cost of a trial's agent.
	Usage = rundir.Usage
)

// Trial statuses; see rundir.TrialStatus.
const (
	StatusScored          = rundir.TrialScored
	StatusAgentTimeout    = rundir.TrialAgentTimeout
	StatusAgentError      = rundir.TrialAgentError
	StatusVerifierError   = rundir.TrialVerifierError
	StatusEnvFailure      = rundir.TrialEnvFailure
	StatusBudgetExhausted = rundir.TrialBudgetExhausted
	StatusInterrupted     = rundir.TrialInterrupted
)

// VerifierErrorPrefix starts every entry of Trace.Errors that came from the
// verifier (its notes and its failure), as opposed to the sandbox or agent.
const VerifierErrorPrefix = "verifier: "
