package rundir

import "strings"

// AgentFault reports whether a metric row's trial ended in an error of the
// agent's own making: status agent_error with the blame on the agent, not on
// the model API (cause "model: ...") or anything else. The gate scores such
// a trial as a failure, reward 0, and so does every estimate read from the
// rows: dropping it would make a skill that crashes the agent look better
// than one that fails honestly.
func AgentFault(status TrialStatus, cause string) bool {
	return status == TrialAgentError && strings.HasPrefix(cause, causeAgent+":")
}

// causeAgent is the cause's prefix that blames the agent, as the executor
// writes it.
const causeAgent = "agent"
