package mediator

import (
	"context"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
)

// Offline, the Mediator sends what its lab adopted, else the diligence
// lesson a report of a missing output teaches, else nothing, and always
// says why; what it sends is cut to the token budget.
func TestShareOffline(t *testing.T) {
	tests := []struct {
		name      string
		in        ShareInput
		send      bool
		kind, has string
	}{
		{"an adoption is sent as a skill diff", ShareInput{Adopted: "- Read the tests first.", Reports: []string{"fine"}}, true, ShareSkillDiff, "Read the tests first"},
		{"a missing output becomes the diligence note", ShareInput{Reports: []string{"test_output_exists failed: /app/out.txt does not exist"}}, true, ShareNote, executor.DiligenceAdvice},
		{"nothing worth sending", ShareInput{Reports: []string{"all tests passed"}}, false, "", ""},
		{"the budget cuts the content", ShareInput{Adopted: strings.Repeat("x", 100), BudgetTokens: 5}, true, ShareSkillDiff, "xxxx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.From, tt.in.To, tt.in.Iteration = "a", "b", 2
			m := &Mediator{Client: client(llm.NewOffline(3)), Caller: "mediator", Seed: 3}
			ans, err := m.Share(context.Background(), defaultSkill(t, "mediator"), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if ans.Send != tt.send || ans.Kind != tt.kind || !strings.Contains(ans.Content, tt.has) || ans.Reason == "" {
				t.Errorf("Share = %+v", ans)
			}
			if tt.in.BudgetTokens > 0 && len([]rune(ans.Content)) > 4*tt.in.BudgetTokens {
				t.Errorf("content of %d characters passes the budget of %d tokens", len(ans.Content), tt.in.BudgetTokens)
			}
		})
	}
}

// An answer that sends must say what and in which form, and every answer
// must give its reason.
func TestShareAnswerValidate(t *testing.T) {
	tests := []struct {
		ans  ShareAnswer
		want string
	}{
		{ShareAnswer{Reason: "nothing new"}, ""},
		{ShareAnswer{Send: true, Kind: ShareNote, Content: "x", Reason: "r"}, ""},
		{ShareAnswer{}, "no reason"},
		{ShareAnswer{Send: true, Kind: "essay", Content: "x", Reason: "r"}, `share kind "essay"`},
		{ShareAnswer{Send: true, Kind: ShareSkillDiff, Content: " ", Reason: "r"}, "content is empty"},
	}
	for _, tt := range tests {
		err := tt.ans.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.ans, err, tt.want)
		}
	}
}

// Offline, the receiving Mediator drops an item whose lines its lab's
// skill already holds and passes the rest on, always saying why.
func TestIntakeOffline(t *testing.T) {
	skill := "- Read the task first.\n" + executor.DiligenceAdvice + "\n"
	tests := []struct {
		content string
		pass    bool
	}{
		{executor.DiligenceAdvice, false},
		{"- Read the task first.\n" + executor.DiligenceAdvice, false},
		{"- Run the tests before you submit.", true},
	}
	for _, tt := range tests {
		m := &Mediator{Client: client(llm.NewOffline(4)), Caller: "mediator", Seed: 4}
		ans, err := m.Intake(context.Background(), defaultSkill(t, "mediator"), IntakeInput{From: "a", To: "b", Iteration: 1, Kind: ShareNote, Content: tt.content, Skill: skill})
		if err != nil {
			t.Fatal(err)
		}
		if ans.Pass != tt.pass || ans.Reason == "" {
			t.Errorf("Intake(%q) = %+v, want pass %v with a reason", tt.content, ans, tt.pass)
		}
	}
}
