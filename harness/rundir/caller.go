package rundir

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
)

// CallerKind is the kind of work a model call is charged to: the first
// segment of its caller path, or for co-evolution work the segment after
// "coevo".
type CallerKind string

// Caller kinds, each with the shape of its path. A kind alone (planner,
// coevo/advisor) is the path of a role not yet told which trial or batch
// it works for.
const (
	CallerPlanner    CallerKind = "planner"     // planner/<trial>[/proposal]
	CallerExecutor   CallerKind = "executor"    // executor/<student>/<trial>[/<agent>]
	CallerMediator   CallerKind = "mediator"    // mediator/<trial>
	CallerCompactor  CallerKind = "compactor"   // compactor/<trial>
	CallerAdvisor    CallerKind = "advisor"     // coevo/advisor/<batch>
	CallerDraft      CallerKind = "draft"       // coevo/draft/<batch>
	CallerValidation CallerKind = "validation"  // coevo/validation/<validation trial>[/<agent>]
	CallerReflector  CallerKind = "reflector"   // coevo/reflector/<role>/i<NNNN>
	CallerJudge      CallerKind = "judge"       // coevo/judge/<batch>
	CallerMetaReview CallerKind = "meta_review" // coevo/meta_review/i<NNNN>
	CallerRoute      CallerKind = "route"       // coevo/route/<student>/i<NNNN>
)

// coevoSegment starts the path of co-evolution work, which runs between
// iterations and belongs to no training trial.
const coevoSegment = "coevo"

// proposalSegment ends the path of the Planner's proposal after a trial.
const proposalSegment = "proposal"

// Caller is a caller path of the budget ledger and the call log: who a
// model call is charged to. Build one with a constructor (PlannerCaller,
// ExecutorCaller, ...) and write it with String; read one with ParseCaller.
type Caller struct {
	Kind CallerKind
	// Trial is the trial id, for the kinds tied to one trial: a training
	// trial (TrialID), a held-out one (EvalTrialID), or for validation a
	// validation trial (ValidationTrialID).
	Trial string
	// Student is the executor's student.
	Student string
	// Proposal marks the Planner's proposal after a trial, not its plan.
	Proposal bool
	// Agent is the lab agent that made an executor or validation call
	// (coordinator, or a subagent's kind): the agent appends it to the
	// path it is given.
	Agent string
	// Batch is the batch of proposals the Advisor reviews, the Planner
	// drafts from, or the judge's tournament answers.
	Batch string
	// Candidate is the tournament candidate a draft is for (c2, c3, ...);
	// empty for a batch's first or only draft.
	Candidate string
	// Role and Iteration say which skill the Reflector reflects on, and
	// after which iteration.
	Role      conditions.Role
	Iteration int
}

// PlannerCaller charges the Planner's plan for a trial.
func PlannerCaller(trial string) Caller { return Caller{Kind: CallerPlanner, Trial: trial} }

// ProposalCaller charges the Planner's proposal after a trial.
func ProposalCaller(trial string) Caller {
	return Caller{Kind: CallerPlanner, Trial: trial, Proposal: true}
}

// ExecutorCaller charges a student's work on a trial.
func ExecutorCaller(student, trial string) Caller {
	return Caller{Kind: CallerExecutor, Student: student, Trial: trial}
}

// MediatorCaller charges the Mediator's report on a trial.
func MediatorCaller(trial string) Caller { return Caller{Kind: CallerMediator, Trial: trial} }

// CompactorCaller charges the summary of a trial's trace.
func CompactorCaller(trial string) Caller { return Caller{Kind: CallerCompactor, Trial: trial} }

// AdvisorCaller charges the Advisor's review of a batch.
func AdvisorCaller(batch string) Caller { return Caller{Kind: CallerAdvisor, Batch: batch} }

// DraftCaller charges the Planner's draft of a skill from a batch.
func DraftCaller(batch string) Caller { return Caller{Kind: CallerDraft, Batch: batch} }

// CandidateCaller charges the Planner's draft of tournament candidate
// candidate of a batch.
func CandidateCaller(batch, candidate string) Caller {
	return Caller{Kind: CallerDraft, Batch: batch, Candidate: candidate}
}

