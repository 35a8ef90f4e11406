package mediator

import "testing"

func TestAnswerValidation(t *testing.T) {
	tests := []struct {
		name string
		v    interface{ Validate() error }
		ok   bool
	}{
		{"plan", PlanAnswer{Plan: "1. x"}, true},
		{"empty plan", PlanAnswer{Plan: " "}, false},
		{"report", ReportAnswer{AbstractionLevel: LevelTrace, Content: "c"}, true},
		{"report without content", ReportAnswer{AbstractionLevel: LevelTrace}, false},
		{"report with bad level", ReportAnswer{AbstractionLevel: "deep", Content: "c"}, false},
		{"withheld with reason", ReportAnswer{Withheld: true, Reasoning: "nothing new"}, true},
		{"withheld without reason", ReportAnswer{Withheld: true}, false},
		{"no proposal", ProposalAnswer{}, true},
		{"proposal", ProposalAnswer{Propose: true, NewContent: "- x"}, true},
		{"empty proposal", ProposalAnswer{Propose: true}, false},
		{"no-op proposal", ProposalAnswer{Propose: true, OldContent: "a", NewContent: "a"}, false},
		{"advice", AdviceAnswer{Approve: true, Feedback: "fine"}, true},
		{"advice without feedback", AdviceAnswer{Approve: true}, false},
		{"draft", DraftAnswer{Content: offlineTestSkill}, true},
		{"draft without front matter", DraftAnswer{Content: "# Executor\n"}, false},
		{"draft without description", DraftAnswer{Content: "---\nname: x\n---\nbody\n"}, false},
		{"draft without body", DraftAnswer{Content: "---\nname: x\ndescription: y\n---\n"}, false},
		{"reflection no change", ReflectionAnswer{NoChange: true}, true},
		{"reflection", ReflectionAnswer{Content: offlineTestSkill}, true},
		{"reflection with broken skill", ReflectionAnswer{Content: "---\nname: [\n---\nx"}, false},
		{"summary", SummaryAnswer{Summary: "s"}, true},
		{"empty summary", SummaryAnswer{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.v.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
