package rundir

import (
	"encoding/json"
	"time"
)

// Files of a trial's job directory (JobDir, EvalJobDir, a validation
// trial's directory), relative to it.
const (
	// TraceFile holds the trial's Trace, written when the trial ends.
	TraceFile = "trace.json"
	// AgentDir and VerifierDir hold what the agent and the verifier left.
	AgentDir    = "agent"
	VerifierDir = "verifier"
	// AgentOutputFile is the agent's final output, when it gave one.
	AgentOutputFile = AgentDir + "/output.txt"
	// SolveStdoutFile and SolveStderrFile keep the reference solution's
	// output when the oracle agent ran it.
	SolveStdoutFile = AgentDir + "/solve-stdout.txt"
	SolveStderrFile = AgentDir + "/solve-stderr.txt"
	// TranscriptFile is the lab agent's transcript, one message per line.
	TranscriptFile = AgentDir + "/transcript.jsonl"
	// CompactionBackupFile keeps the messages compaction dropped.
	CompactionBackupFile = AgentDir + "/compaction-backup.jsonl"
)

// TrialStatus is how a trial ended (a Trace's "status", the status column
// of the metric rows, the keys of the manifest's counts).
type TrialStatus string

// Trial statuses. A missing reward is never conflated with 0: only scored
// traces (and agent timeouts the verifier still scored) carry one.
const (
	TrialScored          TrialStatus = "scored"
	TrialAgentTimeout    TrialStatus = "agent_timeout"
	TrialAgentError      TrialStatus = "agent_error"
	TrialVerifierError   TrialStatus = "verifier_error"
	TrialEnvFailure      TrialStatus = "env_failure"
	TrialBudgetExhausted TrialStatus = "budget_exhausted"
	// TrialInterrupted is a trial cut off by Ctrl-C or a shutdown (its
	// context was cancelled) before it could be scored. It carries no
	// reward and counts as a failure of nobody: statistics leave it out,
	// like any missing reward, and never read it as a zero.
	TrialInterrupted TrialStatus = "interrupted"
)

