package conditions

import (
	"fmt"
	"slices"
	"strings"
)

// This file is the visibility contract: for each setting of an experiment
// (condition, verifier feedback, cross-task feedback) and each kind of model
// call, the evidence that call may carry. The orchestrator builds every
// role's input through it, and docs/agents.md's table is checked against it,
// so what each agent sees is written down in exactly one place.

// VerifierFeedback is how much of what the verifier reported may reach any
// model, on every channel that can carry it.
type VerifierFeedback string

// The verifier feedback levels, from least to most.
const (
	// VerifierOutcome shows the status, the reward and the test counts.
	VerifierOutcome VerifierFeedback = "outcome"
	// VerifierTests adds each test's name and whether it passed.
	VerifierTests VerifierFeedback = "tests"
	// VerifierDiagnostics adds what the verifier printed: assertion
	// messages, its output and its notes. Expected values often appear
	// there, so a lab could copy answers from it; it is opt-in.
	VerifierDiagnostics VerifierFeedback = "diagnostics"
)

// DefaultVerifierFeedback is the level a new configuration uses.
const DefaultVerifierFeedback = VerifierTests

// VerifierLevels lists the levels from least to most.
func VerifierLevels() []VerifierFeedback {
	return []VerifierFeedback{VerifierOutcome, VerifierTests, VerifierDiagnostics}
}

// ParseVerifierFeedback reads a level name.
func ParseVerifierFeedback(s string) (VerifierFeedback, error) {
	v := VerifierFeedback(strings.TrimSpace(s))
	if slices.Contains(VerifierLevels(), v) {
		return v, nil
	}
	return "", fmt.Errorf("unknown verifier_feedback %q: choose outcome, tests or diagnostics", s)
}

// Shows reports whether level v lets a digest of a trial carry e.
func (v VerifierFeedback) Shows(e Evidence) bool { return traceEvidence(v).Has(e) }

// atLeast reports whether v shows at least as much as min.
func (v VerifierFeedback) atLeast(min VerifierFeedback) bool {
	return slices.Index(VerifierLevels(), v) >= slices.Index(VerifierLevels(), min)
}

// Evidence is one kind of information a model call may carry.
type Evidence int

// The kinds of evidence, in the order the documentation lists them.
const (
	EvidenceInstruction Evidence = iota
	EvidencePlan
	EvidenceDispatchTask
	EvidenceExecutorSkill
	EvidencePlannerSkill
	EvidenceMediatorSkill
	EvidenceTaskSkills
	EvidenceHumanNotes
	EvidenceSharedNotes
	EvidenceOutcome
	EvidenceTestNames
	EvidenceDiagnostics
	EvidenceAgentOutput
	EvidenceTranscript
	EvidenceOwnSummaries
	EvidenceOtherSummaries
	EvidenceOwnReports
	EvidenceOtherReports
	EvidenceProposals
	EvidenceProposalEvidence
	EvidenceRejections
	EvidenceAdvice
	EvidenceHistory
	EvidenceOtherStudents
	EvidenceRoutedItems
	EvidenceNetworkItems
	evidenceCount
)

var evidenceText = [evidenceCount]string{
	EvidenceInstruction:      "task instruction",
	EvidencePlan:             "the Planner's plan for the trial",
	EvidenceDispatchTask:     "the coordinator's task text for a dispatch",
	EvidenceExecutorSkill:    "executor skill",
	EvidencePlannerSkill:     "planner skill",
	EvidenceMediatorSkill:    "mediator protocol",
	EvidenceTaskSkills:       "task skills (index; bodies on demand)",
	EvidenceHumanNotes:       "researchers' notes",
	EvidenceSharedNotes:      "the run's shared notes",
	EvidenceOutcome:          "trial outcome: status, reward, test counts",
	EvidenceTestNames:        "test names and pass/fail",
	EvidenceDiagnostics:      "verifier diagnostics: assertion messages, verifier output and notes",
	EvidenceAgentOutput:      "the Executor's submitted summary and the errors that stopped it",
	EvidenceTranscript:       "the Executor's transcript, condensed",
	EvidenceOwnSummaries:     "trace summaries of the task at hand",
	EvidenceOtherSummaries:   "trace summaries of other tasks",
	EvidenceOwnReports:       "Mediator reports on the task at hand",
	EvidenceOtherReports:     "Mediator reports on other tasks",
	EvidenceProposals:        "executor-skill proposals, each with its delayed reward",
	EvidenceProposalEvidence: "the feedback each proposal came from, and its task's rewards since",
	EvidenceRejections:       "summaries of recently rejected batches",
	EvidenceAdvice:           "the Advisor's feedback on an approved batch",
	EvidenceHistory:          "history entries (plans, reports, proposals) with delayed rewards, their own trial's outcome and what they were written from",
	EvidenceOtherStudents:    "other students' proposals, each with the feedback it came from and its trial's outcome",
	EvidenceRoutedItems:      "items the Mediator routed from other students (a note or a forwarded proposal), each with its source trial and reason",
	EvidenceNetworkItems:     "items other labs of a network sent (skill diffs, notes, reports), each with its sender and reason; in a network only",
}

