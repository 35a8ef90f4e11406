package conditions

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// allSettings is every setting the contract distinguishes.
func allSettings() []Setting {
	var out []Setting
	for _, c := range All() {
		for _, v := range VerifierLevels() {
			for _, cross := range []bool{false, true} {
				for _, r := range Routings() {
					for _, network := range []bool{false, true} {
						out = append(out, Setting{Condition: c, Verifier: v, CrossTask: cross, Routing: r, Network: network})
					}
				}
			}
		}
	}
	return out
}

func TestVerifierEvidenceFollowsTheLevel(t *testing.T) {
	for _, s := range allSettings() {
		for _, c := range Consumers() {
			got := s.Visible(c)
			if got.Has(EvidenceDiagnostics) && s.Verifier != VerifierDiagnostics {
				t.Errorf("%+v: %s may see diagnostics", s, c)
			}
			if got.Has(EvidenceTestNames) && s.Verifier == VerifierOutcome {
				t.Errorf("%+v: %s may see test names under outcome", s, c)
			}
		}
	}
}

func TestVisibilityRules(t *testing.T) {
	tests := []struct {
		name string
		ok   func(s Setting, c Consumer, got EvidenceSet) bool
	}{
		{"the Executor and its subagents never see verifier output, reports or summaries", func(s Setting, c Consumer, got EvidenceSet) bool {
			if c.Role() == RolePlanner || c.Role() == RoleMediator || c == ConsumerAdvisor || c == ConsumerReflector || c == ConsumerCompactor || c == ConsumerJudge {
				return true
			}
			for _, e := range []Evidence{EvidenceOutcome, EvidenceTestNames, EvidenceDiagnostics, EvidenceOwnReports, EvidenceOwnSummaries, EvidenceHumanNotes} {
				if got.Has(e) {
					return false
				}
			}
			return true
		}},
		{"other tasks' feedback needs cross-task feedback", func(s Setting, c Consumer, got EvidenceSet) bool {
			return s.CrossTask || !(got.Has(EvidenceOtherReports) || got.Has(EvidenceOtherSummaries))
		}},
		{"raw trial evidence reaches the Planner's plan only under full_traces", func(s Setting, c Consumer, got EvidenceSet) bool {
			return c != ConsumerPlannerPlan || s.Condition == FullTraces || !got.Has(EvidenceOutcome)
		}},
		{"beyond the outcome, raw trial evidence reaches a proposal only under full_traces", func(s Setting, c Consumer, got EvidenceSet) bool {
			return c.Role() != RolePlanner || s.Condition == FullTraces || !(got.Has(EvidenceTestNames) || got.Has(EvidenceAgentOutput))
		}},
		{"a proposal and its review see the outcome of the trial it came from", func(s Setting, c Consumer, got EvidenceSet) bool {
			return (c != ConsumerPlannerProposal && c != ConsumerAdvisor) || got.Empty() || got.Has(EvidenceOutcome)
		}},
		{"the Mediator runs only under the mediator conditions and sees the transcript", func(s Setting, c Consumer, got EvidenceSet) bool {
			return c != ConsumerMediator || got.Has(EvidenceTranscript) == s.Condition.MediatorRuns()
		}},
		{"no Planner sees the transcript", func(s Setting, c Consumer, got EvidenceSet) bool {
			return c.Role() != RolePlanner || !got.Has(EvidenceTranscript)
		}},
		{"the compactor sees exactly what the Planner's summaries are built from", func(s Setting, c Consumer, got EvidenceSet) bool {
			if c != ConsumerCompactor || s.Condition != FullTraces {
				return true
			}
			trace := []Evidence{EvidenceOutcome, EvidenceTestNames, EvidenceDiagnostics, EvidenceAgentOutput}
			plan := s.Visible(ConsumerPlannerPlan)
			for _, e := range trace {
				if got.Has(e) != plan.Has(e) {
					return false
				}
			}
			return true
		}},
		{"nothing of another student crosses under isolated routing", func(s Setting, c Consumer, got EvidenceSet) bool {
			return s.Routing.Shares() || !(got.Has(EvidenceOtherStudents) || got.Has(EvidenceRoutedItems)) && c != ConsumerRouter || got.Empty()
		}},
		{"pooled routing hands batches other students' proposals, never routed items", func(s Setting, c Consumer, got EvidenceSet) bool {
			if s.Routing != RoutingPooled {
				return true
			}
			batch := c == ConsumerAdvisor || c == ConsumerPlannerDraft || c == ConsumerJudge
			return !got.Has(EvidenceRoutedItems) && (!batch || got.Empty() || got.Has(EvidenceOtherStudents))
		}},
		{"mediated routing hands batches only what the Mediator routed", func(s Setting, c Consumer, got EvidenceSet) bool {
			if s.Routing != RoutingMediated {
				return true
			}
			batch := c == ConsumerAdvisor || c == ConsumerPlannerDraft || c == ConsumerJudge
			if batch && !got.Empty() && (got.Has(EvidenceOtherStudents) || !got.Has(EvidenceRoutedItems)) {
				return false
			}
			return c == ConsumerRouter || c == ConsumerAdvisor || c == ConsumerPlannerDraft || c == ConsumerJudge || !got.Has(EvidenceOtherStudents)
		}},
		{"the routing call is made only under mediated routing, with proposals to route", func(s Setting, c Consumer, got EvidenceSet) bool {
			if c != ConsumerRouter {
				return true
			}
			made := s.Routing == RoutingMediated && s.Condition.ProposalFeedback() != FeedbackNone
			return got.Empty() != made && (got.Empty() || got.Has(EvidenceOtherStudents))
		}},
		{"another lab's items reach only the receiving Mediator and what reads a batch (Advisor, Planner's draft, judge), and only in a network", func(s Setting, c Consumer, got EvidenceSet) bool {
			return !got.Has(EvidenceNetworkItems) || (s.Network && (c == ConsumerMediatorIntake || c == ConsumerAdvisor || c == ConsumerPlannerDraft || c == ConsumerJudge))
		}},
		{"the share decision is made only in a network, from the Mediator's own writing", func(s Setting, c Consumer, got EvidenceSet) bool {
			if c != ConsumerMediatorShare {
				return true
			}
			raw := []Evidence{EvidenceOutcome, EvidenceTestNames, EvidenceDiagnostics, EvidenceAgentOutput, EvidenceTranscript, EvidenceInstruction}
			return (s.Network && s.Condition.MediatorRuns()) != got.Empty() && !slices.ContainsFunc(raw, got.Has)
		}},
		{"outside a network nothing differs from the same setting without it but the network's own evidence", func(s Setting, c Consumer, got EvidenceSet) bool {
			off := s
			off.Network = false
			return c == ConsumerMediatorShare || c == ConsumerMediatorIntake || got&^EvidenceSet(0).With(EvidenceNetworkItems) == off.Visible(c)
		}},
		{"no_feedback gives the Planner nothing of earlier trials", func(s Setting, c Consumer, got EvidenceSet) bool {
			if s.Condition != NoFeedback {
				return true
			}
			return c != ConsumerPlannerPlan || got == EvidenceSet(0).With(EvidenceInstruction, EvidenceExecutorSkill, EvidencePlannerSkill, EvidenceHumanNotes)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range allSettings() {
				for _, c := range Consumers() {
					if !tt.ok(s, c, s.Visible(c)) {
						t.Errorf("%+v, %s: %v", s, c, s.Visible(c).List())
					}
				}
			}
		})
	}
}

