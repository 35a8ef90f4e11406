package mediator

import (
	"fmt"
	"strings"

	"github.com/mediated-coevo/harness/llm/prompt"
)

// Outcome is what the verifier said of one trial, as far as a role may see
// it: the status, the reward and the test counts. The zero value means the
// outcome is not known (or not shown).
type Outcome struct {
	Status string `json:"status,omitempty"`
	// Reward is nil when the verifier gave none.
	Reward      *float64 `json:"reward,omitempty"`
	TestsPassed int      `json:"tests_passed,omitempty"`
	TestsFailed int      `json:"tests_failed,omitempty"`
	TestsTotal  int      `json:"tests_total,omitempty"`
}

// Known reports whether there is an outcome to show.
func (o Outcome) Known() bool { return strings.TrimSpace(o.Status) != "" || o.Reward != nil }

// Text is the outcome on one line, e.g. "status: completed; reward: 0.500;
// tests: 3 passed, 1 failed, 4 total". It is "" for an unknown outcome.
func (o Outcome) Text() string {
	if !o.Known() {
		return ""
	}
	parts := make([]string, 0, 3)
	if s := strings.TrimSpace(o.Status); s != "" {
		parts = append(parts, "status: "+s)
	}
	if o.Reward != nil {
		parts = append(parts, "reward: "+prompt.RewardText(o.Reward))
	} else {
		parts = append(parts, "reward: none (the verifier gave no reward)")
	}
	if o.TestsTotal > 0 {
		parts = append(parts, fmt.Sprintf("tests: %d passed, %d failed, %d total", o.TestsPassed, o.TestsFailed, o.TestsTotal))
	} else {
		parts = append(parts, "tests: no per-test results")
	}
	return strings.Join(parts, "; ")
}
