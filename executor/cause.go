package executor

import "errors"

// The parts of a trial a failure is blamed on, the first word of a cause.
const (
	CauseModel     = "model"     // a model call failed for good
	CauseAgent     = "agent"     // the agent failed or ran out of time
	CauseSandbox   = "sandbox"   // the image, container or engine
	CauseVerifier  = "verifier"  // the tests did not produce a valid reward
	CauseBudget    = "budget"    // a budget stopped the trial
	CauseCancelled = "cancelled" // the trial was abandoned
)

// SetCause records why the trial failed, unless a cause is already there:
// the first failure is the one that decided the outcome.
func SetCause(tr *Trace, part string, err error) {
	if tr.Cause != "" || err == nil {
		return
	}
	tr.Cause = part + ": " + Clip(err.Error(), maxTraceError)
}

// AgentCause is the part an agent's error is blamed on: the model when a
// model call failed for good, the budget when one ran out, else the agent.
func AgentCause(err error) string {
	switch {
	case IsBudgetExhausted(err):
		return CauseBudget
	case IsModelFailure(err):
		return CauseModel
	}
	return CauseAgent
}

// An agent's error says why it failed through methods of the errors in its
// chain, so that the trial contract needs no import of whatever made them:
// the budget ledger's refusal has BudgetExhausted, a model call that failed
// for good has ModelFailure (both in package llm).

// IsBudgetExhausted reports whether err, or an error it wraps, has a
// BudgetExhausted method that returns true: a token, dollar or wall-clock
// limit stopped the work, and the trial ends as budget_exhausted.
func IsBudgetExhausted(err error) bool {
	var b interface{ BudgetExhausted() bool }
	return errors.As(err, &b) && b.BudgetExhausted()
}

// IsModelFailure reports whether err, or an error it wraps, has a
// ModelFailure method that returns true: a model call failed for good
// (after the provider's retries), so the model's endpoint, not the agent,
// is to blame.
func IsModelFailure(err error) bool {
	var m interface{ ModelFailure() bool }
	return errors.As(err, &m) && m.ModelFailure()
}