func TestParseVerifierFeedback(t *testing.T) {
	tests := []struct {
		in      string
		want    VerifierFeedback
		wantErr bool
	}{
		{"outcome", VerifierOutcome, false},
		{"tests", VerifierTests, false},
		{" diagnostics ", VerifierDiagnostics, false},
		{"", "", true},
		{"full", "", true},
	}
	for _, tt := range tests {
		got, err := ParseVerifierFeedback(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseVerifierFeedback(%q) = %q, %v", tt.in, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "outcome, tests or diagnostics") {
			t.Errorf("error %q does not list the choices", err)
		}
	}
}

// The visibility table in docs/agents.md is rendered from the contract; this
// test fails when either changes without the other.
func TestAgentsDocShowsTheContract(t *testing.T) {
	data, err := os.ReadFile("../docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- visibility table: begin -->\n", "<!-- visibility table: end -->"
	doc := string(data)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/agents.md lacks the markers %q and %q around the visibility table", begin, end)
	}
	want := visibilityTable()
	if got := doc[i+len(begin) : j]; got != want {
		t.Errorf("docs/agents.md's visibility table differs from the contract; replace it with:\n%s", want)
	}
}

var consumerHeading = map[Consumer]string{
	ConsumerPlannerPlan: "Planner: plan", ConsumerPlannerProposal: "Planner: proposal", ConsumerPlannerDraft: "Planner: draft",
	ConsumerExecutor: "Executor / coordinator", ConsumerExplore: "explore", ConsumerPlan: "plan", ConsumerCode: "code",
	ConsumerMediator: "Mediator", ConsumerRouter: "Mediator: route", ConsumerMediatorShare: "Mediator: share", ConsumerMediatorIntake: "Mediator: intake",
	ConsumerAdvisor: "Advisor", ConsumerReflector: "Reflector", ConsumerCompactor: "Compactor",
	ConsumerJudge: "Judge", ConsumerMetaReview: "Reflector: meta-review",
}

// conditionAbbrev shortens condition names so the table fits a page; the
// legend under the table in docs/agents.md spells them out.
var conditionAbbrev = map[Condition]string{NoFeedback: "NF", FullTraces: "FT", SharedNotes: "SN", StaticMediator: "SM", LearnedMediator: "LM"}