// String describes the evidence in plain words.
func (e Evidence) String() string {
	if e < 0 || e >= evidenceCount {
		return fmt.Sprintf("evidence(%d)", int(e))
	}
	return evidenceText[e]
}

// AllEvidence lists every kind of evidence in documentation order.
func AllEvidence() []Evidence {
	out := make([]Evidence, evidenceCount)
	for i := range out {
		out[i] = Evidence(i)
	}
	return out
}

// EvidenceSet is a set of evidence kinds; the zero value is empty.
type EvidenceSet uint64

// Has reports whether e is in the set.
func (s EvidenceSet) Has(e Evidence) bool { return s&(1<<uint(e)) != 0 }

// With returns the set with es added.
func (s EvidenceSet) With(es ...Evidence) EvidenceSet {
	for _, e := range es {
		s |= 1 << uint(e)
	}
	return s
}

// Empty reports whether nothing may be shown (the call is never made).
func (s EvidenceSet) Empty() bool { return s == 0 }

// List returns the members in documentation order.
func (s EvidenceSet) List() []Evidence {
	var out []Evidence
	for _, e := range AllEvidence() {
		if s.Has(e) {
			out = append(out, e)
		}
	}
	return out
}

// Consumer is one kind of model call, named by the role that makes it and
// what for.
type Consumer string

// The consumers of evidence.
const (
	ConsumerPlannerPlan     Consumer = "planner_plan"
	ConsumerPlannerProposal Consumer = "planner_proposal"
	ConsumerPlannerDraft    Consumer = "planner_draft"
	ConsumerExecutor        Consumer = "executor"
	ConsumerExplore         Consumer = "explore"
	ConsumerPlan            Consumer = "plan"
	ConsumerCode            Consumer = "code"
	ConsumerMediator        Consumer = "mediator"
	ConsumerRouter          Consumer = "mediator_route"
	ConsumerAdvisor         Consumer = "advisor"
	ConsumerReflector       Consumer = "reflector"
	ConsumerCompactor       Consumer = "compactor"
	// ConsumerJudge compares two executor-skill candidates of a tournament.
	ConsumerJudge Consumer = "judge"
	// ConsumerMetaReview is the Reflector's summary of recurring critiques
	// for the Planner.
	ConsumerMetaReview Consumer = "meta_review"
	// ConsumerMediatorShare is the Mediator deciding, at a network's
	// diffusion barrier, what to send a neighbouring lab.
	ConsumerMediatorShare Consumer = "mediator_share"
	// ConsumerMediatorIntake is the Mediator deciding, under mediated
	// diffusion, whether an item another lab sent goes on to its lab.
	ConsumerMediatorIntake Consumer = "mediator_intake"
)

// Consumers lists every consumer in documentation order.
func Consumers() []Consumer {
	return []Consumer{ConsumerPlannerPlan, ConsumerPlannerProposal, ConsumerPlannerDraft, ConsumerExecutor,
		ConsumerExplore, ConsumerPlan, ConsumerCode, ConsumerMediator, ConsumerRouter, ConsumerMediatorShare, ConsumerMediatorIntake, ConsumerAdvisor,
		ConsumerReflector, ConsumerCompactor, ConsumerJudge, ConsumerMetaReview}
}

