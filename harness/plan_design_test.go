package harness

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
)

// The design rules are checked once, by the plan, and before the run's
// tasks are listed: listing a task set may download it, and a broken
// design must be refused before anything like that happens.
func TestRunPlanChecksTheDesignBeforeListingTasks(t *testing.T) {
	listErr := errors.New("the archive cannot be read")
	tests := []struct {
		name       string
		condition  conditions.Condition
		policy     string
		list       error
		wantListed bool
		wantErr    string
	}{
		{"a broken design is refused unlisted", conditions.NoFeedback, "planner", nil, false, string(conditions.RuleNoFeedbackNoUpdates)},
		{"a sound design lists its tasks", conditions.StaticMediator, "none", nil, true, ""},
		{"the listing's error comes back as it is", conditions.StaticMediator, "none", listErr, true, listErr.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol, err := conditions.ParsePolicy(tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			listed := false
			o := PlanOptions{Condition: tt.condition, Policy: pol, Iterations: 1, Offline: true,
				ListTasks: func() ([]string, string, error) {
					listed = true
					return []string{"a", "b"}, "mine", tt.list
				}}
			p, err := BuildRunPlan(rundirTestConfig(t), o)
			if listed != tt.wantListed {
				t.Errorf("tasks listed = %v, want %v", listed, tt.wantListed)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				if tt.list != nil && !errors.Is(err, tt.list) {
					t.Errorf("err = %v, want the listing's own error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Tasks, []string{"a", "b"}) || p.TaskSet != "mine" {
				t.Errorf("plan tasks %v of set %q, want [a b] of set mine", p.Tasks, p.TaskSet)
			}
		})
	}
}