// visibilityTable renders the contract as a markdown table: one row per
// kind of evidence, one column per consumer, each cell naming the settings
// under which the evidence may be shown.
func visibilityTable() string {
	var b strings.Builder
	b.WriteString("| evidence |")
	for _, c := range Consumers() {
		fmt.Fprintf(&b, " %s |", consumerHeading[c])
	}
	b.WriteString("\n| --- |" + strings.Repeat(" --- |", len(Consumers())) + "\n| *called under* |")
	for _, c := range Consumers() {
		fmt.Fprintf(&b, " %s |", calledUnder(c))
	}
	b.WriteString("\n")
	for _, e := range AllEvidence() {
		fmt.Fprintf(&b, "| %s |", e)
		for _, c := range Consumers() {
			fmt.Fprintf(&b, " %s |", cell(e, c))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// called lists the conditions under which c is ever made.
func called(c Consumer) []Condition {
	var out []Condition
	for _, cond := range All() {
		for _, r := range Routings() {
			if !(Setting{Condition: cond, Verifier: VerifierDiagnostics, CrossTask: true, Routing: r, Network: true}).Visible(c).Empty() {
				out = append(out, cond)
				break
			}
		}
	}
	return out
}

// routingNote names the routing values, other than isolated, that alone
// make visible(s) true for some setting, as a qualifier for a table cell.
func routingNote(visible func(Setting) bool) string {
	var names []string
	for _, r := range Routings()[1:] {
		for _, s := range allSettings() {
			if s.Routing != r {
				continue
			}
			plain := s
			plain.Routing = RoutingIsolated
			if visible(s) && !visible(plain) {
				names = append(names, string(r))
				break
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "routing " + strings.Join(names, ", ")
}

// calledIsolated lists the conditions under which c is made with isolated
// routing.
func calledIsolated(c Consumer) []Condition {
	var out []Condition
	for _, cond := range All() {
		if !(Setting{Condition: cond, Verifier: VerifierDiagnostics, CrossTask: true, Routing: RoutingIsolated, Network: true}).Visible(c).Empty() {
			out = append(out, cond)
		}
	}
	return out
}

func calledUnder(c Consumer) string {
	conds := called(c)
	if len(conds) == len(All()) {
		return "*all*"
	}
	names := make([]string, len(conds))
	for i, cond := range conds {
		names[i] = conditionAbbrev[cond]
	}
	out := strings.Join(names, ", ")
	if note := routingNote(func(s Setting) bool { return !s.Visible(c).Empty() }); note != "" {
		out += "; " + note
	}
	return "*" + out + "*"
}

// cell says under which conditions, verifier levels and cross-task setting
// consumer c may be shown e: "yes" wherever c is made, "—" nowhere, else
// the conditions with any qualifier.
func cell(e Evidence, c Consumer) string {
	base := isolatedCell(e, c)
	note := routingNote(func(s Setting) bool { return s.Visible(c).Has(e) })
	switch {
	case note == "":
		return base
	case base == "—":
		return note
	}
	return base + "; " + note
}

// isolatedCell is cell under isolated routing.
func isolatedCell(e Evidence, c Consumer) string {
	var parts []string
	everywhere := true
	// same holds the levels while every condition so far shows e at the
	// same ones; then the cell names only the levels.
	var same []VerifierFeedback
	sameEverywhere := true
	for i, cond := range calledIsolated(c) {
		var levels, crossOnly []VerifierFeedback
		for _, v := range VerifierLevels() {
			// In a network, so that the network's evidence and consumer
			// show; outside one they are never shown or called.
			plain := Setting{Condition: cond, Verifier: v, Routing: RoutingIsolated, Network: true}.Visible(c).Has(e)
			cross := Setting{Condition: cond, Verifier: v, CrossTask: true, Routing: RoutingIsolated, Network: true}.Visible(c).Has(e)
			if plain {
				levels = append(levels, v)
			} else if cross {
				crossOnly = append(crossOnly, v)
			}
		}
		if len(levels) != len(VerifierLevels()) {
			everywhere = false
		}
		if i == 0 {
			same = levels
		}
		if len(crossOnly) > 0 || len(levels) == 0 || !slices.Equal(levels, same) {
			sameEverywhere = false
		}
		switch {
		case len(levels) > 0:
			parts = append(parts, conditionAbbrev[cond]+levelNote(levels))
		case len(crossOnly) > 0:
			parts = append(parts, conditionAbbrev[cond]+levelNote(crossOnly)+" (cross-task)")
		}
	}
	switch {
	case len(parts) == 0:
		return "—"
	case everywhere:
		return "yes"
	case sameEverywhere:
		return "yes" + levelNote(same)
	}
	return strings.Join(parts, ", ")
}

func levelNote(levels []VerifierFeedback) string {
	switch {
	case len(levels) == len(VerifierLevels()):
		return ""
	case slices.Equal(levels, []VerifierFeedback{VerifierTests, VerifierDiagnostics}):
		return " (tests+)"
	}
	names := make([]string, len(levels))
	for i, v := range levels {
		names[i] = string(v)
	}
	return " (" + strings.Join(names, ", ") + ")"
}
