package llm

import (
	"fmt"

	"github.com/mediated-coevo/harness/config"
)

// CallError is a model call that failed for good: the endpoint's error
// after the retries, or the transport's. Callers tell a model's failure from
// their own with errors.As.
type CallError struct {
	Caller string
	Err    error
}

func (e *CallError) Error() string { return fmt.Sprintf("model call for %s: %v", e.Caller, e.Err) }
func (e *CallError) Unwrap() error { return e.Err }

// Is makes a CallError match ErrModelCall.
func (e *CallError) Is(target error) bool { return target == ErrModelCall }

// ModelFailure reports true: the model's endpoint failed the call, not its
// caller (see ErrModelCall).
func (e *CallError) ModelFailure() bool { return true }

// RedactMessage returns m with every secret r knows taken out of its text
// and tool-call arguments; a nil r leaves m as it is.
func RedactMessage(r *config.Redactor, m Message) Message {
	if r == nil {
		return m
	}
	m.Content = r.String(m.Content)
	if len(m.ToolCalls) > 0 {
		calls := make([]ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			tc.Arguments = r.String(tc.Arguments)
			calls[i] = tc
		}
		m.ToolCalls = calls
	}
	return m
}