// JudgeCaller charges the judge's comparisons in a batch's tournament.
func JudgeCaller(batch string) Caller { return Caller{Kind: CallerJudge, Batch: batch} }

// MetaReviewCaller charges the Reflector's meta-review after iteration it.
func MetaReviewCaller(it int) Caller { return Caller{Kind: CallerMetaReview, Iteration: it} }

// ValidationCaller charges the executor's work on a validation trial.
func ValidationCaller(trial string) Caller { return Caller{Kind: CallerValidation, Trial: trial} }

// ReflectorCaller charges the reflection on role's skill after iteration it.
func ReflectorCaller(role conditions.Role, it int) Caller {
	return Caller{Kind: CallerReflector, Role: role, Iteration: it}
}

// RouteCaller charges the Mediator's routing of other students' evidence
// to student after iteration it.
func RouteCaller(student string, it int) Caller {
	return Caller{Kind: CallerRoute, Student: student, Iteration: it}
}

// Coevo reports whether the call is co-evolution work, done between
// iterations rather than in a trial.
func (c Caller) Coevo() bool {
	switch c.Kind {
	case CallerAdvisor, CallerDraft, CallerValidation, CallerReflector, CallerJudge, CallerMetaReview, CallerRoute:
		return true
	}
	return false
}

// String is the caller path.
func (c Caller) String() string {
	var segs []string
	if c.Coevo() {
		segs = append(segs, coevoSegment)
	}
	segs = append(segs, string(c.Kind))
	switch c.Kind {
	case CallerPlanner, CallerMediator, CallerCompactor:
		segs = appendSet(segs, c.Trial)
		if c.Proposal {
			segs = append(segs, proposalSegment)
		}
	case CallerExecutor:
		segs = appendSet(segs, c.Student, c.Trial, c.Agent)
	case CallerValidation:
		segs = appendSet(segs, c.Trial, c.Agent)
	case CallerAdvisor, CallerDraft, CallerJudge:
		segs = appendSet(segs, c.Batch, c.Candidate)
	case CallerMetaReview:
		if c.Iteration > 0 {
			segs = append(segs, "i"+iterationName(c.Iteration))
		}
	case CallerReflector:
		if c.Role != "" {
			segs = append(segs, string(c.Role), "i"+iterationName(c.Iteration))
		}
	case CallerRoute:
		if c.Student != "" {
			segs = append(segs, c.Student, "i"+iterationName(c.Iteration))
		}
	}
	return strings.Join(segs, "/")
}

// appendSet appends the segments up to the first empty one.
func appendSet(segs []string, more ...string) []string {
	for _, s := range more {
		if s == "" {
			break
		}
		segs = append(segs, s)
	}
	return segs
}

// ModelRole is the model role the call charges: the kind's role, the
// Planner for a draft, the Executor for validation, and a subagent's own
// role (code, explore, plan) when one made the call.
func (c Caller) ModelRole() conditions.Role {
	if r := conditions.Role(c.Agent); r == conditions.RoleCode || r == conditions.RoleExplore || r == conditions.RolePlan {
		return r
	}
	switch c.Kind {
	case CallerRoute:
		return conditions.RoleMediator
	case CallerDraft:
		return conditions.RolePlanner
	case CallerMetaReview:
		return conditions.RoleReflector
	case CallerValidation:
		return conditions.RoleExecutor
	}
	return conditions.Role(c.Kind)
}

// Scope is the task and iteration the call belongs to, read from its trial
// id: both for a training trial; the task alone for a held-out trial (its
// number is the checkpoint it scores) and for a validation trial; the
// iteration alone for a reflection; neither for a batch.
func (c Caller) Scope() (task string, iteration int) {
	if c.Kind == CallerReflector || c.Kind == CallerMetaReview || c.Kind == CallerRoute {
		return "", c.Iteration
	}
	t, ok := parseTrialID(c.Trial)
	if !ok {
		return "", 0
	}
	if t.kind == trialTraining {
		return t.task, t.iteration
	}
	return t.task, 0
}

// Training reports whether the call is a training trial's plan or its
// Executor's work: the trial work a per-trial estimate is made of.
func (c Caller) Training() bool {
	t, ok := parseTrialID(c.Trial)
	if !ok || t.kind != trialTraining {
		return false
	}
	return c.Kind == CallerExecutor || c.Kind == CallerPlanner && !c.Proposal
}

