// Package conditions defines the feedback conditions of an experiment, the
// skill-update policies, the named presets and the design rules that decide
// which combinations are allowed. It is pure: no I/O, no state.
package conditions

import (
	"fmt"
	"slices"
	"strings"
)

// Condition decides what prior context the Planner sees and whether the
// Mediator runs.
type Condition string

// The five feedback conditions.
const (
	NoFeedback      Condition = "no_feedback"
	FullTraces      Condition = "full_traces"
	SharedNotes     Condition = "shared_notes"
	StaticMediator  Condition = "static_mediator"
	LearnedMediator Condition = "learned_mediator"
)

// All lists the conditions in their documented order.
func All() []Condition {
	return []Condition{NoFeedback, FullTraces, SharedNotes, StaticMediator, LearnedMediator}
}

// ParseCondition reads a condition name.
func ParseCondition(s string) (Condition, error) {
	c := Condition(strings.TrimSpace(s))
	if slices.Contains(All(), c) {
		return c, nil
	}
	return "", fmt.Errorf("unknown condition %q: choose one of %s", s, joinConditions(All()))
}

// MediatorRuns reports whether the Mediator writes reports under c.
func (c Condition) MediatorRuns() bool { return c == StaticMediator || c == LearnedMediator }

// PriorContext names what the Planner sees from earlier work under a condition.
type PriorContext string

// Kinds of prior context.
const (
	ContextNone           PriorContext = "none"
	ContextTraceSummaries PriorContext = "trace_summaries"
	ContextSharedNotes    PriorContext = "shared_notes"
	ContextMediatorReport PriorContext = "mediator_report"
)

// PlannerContext is the kind of prior context the Planner gets under c.
func (c Condition) PlannerContext() PriorContext {
	switch c {
	case FullTraces:
		return ContextTraceSummaries
	case SharedNotes:
		return ContextSharedNotes
	case StaticMediator, LearnedMediator:
		return ContextMediatorReport
	default:
		return ContextNone
	}
}

// ProposalFeedback is what an executor-skill proposal may be based on.
type ProposalFeedback string

// Kinds of proposal feedback.
const (
	FeedbackNone           ProposalFeedback = "none"
	FeedbackTraceSummary   ProposalFeedback = "trace_summary"
	FeedbackMediatorReport ProposalFeedback = "mediator_report"
)

// ProposalFeedback is the feedback an executor-skill proposal gets under c:
// none under no_feedback and shared_notes, the current usable same-task trace
// summary under full_traces, the exposed report under the mediator conditions.
// A withheld report or an unusable trace gives none, which callers decide.
func (c Condition) ProposalFeedback() ProposalFeedback {
	switch c {
	case FullTraces:
		return FeedbackTraceSummary
	case StaticMediator, LearnedMediator:
		return FeedbackMediatorReport
	default:
		return FeedbackNone
	}
}

// Role names a part of the lab: each model role has its own [models.<role>]
// table, and the three skill roles (executor, planner, mediator) also own a
// skill that a policy may let evolve. Its string is the on-disk name.
type Role string

// The model roles. RoleExecutor, RolePlanner and RoleMediator are the skill
// roles too.
const (
	RolePlanner   Role = "planner"
	RoleExecutor  Role = "executor"
	RoleCode      Role = "code"
	RoleExplore   Role = "explore"
	RolePlan      Role = "plan"
	RoleMediator  Role = "mediator"
	RoleAdvisor   Role = "advisor"
	RoleReflector Role = "reflector"
	RoleCompactor Role = "compactor"
	// RoleJudge compares executor-skill candidates pairwise in a tournament.
	RoleJudge Role = "judge"
)

// ModelRoles lists every model role in a stable order.
func ModelRoles() []Role {
	return []Role{RolePlanner, RoleExecutor, RoleCode, RoleExplore, RolePlan,
		RoleMediator, RoleAdvisor, RoleReflector, RoleCompactor, RoleJudge}
}

// SkillRoles lists the roles that own a skill, in their documented order.
func SkillRoles() []Role { return []Role{RoleExecutor, RolePlanner, RoleMediator} }

// IsModel reports whether r is a model role.
func (r Role) IsModel() bool { return slices.Contains(ModelRoles(), r) }

// IsSkill reports whether r is a skill role.
func (r Role) IsSkill() bool { return slices.Contains(SkillRoles(), r) }

// ParseModelRole reads a model role name, exactly as written.
func ParseModelRole(s string) (Role, error) {
	if r := Role(s); r.IsModel() {
		return r, nil
	}
	return "", fmt.Errorf("unknown model role %q (roles: %s)", s, strings.Join(RoleNames(ModelRoles()), ", "))
}

// ParseSkillRole reads a skill role name, exactly as written.
func ParseSkillRole(s string) (Role, error) {
	if r := Role(s); r.IsSkill() {
		return r, nil
	}
	return "", fmt.Errorf("unknown skill role %q: use executor, planner or mediator", s)
}

