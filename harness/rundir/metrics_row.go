package rundir

import "time"

// MetricRow is one row of a run's metrics: one task in one iteration of one
// run. The Parquet column names are the snake_case tags; docs/outputs.md
// documents every column. A column that does not apply to a row (no
// matrix, no preset, no test report, no trial) is NULL, never an empty
// string or a zero standing for "none"; parts written before a column
// became optional read back with the zero value.
type MetricRow struct {
	RunID string `parquet:"run_id,dict" json:"run_id"`
	// MatrixID is NULL for a standalone run. RunID is unique across runs
	// and matrices: a run's directory name, or for a matrix row "<matrix
	// id>/<row directory>" (see RunID); ReadMetricsFile qualifies the
	// bare row directory that parts written before held.
	MatrixID *string `parquet:"matrix_id,optional,dict" json:"matrix_id"`
	Row      string  `parquet:"row,dict" json:"row"`
	// BaselinePreset is NULL for a row given as condition and policy.
	BaselinePreset *string `parquet:"baseline_preset,optional,dict" json:"baseline_preset"`

	Condition         string `parquet:"condition,dict" json:"condition"`
	SkillUpdatePolicy string `parquet:"skill_update_policy,dict" json:"skill_update_policy"`
	Lab               string `parquet:"lab,dict" json:"lab"`
	Agent             string `parquet:"agent,dict" json:"agent"`
	Seed              int64  `parquet:"seed" json:"seed"`
	Offline           bool   `parquet:"offline" json:"offline"`
	Iteration         int32  `parquet:"iteration" json:"iteration"`
	TaskID            string `parquet:"task_id,dict" json:"task_id"`
	TrialID           string `parquet:"trial_id" json:"trial_id"`
	Student           string `parquet:"student,dict" json:"student"`
	// StudentModel is the model of the student's Executor ([labs.<name>.
	// students.<id>] model); NULL for agents other than the lab's, and in
	// parts written before the column existed.
	StudentModel *string     `parquet:"student_model,optional,dict" json:"student_model"`
	Status       TrialStatus `parquet:"status,dict" json:"status"`
	// Phase says which estimate the row feeds: PhaseTrain rows are the
	// learning curve on the tasks a row evolves on, PhaseEval rows are a
	// frozen skill checkpoint scored on held-out tasks. Parts written before
	// the column existed read back empty, which means PhaseTrain.
	Phase Phase `parquet:"phase,dict" json:"phase"`
	// CheckpointIteration is, on PhaseEval rows, the iteration whose skills
	// were evaluated (0 is the initial skills); NULL on training rows.
	CheckpointIteration *int32 `parquet:"checkpoint_iteration,optional" json:"checkpoint_iteration"`
	// VerifierFeedback is the [experiment] verifier_feedback setting the
	// row ran under (outcome, tests or diagnostics).
	VerifierFeedback string `parquet:"verifier_feedback,dict" json:"verifier_feedback"`
	// Reward is NULL whenever the trial produced no valid reward.
	Reward     *float64 `parquet:"reward,optional" json:"reward"`
	EnvFailure bool     `parquet:"env_failure" json:"env_failure"`
	// The test counts are NULL when the verifier wrote no per-test report.
	TestsPassed *int32 `parquet:"tests_passed,optional" json:"tests_passed"`
	TestsFailed *int32 `parquet:"tests_failed,optional" json:"tests_failed"`
	TestsTotal  *int32 `parquet:"tests_total,optional" json:"tests_total"`
	// TestsReported says the verifier wrote a per-test report. Parts
	// written before the column existed read back false.
	TestsReported bool `parquet:"tests_reported" json:"tests_reported"`

	// The phase durations are NULL when no trial ran (the plan failed).
	BuildMS    *int64 `parquet:"build_ms,optional" json:"build_ms"`
	AgentMS    *int64 `parquet:"agent_ms,optional" json:"agent_ms"`
	VerifierMS *int64 `parquet:"verifier_ms,optional" json:"verifier_ms"`
	TrialMS    *int64 `parquet:"trial_ms,optional" json:"trial_ms"`
	// QueueMS is how long the trial waited for its turn (the -j budget, a
	// container slot, a place on an engine) before its sandbox was set up;
	// not in TrialMS. NULL when no trial ran.
	QueueMS *int64 `parquet:"queue_ms,optional" json:"queue_ms"`
	// Warnings are settings the trial's sandbox could not apply (a disk
	// limit the storage driver refuses), so an analysis can set such
	// trials apart.
	Warnings []string `parquet:"warnings,list" json:"warnings"`

	// Tokens and cost by role for this task in this iteration: the
	// planner (plans and proposals), the executor (every agent of the
	// trial), the mediator and the compactor. Co-evolution work (advisor,
	// drafts, validation trials, reflection) runs after the iteration's
	// trials and is not tied to one task: its total is split evenly over the
	// iteration's rows (token remainders on the first row), so sums over the
	// dataset are exact.
	PlannerInputTokens    int64   `parquet:"planner_input_tokens" json:"planner_input_tokens"`
	PlannerOutputTokens   int64   `parquet:"planner_output_tokens" json:"planner_output_tokens"`
	PlannerCostUSD        float64 `parquet:"planner_cost_usd" json:"planner_cost_usd"`
	ExecutorInputTokens   int64   `parquet:"executor_input_tokens" json:"executor_input_tokens"`
	ExecutorOutputTokens  int64   `parquet:"executor_output_tokens" json:"executor_output_tokens"`
	ExecutorCostUSD       float64 `parquet:"executor_cost_usd" json:"executor_cost_usd"`
	MediatorInputTokens   int64   `parquet:"mediator_input_tokens" json:"mediator_input_tokens"`
	MediatorOutputTokens  int64   `parquet:"mediator_output_tokens" json:"mediator_output_tokens"`
	MediatorCostUSD       float64 `parquet:"mediator_cost_usd" json:"mediator_cost_usd"`
	CompactorInputTokens  int64   `parquet:"compactor_input_tokens" json:"compactor_input_tokens"`
	CompactorOutputTokens int64   `parquet:"compactor_output_tokens" json:"compactor_output_tokens"`
	CompactorCostUSD      float64 `parquet:"compactor_cost_usd" json:"compactor_cost_usd"`
	CoevoInputTokens      int64   `parquet:"coevo_input_tokens" json:"coevo_input_tokens"`
	CoevoOutputTokens     int64   `parquet:"coevo_output_tokens" json:"coevo_output_tokens"`
	CoevoCostUSD          float64 `parquet:"coevo_cost_usd" json:"coevo_cost_usd"`
	ModelCalls            int32   `parquet:"model_calls" json:"model_calls"`
	// ModelFailures counts the model calls of this trial that failed for
	// good (their retries exhausted, or an error not worth retrying);
	// ModelRetries the extra attempts its calls took. Both are among
	// model_calls and charged in the columns above (see charge_failed).
	ModelFailures int32 `parquet:"model_failures" json:"model_failures"`
	ModelRetries  int32 `parquet:"model_retries" json:"model_retries"`
	// EstimatedTokens is how many of this trial's planner, executor,
	// mediator and compactor tokens were estimated from text, because the
	// endpoint reported no usage for them; 0 when every count was reported.
	EstimatedTokens int64 `parquet:"estimated_tokens" json:"estimated_tokens"`
	// CachedInputTokens is how many of this trial's planner, executor,
	// mediator and compactor input tokens the endpoint reported as read
	// from its prompt cache (already counted in the input columns).
	CachedInputTokens int64 `parquet:"cached_input_tokens" json:"cached_input_tokens"`
	// MalformedToolCalls counts the Executor's tool calls whose arguments
	// could not be used (not JSON, or not what the tool takes).
	MalformedToolCalls int32 `parquet:"malformed_tool_calls" json:"malformed_tool_calls"`
	// Cause says why a trial that was not scored ended as it did: which
	// part failed (model, sandbox, verifier, agent) and its error; NULL
	// for a scored trial.
	Cause *string `parquet:"cause,optional" json:"cause"`

	ExecutorSkillHash string `parquet:"executor_skill_hash,dict" json:"executor_skill_hash"`
	PlannerSkillHash  string `parquet:"planner_skill_hash,dict" json:"planner_skill_hash"`
	MediatorSkillHash string `parquet:"mediator_skill_hash,dict" json:"mediator_skill_hash"`

	// The model id each role was configured with; NULL for a role that has
	// no model or takes no part in the row (see docs/outputs.md).
	PlannerModel   *string `parquet:"planner_model,optional,dict" json:"planner_model"`
	ExecutorModel  *string `parquet:"executor_model,optional,dict" json:"executor_model"`
	MediatorModel  *string `parquet:"mediator_model,optional,dict" json:"mediator_model"`
	CompactorModel *string `parquet:"compactor_model,optional,dict" json:"compactor_model"`
	AdvisorModel   *string `parquet:"advisor_model,optional,dict" json:"advisor_model"`
	ReflectorModel *string `parquet:"reflector_model,optional,dict" json:"reflector_model"`

	// ReportWithheld is NULL when no Mediator ran for this trial.
	ReportWithheld *bool `parquet:"report_withheld,optional" json:"report_withheld"`
	// PlannerContextChars is NULL when no Planner works for the agent.
	PlannerContextChars *int32 `parquet:"planner_context_chars,optional" json:"planner_context_chars"`
	HumanNotes          int32  `parquet:"human_notes" json:"human_notes"`
	Fallbacks           int32  `parquet:"fallbacks" json:"fallbacks"`
	ProposalBuffered    bool   `parquet:"proposal_buffered" json:"proposal_buffered"`

	// When the trial's sandbox work began and ended (UTC); NULL when no
	// trial ran. The retries of the trial's model calls are model_retries.
	TrialStartedAt  *time.Time `parquet:"trial_started_at,optional,timestamp(millisecond)" json:"trial_started_at"`
	TrialFinishedAt *time.Time `parquet:"trial_finished_at,optional,timestamp(millisecond)" json:"trial_finished_at"`

	// Committed skill updates are not on the rows: each is one row of the
	// updates table (UpdateRow). Parts written before it existed repeat an
	// iteration's updates on each of its rows, in a skill_updates column
	// that ReadSkillUpdates still reads.
}

// SkillUpdate is one committed skill change.
type SkillUpdate struct {
	Role         string `parquet:"role" json:"role"`
	ProvenanceID string `parquet:"provenance_id" json:"provenance_id"`
	OldHash      string `parquet:"old_hash" json:"old_hash"`
	NewHash      string `parquet:"new_hash" json:"new_hash"`
}

// Phase names what a metric row estimates.
type Phase string

const (
	// PhaseTrain rows come from the iterations in which skills evolve.
	PhaseTrain Phase = "train"
	// PhaseEval rows score a frozen skill checkpoint on held-out tasks.
	PhaseEval Phase = "eval"
)

// RowPhase is the row's phase, reading a part written before the column
// existed as PhaseTrain.
func (r MetricRow) RowPhase() Phase {
	if r.Phase == "" {
		return PhaseTrain
	}
	return r.Phase
}
