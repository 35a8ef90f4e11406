package conditions

import (
	"errors"
	"strings"
	"testing"
)

// allPolicies enumerates every combination of the three roles.
func allPolicies() []Policy {
	var out []Policy
	for mask := 0; mask < 8; mask++ {
		out = append(out, Policy{Executor: mask&1 != 0, Planner: mask&2 != 0, Mediator: mask&4 != 0})
	}
	return out
}

// expectedRule is the design rules written out independently of Validate.
func expectedRule(c Condition, p Policy) Rule {
	if c == NoFeedback && (p.Executor || p.Planner || p.Mediator) {
		return RuleNoFeedbackNoUpdates
	}
	if c == StaticMediator && p.Mediator {
		return RuleStaticMediatorNeverEvolve
	}
	if p.Mediator && c != LearnedMediator {
		return RuleMediatorNeedsLearned
	}
	if c == SharedNotes && p.Executor {
		return RuleSharedNotesNoExecutor
	}
	return ""
}

func TestValidateEveryCombination(t *testing.T) {
	allowed := 0
	for _, c := range All() {
		for _, p := range allPolicies() {
			t.Run(string(c)+"/"+p.String(), func(t *testing.T) {
				err := Validate(c, p)
				want := expectedRule(c, p)
				if want == "" {
					if err != nil {
						t.Fatalf("Validate = %v, want nil", err)
					}
					allowed++
					return
				}
				var re *RuleError
				if !errors.As(err, &re) {
					t.Fatalf("Validate = %v, want a RuleError for %q", err, want)
				}
				if re.Rule != want {
					t.Errorf("rule = %q, want %q", re.Rule, want)
				}
				if !strings.Contains(err.Error(), string(want)) {
					t.Errorf("message %q does not name the rule", err)
				}
			})
		}
	}
	// no_feedback: none; full_traces: all 4 without mediator; shared_notes:
	// none and planner; static_mediator: 4 without mediator; learned: all 8.
	if allowed != 1+4+2+4+8 {
		t.Errorf("%d combinations allowed, want 19", allowed)
	}
}

func TestValidateUnknownCondition(t *testing.T) {
	if err := Validate("mediated", PolicyNone); err == nil || !strings.Contains(err.Error(), "unknown condition") {
		t.Errorf("Validate(unknown) = %v", err)
	}
}