// Role is the model role whose calls the consumer makes.
func (c Consumer) Role() Role {
	switch c {
	case ConsumerPlannerPlan, ConsumerPlannerProposal, ConsumerPlannerDraft:
		return RolePlanner
	case ConsumerExplore:
		return RoleExplore
	case ConsumerPlan:
		return RolePlan
	case ConsumerCode:
		return RoleCode
	case ConsumerMetaReview:
		return RoleReflector
	case ConsumerRouter, ConsumerMediatorShare, ConsumerMediatorIntake:
		return RoleMediator
	}
	return Role(c)
}

// Setting is what of an experiment decides visibility.
type Setting struct {
	Condition Condition
	Verifier  VerifierFeedback
	// CrossTask is [experiment] allow_cross_task_feedback.
	CrossTask bool
	// Routing is the row's routing between students; empty is isolated.
	Routing Routing
	// Network is set for a lab of a network experiment whose treatment
	// sends items (broadcast or mediated): only then do other labs' items
	// reach it, and does its Mediator decide what to send.
	Network bool
}

// traceEvidence is what a digest of one trial may carry at level v: the
// outcome always, test names from tests, diagnostics at diagnostics, and
// the Executor's own summary (never verifier output).
func traceEvidence(v VerifierFeedback) EvidenceSet {
	s := EvidenceSet(0).With(EvidenceOutcome, EvidenceAgentOutput)
	if v.atLeast(VerifierTests) {
		s = s.With(EvidenceTestNames)
	}
	if v.atLeast(VerifierDiagnostics) {
		s = s.With(EvidenceDiagnostics)
	}
	return s
}

// Visible is the evidence a consumer's calls may carry under s. An empty
// set means the call is never made under s. Verifier evidence reaches a
// role only inside a digest of a trial (the Mediator's input, and under
// full_traces the summaries built for the Planner), and always at the level
// s.Verifier allows; a Mediator report is the Mediator's own writing, so
// the mediator conditions differ from full_traces in curation, not in
// what the verifier let through.
func (s Setting) Visible(c Consumer) EvidenceSet {
	var out EvidenceSet
	switch c {
	case ConsumerPlannerPlan:
		out = out.With(EvidenceInstruction, EvidenceExecutorSkill, EvidencePlannerSkill, EvidenceHumanNotes)
		out |= s.priorFeedback(true)
	case ConsumerPlannerProposal:
		if s.Condition.ProposalFeedback() == FeedbackNone {
			return 0
		}
		// The outcome of the trial the feedback is about is shown at every
		// verifier level: a proposal judged without it may fix what passed.
		out = out.With(EvidenceInstruction, EvidenceExecutorSkill, EvidencePlannerSkill, EvidenceRejections, EvidenceOutcome)
		out |= s.priorFeedback(false)
	case ConsumerPlannerDraft:
		if s.Condition.ProposalFeedback() == FeedbackNone {
			return 0
		}
		out = out.With(EvidenceExecutorSkill, EvidenceProposals, EvidenceAdvice) | s.fromStudents()
		if s.Network {
			out = out.With(EvidenceNetworkItems)
		}
	case ConsumerExecutor:
		out = out.With(EvidenceInstruction, EvidencePlan, EvidenceExecutorSkill, EvidenceTaskSkills)
	case ConsumerExplore, ConsumerPlan, ConsumerCode:
		out = out.With(EvidenceDispatchTask, EvidenceExecutorSkill, EvidenceTaskSkills)
	case ConsumerMediator:
		if !s.Condition.MediatorRuns() {
			return 0
		}
		out = out.With(EvidencePlan, EvidenceTranscript, EvidenceMediatorSkill) | traceEvidence(s.Verifier)
	case ConsumerAdvisor:
		if s.Condition.ProposalFeedback() == FeedbackNone {
			return 0
		}
		out = out.With(EvidenceExecutorSkill, EvidenceProposals, EvidenceProposalEvidence, EvidenceOutcome)
		out |= s.priorFeedback(false) | s.fromStudents()
		if s.Network {
			out = out.With(EvidenceNetworkItems)
		}
	case ConsumerReflector:
		if s.Condition == NoFeedback {
			return 0
		}
		out = out.With(EvidenceHistory, EvidencePlannerSkill, EvidenceOutcome)
		if s.Condition == LearnedMediator {
			out = out.With(EvidenceMediatorSkill)
		}
		// Each plan and proposal is shown with what it was written from,
		// except trace summaries: they carry the verifier's evidence,
		// which the Reflector is not shown beyond each trial's outcome.
		if s.Condition.PlannerContext() != ContextTraceSummaries {
			out |= s.priorFeedback(true)
		}
	default:
		return s.exchangeVisible(c)
	case ConsumerCompactor:
		if s.Condition != FullTraces {
			return 0
		}
		out = traceEvidence(s.Verifier)
	}
	return out
}

