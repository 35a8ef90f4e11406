package executor

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mediated-coevo/harness/llm"
)

// flagged is an error that answers the trial contract's questions itself,
// as an agent not built on llm may.
type flagged struct{ budget, model bool }

func (f flagged) Error() string         { return "flagged" }
func (f flagged) BudgetExhausted() bool { return f.budget }
func (f flagged) ModelFailure() bool    { return f.model }

// The trial contract recognises the budget ledger's and the model client's
// errors through their methods, wrapped at any depth, and blames everything
// else on the agent.
func TestAgentCause(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		want      string
		wantModel bool
	}{
		{"a plain agent error", errors.New("tool crashed"), CauseAgent, false},
		{"the ledger's refusal", fmt.Errorf("call refused: %w", llm.ErrBudgetExhausted), CauseBudget, false},
		{"the ledger's refusal, wrapped twice", fmt.Errorf("lab agent: %w", fmt.Errorf("%w: token limit", llm.ErrBudgetExhausted)), CauseBudget, false},
		{"a model call failed for good", fmt.Errorf("lab agent: %w", &llm.CallError{Caller: "executor/t1", Err: errors.New("HTTP 503")}), CauseModel, true},
		{"the model-call sentinel", fmt.Errorf("x: %w", llm.ErrModelCall), CauseModel, true},
		{"an error that says budget", flagged{budget: true}, CauseBudget, false},
		{"an error that says model", fmt.Errorf("x: %w", flagged{model: true}), CauseModel, true},
		{"an error whose methods say no", flagged{}, CauseAgent, false},
		{"no error", nil, CauseAgent, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := AgentCause(tt.err); got != tt.want {
				t.Errorf("AgentCause = %q, want %q", got, tt.want)
			}
			if got := IsModelFailure(tt.err); got != tt.wantModel {
				t.Errorf("IsModelFailure = %v, want %v", got, tt.wantModel)
			}
			if got := IsBudgetExhausted(tt.err); got != (tt.want == CauseBudget) {
				t.Errorf("IsBudgetExhausted = %v, want %v", got, tt.want == CauseBudget)
			}
		})
	}
}