// TestResult is one test from a CTRF report.
type TestResult struct {
	Name     string  `json:"name"`
	Status   string  `json:"status"` // passed | failed | skipped | pending | other
	Duration float64 `json:"duration_ms,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// Tests summarises the verifier's per-test results, when it reported any.
type Tests struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	Total   int `json:"total"`
	// Reported says the verifier wrote a per-test report (CTRF) that was
	// read; without one the counts are 0 and mean "unknown", not "none".
	Reported bool         `json:"reported"`
	Results  []TestResult `json:"results,omitempty"`
}

// MarshalJSON writes the counts only when the verifier reported its tests:
// without a report they are unknown, so trace.json leaves them out (null
// to a reader), as the Parquet columns hold NULL, instead of 0/0/0/0.
func (t Tests) MarshalJSON() ([]byte, error) {
	type tests Tests // without this method
	if t.Reported {
		return json.Marshal(tests(t))
	}
	return json.Marshal(struct {
		Reported bool         `json:"reported"`
		Results  []TestResult `json:"results,omitempty"`
	}{t.Reported, t.Results})
}

// Stream records how much of one captured output stream a command
// produced and how much of it the record kept, so a flood that was cut
// shows its size.
type Stream struct {
	// Name says which output: verifier (test.sh), solve_stdout, solve_stderr.
	Name     string `json:"name"`
	Produced int64  `json:"produced_bytes"`
	Kept     int64  `json:"kept_bytes"`
}

// Timings are the durations of a trial's phases.
type Timings struct {
	Build    time.Duration `json:"build_ns"`
	Setup    time.Duration `json:"setup_ns"`
	Agent    time.Duration `json:"agent_ns"`
	Verifier time.Duration `json:"verifier_ns"`
	Total    time.Duration `json:"total_ns"`
	// Queue is how long the trial waited for its turn: for the budget of
	// trials in flight and for a container slot. It is in none of the
	// above, Total included.
	Queue time.Duration `json:"queue_ns,omitempty"`
}

// Usage counts the model tokens and cost of a trial's agent.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	ModelCalls   int     `json:"model_calls"`
	// MalformedToolCalls counts tool calls whose arguments could not be
	// used (not a JSON object, or missing what the tool requires).
	MalformedToolCalls int `json:"malformed_tool_calls,omitempty"`
}

// Trace is the record of one trial, its job directory's TraceFile: what
// happened and how it was scored. The trial runner (executor) fills it;
// the orchestrator keeps a copy at TracePath, and the readers show it.
type Trace struct {
	TaskID    string `json:"task_id"`
	Iteration int    `json:"iteration"`
	TrialID   string `json:"trial_id"`
	Agent     string `json:"agent"`
	Image     string `json:"image,omitempty"`
	// Engine is the engine that ran the trial, when the backend spreads
	// trials over several.
	Engine string      `json:"engine,omitempty"`
	Status TrialStatus `json:"status"`
	// Reward is nil whenever the verifier did not produce a valid one.
	Reward  *float64           `json:"reward"`
	Rewards map[string]float64 `json:"rewards,omitempty"`
	Tests   Tests              `json:"tests"`
	// AgentOutput and VerifierOutput are capped excerpts; the full logs are in JobDir.
	AgentOutput    string   `json:"agent_output,omitempty"`
	VerifierOutput string   `json:"verifier_output,omitempty"`
	Errors         []string `json:"errors,omitempty"`
	// Cause says, for a trial that was not scored, which part failed first
	// and why, as "<part>: <error>"; the parts are model, agent, sandbox,
	// verifier, budget and cancelled. Empty when scored.
	Cause string `json:"cause,omitempty"`
	// ModelFailure marks an agent_error caused by the agent's model API (a
	// call failed after its retries) rather than by the agent itself.
	ModelFailure bool `json:"model_failure,omitempty"`
	// Warnings list what the sandbox could not honour of the task's
	// configuration (a disk limit the engine cannot enforce); the trial
	// still ran and was scored.
	Warnings []string `json:"warnings,omitempty"`
	// Streams are the bytes produced and kept of each captured output of
	// the oracle and the verifier.
	Streams []Stream `json:"streams,omitempty"`
	// Cancelled reports that the trial was abandoned (Ctrl-C, shutdown)
	// before it could be scored; its status is interrupted.
	Cancelled bool    `json:"cancelled,omitempty"`
	Timings   Timings `json:"timings"`
	Usage     Usage   `json:"usage"`
	// TranscriptPath is the agent's JSONL transcript, relative to JobDir.
	TranscriptPath string    `json:"transcript_path,omitempty"`
	JobDir         string    `json:"job_dir,omitempty"`
	StartedAt      time.Time `json:"started_at"`
	FinishedAt     time.Time `json:"finished_at"`
}

// Usable reports whether the trace may feed the Mediator, the Planner and
// delayed rewards: it was scored (an agent timeout the verifier still scored
// counts) and carries a reward.
func (t *Trace) Usable() bool {
	return t != nil && t.Reward != nil && (t.Status == TrialScored || t.Status == TrialAgentTimeout)
}

// AgentFault reports whether the agent itself ended the trial in an error
// (agent_error not caused by its model API: a crash, a failure of its own
// making). Where failures count, such a trial is a failure of the skill under
// test, not a lost trial. An agent that stops without submitting, or runs out
// of turns, is scored by the verifier and is not an error at all.
func (t *Trace) AgentFault() bool {
	return t != nil && t.Status == TrialAgentError && !t.ModelFailure
}

// EnvFailure reports whether the trial failed for reasons of its environment
// rather than the agent; such trials are counted apart, never as zeros.
func (t *Trace) EnvFailure() bool { return t != nil && t.Status == TrialEnvFailure }