// exchangeVisible is Visible for the calls that move knowledge between
// candidates, students and labs: the routing, share and intake decisions,
// the judge and the meta-review.
func (s Setting) exchangeVisible(c Consumer) EvidenceSet {
	var out EvidenceSet
	switch c {
	case ConsumerRouter:
		// The routing call reads every student's proposals as the Advisor
		// reads a batch: each with its feedback and its trial's outcome.
		if s.Routing.Or() != RoutingMediated || s.Condition.ProposalFeedback() == FeedbackNone {
			return 0
		}
		out = out.With(EvidenceExecutorSkill, EvidenceMediatorSkill, EvidenceProposals, EvidenceProposalEvidence, EvidenceOutcome, EvidenceOtherStudents)
		out |= s.priorFeedback(false)
	case ConsumerMediatorShare:
		// Its lab's adopted lines, and with cross-task feedback its own
		// reports (of every task since the last exchange): never a trial's
		// raw evidence, which the reports already curated.
		if !s.Network || !s.Condition.MediatorRuns() {
			return 0
		}
		out = out.With(EvidenceMediatorSkill, EvidenceExecutorSkill)
		if s.CrossTask {
			out = out.With(EvidenceOtherReports)
		}
	case ConsumerMediatorIntake:
		// The item and what it would change: nothing of its own lab's trials.
		if !s.Network || !s.Condition.MediatorRuns() {
			return 0
		}
		out = out.With(EvidenceNetworkItems, EvidenceExecutorSkill, EvidenceMediatorSkill)
	case ConsumerJudge:
		// The judge sees what the Planner drafted from: the batch's
		// proposals with the feedback they came from and the rejections
		// since, plus the candidates themselves (executor skills).
		if s.Condition.ProposalFeedback() == FeedbackNone {
			return 0
		}
		out = out.With(EvidenceExecutorSkill, EvidenceProposals, EvidenceProposalEvidence, EvidenceRejections, EvidenceOutcome)
		out |= s.priorFeedback(false) | s.fromStudents()
		if s.Network {
			out = out.With(EvidenceNetworkItems)
		}
	case ConsumerMetaReview:
		// Critiques only: the judge's reasons and the Advisor's feedback,
		// and the rejections they led to.
		if s.Condition.ProposalFeedback() == FeedbackNone {
			return 0
		}
		out = out.With(EvidencePlannerSkill, EvidenceAdvice, EvidenceRejections)
	}
	return out
}

// fromStudents is what of other students reaches a batch of a student's
// own skill: their proposals under pooled, the Mediator's routed items
// under mediated, nothing under isolated.
func (s Setting) fromStudents() EvidenceSet {
	switch s.Routing.Or() {
	case RoutingPooled:
		return EvidenceSet(0).With(EvidenceOtherStudents)
	case RoutingMediated:
		return EvidenceSet(0).With(EvidenceRoutedItems)
	}
	return 0
}

// priorFeedback is the feedback on earlier trials the condition passes to
// the Planner (and on to the Advisor with each proposal): trace summaries
// under full_traces, exposed reports under the mediator conditions, the
// shared notes under shared_notes (for planning only). Other tasks' feedback
// needs cross-task feedback and is only ever shown to plan.
func (s Setting) priorFeedback(planning bool) EvidenceSet {
	var out EvidenceSet
	switch s.Condition.PlannerContext() {
	case ContextSharedNotes:
		if planning {
			out = out.With(EvidenceSharedNotes)
		}
	case ContextTraceSummaries:
		out = out.With(EvidenceOwnSummaries) | traceEvidence(s.Verifier)
		if planning && s.CrossTask {
			out = out.With(EvidenceOtherSummaries)
		}
	case ContextMediatorReport:
		out = out.With(EvidenceOwnReports)
		if planning && s.CrossTask {
			out = out.With(EvidenceOtherReports)
		}
	}
	return out
}