// RoleNames returns the names of rs, for places that deal in plain strings.
func RoleNames(rs []Role) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// Policy says which skills may change during a run.
type Policy struct {
	Executor, Planner, Mediator bool
}

// PolicyNone changes nothing; PolicyAll lets every skill evolve.
var (
	PolicyNone = Policy{}
	PolicyAll  = Policy{Executor: true, Planner: true, Mediator: true}
)

// ParsePolicy reads "none", "all", or a comma list of executor, planner and
// mediator. none and all never combine with anything.
func ParsePolicy(s string) (Policy, error) {
	parts := strings.Split(s, ",")
	var p Policy
	seen := map[string]bool{}
	for _, raw := range parts {
		name := strings.TrimSpace(raw)
		if name == "" {
			return Policy{}, fmt.Errorf("skill-update policy %q has an empty entry: use none, all, or a comma list of executor, planner, mediator", s)
		}
		if seen[name] {
			return Policy{}, fmt.Errorf("skill-update policy %q names %q twice", s, name)
		}
		seen[name] = true
		switch name {
		case "none", "all":
			if len(parts) > 1 {
				return Policy{}, fmt.Errorf("skill-update policy %q: %q cannot be combined with other entries", s, name)
			}
			if name == "all" {
				return PolicyAll, nil
			}
			return PolicyNone, nil
		case string(RoleExecutor):
			p.Executor = true
		case string(RolePlanner):
			p.Planner = true
		case string(RoleMediator):
			p.Mediator = true
		default:
			return Policy{}, fmt.Errorf("skill-update policy %q: unknown entry %q (use none, all, or a comma list of executor, planner, mediator)", s, name)
		}
	}
	return p, nil
}

// Allows reports whether the policy lets r's skill change.
func (p Policy) Allows(r Role) bool {
	switch r {
	case RoleExecutor:
		return p.Executor
	case RolePlanner:
		return p.Planner
	case RoleMediator:
		return p.Mediator
	}
	return false
}

// IsNone reports whether nothing may change.
func (p Policy) IsNone() bool { return p == PolicyNone }

// String writes the canonical form: none, all, or the allowed roles in order.
func (p Policy) String() string {
	if p == PolicyNone {
		return "none"
	}
	if p == PolicyAll {
		return "all"
	}
	var names []string
	for _, r := range SkillRoles() {
		if p.Allows(r) {
			names = append(names, string(r))
		}
	}
	return strings.Join(names, ",")
}

// MarshalText writes the canonical policy string.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses a policy string.
func (p *Policy) UnmarshalText(b []byte) error {
	v, err := ParsePolicy(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Rule names a design rule.
type Rule string

// The four design rules.
const (
	RuleNoFeedbackNoUpdates       Rule = "no_feedback allows no skill updates"
	RuleMediatorNeedsLearned      Rule = "mediator updates need learned_mediator"
	RuleSharedNotesNoExecutor     Rule = "shared_notes does not allow executor updates"
	RuleStaticMediatorNeverEvolve Rule = "static_mediator never evolves the Mediator"
)

// RuleError is a broken design rule.
type RuleError struct {
	Rule      Rule
	Condition Condition
	Policy    Policy
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("invalid experiment design: condition %s with skill updates %s breaks the rule %q", e.Condition, e.Policy, e.Rule)
}

// Validate checks a condition and policy against the design rules.
func Validate(c Condition, p Policy) error {
	if _, err := ParseCondition(string(c)); err != nil {
		return err
	}
	switch {
	case c == NoFeedback && !p.IsNone():
		return &RuleError{RuleNoFeedbackNoUpdates, c, p}
	case c == StaticMediator && p.Mediator:
		return &RuleError{RuleStaticMediatorNeverEvolve, c, p}
	case p.Mediator && c != LearnedMediator:
		return &RuleError{RuleMediatorNeedsLearned, c, p}
	case c == SharedNotes && p.Executor:
		return &RuleError{RuleSharedNotesNoExecutor, c, p}
	}
	return nil
}

// Preset is a named (condition, policy) pair.
type Preset struct {
	Name      string
	Condition Condition
	Policy    Policy
}

// Presets returns the six baseline presets in their documented order.
func Presets() []Preset {
	return []Preset{
		{"no_feedback", NoFeedback, PolicyNone},
		{"full_trace_same_task", FullTraces, PolicyNone},
		{"static_mediator_same_task", StaticMediator, PolicyNone},
		{"planner_only_skill_evolution", LearnedMediator, Policy{Planner: true}},
		{"mediator_only_protocol_evolution", LearnedMediator, Policy{Mediator: true}},
		{"full_coevolution", LearnedMediator, PolicyAll},
	}
}

// LookupPreset finds a preset by name.
func LookupPreset(name string) (Preset, error) {
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
	}
	names := make([]string, 0, 6)
	for _, p := range Presets() {
		names = append(names, p.Name)
	}
	return Preset{}, fmt.Errorf("unknown preset %q: choose from %s", name, strings.Join(names, ", "))
}

func joinConditions(cs []Condition) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}
