package harness

import (
	"testing"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// A trial's metric row says how it ended and whether its test counts are
// known: an interrupted trial is neither an environment failure nor a
// zero, and counts without a per-test report are marked unknown.
func TestFillTraceColumns(t *testing.T) {
	one := 1.0
	tests := []struct {
		name         string
		trace        executor.Trace
		wantStatus   rundir.TrialStatus
		wantEnv      bool
		wantReward   bool
		wantReported bool
	}{
		{"interrupted", executor.Trace{Status: executor.StatusInterrupted, Cancelled: true}, "interrupted", false, false, false},
		{"scored without a report", executor.Trace{Status: executor.StatusScored, Reward: &one}, "scored", false, true, false},
		{"scored with a report", executor.Trace{Status: executor.StatusScored, Reward: &one,
			Tests: executor.Tests{Passed: 2, Total: 2, Reported: true}}, "scored", false, true, true},
		{"env failure", executor.Trace{Status: executor.StatusEnvFailure}, "env_failure", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var row rundir.MetricRow
			fillTraceColumns(&row, &tt.trace)
			if row.Status != tt.wantStatus || row.EnvFailure != tt.wantEnv || (row.Reward != nil) != tt.wantReward || row.TestsReported != tt.wantReported {
				t.Errorf("row: status %s env_failure %v reward %v tests_reported %v", row.Status, row.EnvFailure, row.Reward, row.TestsReported)
			}
		})
	}
}