// HeldOut reports whether the call belongs to a held-out evaluation trial.
func (c Caller) HeldOut() bool {
	t, ok := parseTrialID(c.Trial)
	return ok && t.kind == trialHeldOut
}

// ParseCaller reads a caller path back. Every path the run writes parses;
// anything else is an error that says what is wrong with it.
func ParseCaller(path string) (Caller, error) {
	segs := strings.Split(path, "/")
	for _, s := range segs {
		if s == "" {
			return Caller{}, callerError(path, "has an empty segment")
		}
	}
	if segs[0] == coevoSegment {
		if len(segs) == 1 {
			return Caller{}, callerError(path, "names no co-evolution step (advisor, draft, judge, validation, reflector, meta_review or route)")
		}
		return parseCoevo(path, CallerKind(segs[1]), segs[2:])
	}
	return parseTrialWork(path, CallerKind(segs[0]), segs[1:])
}

func callerError(path, what string) error {
	return fmt.Errorf("caller path %q %s; want planner/<trial>[/proposal], executor/<student>/<trial>[/<agent>], "+
		"mediator/<trial>, compactor/<trial>, coevo/advisor/<batch>, coevo/draft/<batch>[/<candidate>], coevo/judge/<batch>, "+
		"coevo/validation/<trial>[/<agent>], coevo/reflector/<role>/i<NNNN>, coevo/meta_review/i<NNNN> or coevo/route/<student>/i<NNNN>", path, what)
}

// parseTrialWork reads the path of a role's work on one trial; rest
// follows the kind.
func parseTrialWork(path string, kind CallerKind, rest []string) (Caller, error) {
	c := Caller{Kind: kind}
	switch kind {
	case CallerPlanner:
		if len(rest) == 2 && rest[1] != proposalSegment {
			return Caller{}, callerError(path, fmt.Sprintf("ends in %q where only %q may follow the trial", rest[1], proposalSegment))
		}
		if len(rest) > 2 {
			return Caller{}, callerError(path, "has too many segments for the planner")
		}
		c.Proposal = len(rest) == 2
	case CallerMediator, CallerCompactor:
		if len(rest) > 1 {
			return Caller{}, callerError(path, fmt.Sprintf("has too many segments for the %s", kind))
		}
	case CallerExecutor:
		switch len(rest) {
		case 0:
			return c, nil
		case 1:
			return Caller{}, callerError(path, "names a student but no trial")
		case 2, 3:
			c.Student, rest = rest[0], rest[1:]
			if len(rest) == 2 {
				c.Agent = rest[1]
			}
		default:
			return Caller{}, callerError(path, "has too many segments for the executor")
		}
	default:
		return Caller{}, callerError(path, fmt.Sprintf("starts with %q, which is no caller kind", kind))
	}
	if len(rest) == 0 {
		return c, nil
	}
	if t, ok := parseTrialID(rest[0]); !ok || t.kind == trialValidation {
		return Caller{}, callerError(path, fmt.Sprintf("has %q where a trial id (i<NNNN>-<task> or e<NNNN>-k<NN>-<task>) belongs", rest[0]))
	}
	c.Trial = rest[0]
	return c, nil
}