func TestParsePolicy(t *testing.T) {
	tests := []struct {
		in      string
		want    Policy
		wantErr string
	}{
		{"none", PolicyNone, ""},
		{"all", PolicyAll, ""},
		{"executor", Policy{Executor: true}, ""},
		{"planner,mediator", Policy{Planner: true, Mediator: true}, ""},
		{" mediator , executor ", Policy{Executor: true, Mediator: true}, ""},
		{"executor,planner,mediator", PolicyAll, ""},
		{"none,executor", Policy{}, "cannot be combined"},
		{"all,planner", Policy{}, "cannot be combined"},
		{"executor,executor", Policy{}, "twice"},
		{"", Policy{}, "empty entry"},
		{"executor,", Policy{}, "empty entry"},
		{"reflector", Policy{}, "unknown entry"},
		{"None", Policy{}, "unknown entry"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePolicy(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePolicy(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParsePolicy(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestPolicyStringRoundTrips(t *testing.T) {
	for _, p := range allPolicies() {
		back, err := ParsePolicy(p.String())
		if err != nil || back != p {
			t.Errorf("%+v -> %q -> %+v, %v", p, p.String(), back, err)
		}
		text, _ := p.MarshalText()
		var q Policy
		if err := q.UnmarshalText(text); err != nil || q != p {
			t.Errorf("text round trip of %+v gave %+v, %v", p, q, err)
		}
		for _, r := range SkillRoles() {
			want := map[Role]bool{RoleExecutor: p.Executor, RolePlanner: p.Planner, RoleMediator: p.Mediator}[r]
			if p.Allows(r) != want {
				t.Errorf("%s.Allows(%s) = %v", p, r, p.Allows(r))
			}
		}
	}
	if PolicyNone.String() != "none" || PolicyAll.String() != "all" || (Policy{Planner: true, Mediator: true}).String() != "planner,mediator" {
		t.Error("canonical policy strings changed")
	}
}

func TestConditionProperties(t *testing.T) {
	tests := []struct {
		c        Condition
		mediator bool
		context  PriorContext
		feedback ProposalFeedback
	}{
		{NoFeedback, false, ContextNone, FeedbackNone},
		{FullTraces, false, ContextTraceSummaries, FeedbackTraceSummary},
		{SharedNotes, false, ContextSharedNotes, FeedbackNone},
		{StaticMediator, true, ContextMediatorReport, FeedbackMediatorReport},
		{LearnedMediator, true, ContextMediatorReport, FeedbackMediatorReport},
	}
	if len(tests) != len(All()) {
		t.Fatalf("table covers %d conditions, All has %d", len(tests), len(All()))
	}
	for _, tt := range tests {
		t.Run(string(tt.c), func(t *testing.T) {
			if got, err := ParseCondition(string(tt.c)); err != nil || got != tt.c {
				t.Errorf("ParseCondition = %v, %v", got, err)
			}
			if tt.c.MediatorRuns() != tt.mediator {
				t.Errorf("MediatorRuns = %v", tt.c.MediatorRuns())
			}
			if tt.c.PlannerContext() != tt.context {
				t.Errorf("PlannerContext = %v", tt.c.PlannerContext())
			}
			if tt.c.ProposalFeedback() != tt.feedback {
				t.Errorf("ProposalFeedback = %v", tt.c.ProposalFeedback())
			}
		})
	}
	if _, err := ParseCondition("learned"); err == nil || !strings.Contains(err.Error(), "learned_mediator") {
		t.Errorf("an unknown condition should list the valid ones, got %v", err)
	}
}

func TestPresets(t *testing.T) {
	want := []struct {
		name   string
		cond   Condition
		policy string
	}{
		{"no_feedback", NoFeedback, "none"},
		{"full_trace_same_task", FullTraces, "none"},
		{"static_mediator_same_task", StaticMediator, "none"},
		{"planner_only_skill_evolution", LearnedMediator, "planner"},
		{"mediator_only_protocol_evolution", LearnedMediator, "mediator"},
		{"full_coevolution", LearnedMediator, "all"},
	}
	got := Presets()
	if len(got) != len(want) {
		t.Fatalf("%d presets, want %d", len(got), len(want))
	}
	for i, w := range want {
		p := got[i]
		if p.Name != w.name || p.Condition != w.cond || p.Policy.String() != w.policy {
			t.Errorf("preset %d = %+v, want %+v", i, p, w)
		}
		if err := Validate(p.Condition, p.Policy); err != nil {
			t.Errorf("preset %s breaks a design rule: %v", p.Name, err)
		}
		if l, err := LookupPreset(w.name); err != nil || l != p {
			t.Errorf("LookupPreset(%s) = %+v, %v", w.name, l, err)
		}
	}
	if _, err := LookupPreset("full"); err == nil || !strings.Contains(err.Error(), "full_coevolution") {
		t.Errorf("unknown preset error should list the presets: %v", err)
	}
}

func TestRoles(t *testing.T) {
	tests := []struct {
		name         string
		model, skill bool
	}{
		{"planner", true, true},
		{"executor", true, true},
		{"mediator", true, true},
		{"code", true, false},
		{"explore", true, false},
		{"plan", true, false},
		{"advisor", true, false},
		{"reflector", true, false},
		{"compactor", true, false},
		{"coevo", false, false},
		{"Planner", false, false},
		{" planner", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		r := Role(tt.name)
		if r.IsModel() != tt.model || r.IsSkill() != tt.skill {
			t.Errorf("%q: IsModel %v, IsSkill %v; want %v, %v", tt.name, r.IsModel(), r.IsSkill(), tt.model, tt.skill)
		}
		if got, err := ParseModelRole(tt.name); (err == nil) != tt.model || (err == nil && got != r) {
			t.Errorf("ParseModelRole(%q) = %q, %v", tt.name, got, err)
		}
		if got, err := ParseSkillRole(tt.name); (err == nil) != tt.skill || (err == nil && got != r) {
			t.Errorf("ParseSkillRole(%q) = %q, %v", tt.name, got, err)
		}
	}
}

func TestRoleOrder(t *testing.T) {
	// Both orders are visible: in configuration listings and in policy strings.
	models := "planner,executor,code,explore,plan,mediator,advisor,reflector,compactor,judge"
	if got := strings.Join(RoleNames(ModelRoles()), ","); got != models {
		t.Errorf("model roles %s, want %s", got, models)
	}
	if got := strings.Join(RoleNames(SkillRoles()), ","); got != "executor,planner,mediator" {
		t.Errorf("skill roles %s", got)
	}
	for _, r := range SkillRoles() {
		if !r.IsModel() {
			t.Errorf("skill role %s is not a model role", r)
		}
	}
}

func TestRoleErrors(t *testing.T) {
	_, err := ParseModelRole("coevo")
	if want := `unknown model role "coevo" (roles: planner, executor, code, explore, plan, mediator, advisor, reflector, compactor, judge)`; err == nil || err.Error() != want {
		t.Errorf("ParseModelRole error %v, want %s", err, want)
	}
	_, err = ParseSkillRole("code")
	if want := `unknown skill role "code": use executor, planner or mediator`; err == nil || err.Error() != want {
		t.Errorf("ParseSkillRole error %v, want %s", err, want)
	}
}