// parseCoevo reads the path of co-evolution work after "coevo"; rest
// follows the kind.
func parseCoevo(path string, kind CallerKind, rest []string) (Caller, error) {
	c := Caller{Kind: kind}
	switch kind {
	case CallerAdvisor, CallerJudge:
		if len(rest) > 1 {
			return Caller{}, callerError(path, fmt.Sprintf("has too many segments for the %s", kind))
		}
		if len(rest) == 1 {
			c.Batch = rest[0]
		}
	case CallerDraft:
		if len(rest) > 2 {
			return Caller{}, callerError(path, "has too many segments for a draft")
		}
		if len(rest) >= 1 {
			c.Batch = rest[0]
		}
		if len(rest) == 2 {
			c.Candidate = rest[1]
		}
	case CallerMetaReview:
		switch len(rest) {
		case 0:
		case 1:
			m := iterationSegment.FindStringSubmatch(rest[0])
			if m == nil {
				return Caller{}, callerError(path, fmt.Sprintf("has %q where the iteration (i<NNNN>) belongs", rest[0]))
			}
			c.Iteration = atoi(m[1])
		default:
			return Caller{}, callerError(path, "has too many segments for a meta-review")
		}
	case CallerValidation:
		if len(rest) > 2 {
			return Caller{}, callerError(path, "has too many segments for validation")
		}
		if len(rest) >= 1 {
			if t, ok := parseTrialID(rest[0]); !ok || t.kind != trialValidation {
				return Caller{}, callerError(path, fmt.Sprintf("has %q where a validation trial id (v<batch>-<arm>-<task>-k<N>) belongs", rest[0]))
			}
			c.Trial = rest[0]
		}
		if len(rest) == 2 {
			c.Agent = rest[1]
		}
	case CallerReflector:
		switch len(rest) {
		case 0:
		case 2:
			m := iterationSegment.FindStringSubmatch(rest[1])
			if m == nil {
				return Caller{}, callerError(path, fmt.Sprintf("has %q where the iteration (i<NNNN>) belongs", rest[1]))
			}
			c.Role, c.Iteration = conditions.Role(rest[0]), atoi(m[1])
		default:
			return Caller{}, callerError(path, "needs both the skill's role and the iteration after reflector")
		}
	case CallerRoute:
		switch len(rest) {
		case 0:
		case 2:
			m := iterationSegment.FindStringSubmatch(rest[1])
			if m == nil {
				return Caller{}, callerError(path, fmt.Sprintf("has %q where the iteration (i<NNNN>) belongs", rest[1]))
			}
			c.Student, c.Iteration = rest[0], atoi(m[1])
		default:
			return Caller{}, callerError(path, "needs both the student and the iteration after route")
		}
	default:
		return Caller{}, callerError(path, fmt.Sprintf("names %q, which is no co-evolution step", kind))
	}
	return c, nil
}

// TrialID names a training trial: "i0003-<task>" is task's trial in
// iteration 3.
func TrialID(iteration int, task string) string {
	return "i" + iterationName(iteration) + "-" + task
}

// StudentTrialID names one student's trial of task in a training
// iteration, when several students attempt the task in that iteration
// ([labs.<name>] assignment = "all"). Task ids never hold '@'.
func StudentTrialID(iteration int, task, student string) string {
	return TrialID(iteration, task) + "@" + student
}

// ValidationTrialID names one validation trial of a batch: the index-th
// trial of task on arm (current or candidate).
func ValidationTrialID(batch, arm, task string, index int) string {
	return fmt.Sprintf("v%s-%s-%s-k%d", batch, arm, task, index)
}

// trialKind says which of the three trial ids an id is.
type trialKind int

const (
	trialTraining trialKind = iota + 1
	trialHeldOut
	trialValidation
)

var (
	trainingTrialRE   = regexp.MustCompile(`^i(\d{4,})-([^@]+)(?:@.+)?$`)
	heldOutTrialRE    = regexp.MustCompile(`^e\d{4,}-k\d{2,}-(.+)$`)
	validationTrialRE = regexp.MustCompile(`^v[^-]+-(?:current|candidate)-(.+)-k\d+$`)
	iterationSegment  = regexp.MustCompile(`^i(\d{4,})$`)
)

type trialRef struct {
	kind      trialKind
	task      string
	iteration int // training trials only
}

// parseTrialID reads a trial id that TrialID, EvalTrialID or
// ValidationTrialID wrote.
func parseTrialID(id string) (trialRef, bool) {
	if m := trainingTrialRE.FindStringSubmatch(id); m != nil {
		return trialRef{kind: trialTraining, task: m[2], iteration: atoi(m[1])}, true
	}
	if m := heldOutTrialRE.FindStringSubmatch(id); m != nil {
		return trialRef{kind: trialHeldOut, task: m[1]}, true
	}
	if m := validationTrialRE.FindStringSubmatch(id); m != nil {
		return trialRef{kind: trialValidation, task: m[1]}, true
	}
	return trialRef{}, false
}

// atoi reads digits a pattern matched; a number too large for an int
// reads as 0.
func atoi(digits string) int {
	n, _ := strconv.Atoi(digits)
	return n
}
