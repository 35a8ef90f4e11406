package rundir

import (
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
)

func TestCallerRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		caller Caller
		path   string
	}{
		{"plan", PlannerCaller("i0003-csv-parser"), "planner/i0003-csv-parser"},
		{"plan of a held-out trial", PlannerCaller("e0030-k02-csv"), "planner/e0030-k02-csv"},
		{"proposal", ProposalCaller("i0003-csv"), "planner/i0003-csv/proposal"},
		{"executor", ExecutorCaller("student-1", "i0012-a-b"), "executor/student-1/i0012-a-b"},
		{"executor subagent", Caller{Kind: CallerExecutor, Student: "s", Trial: "i0001-a", Agent: "code"}, "executor/s/i0001-a/code"},
		{"mediator", MediatorCaller("i0001-a"), "mediator/i0001-a"},
		{"compactor", CompactorCaller("i0001-a"), "compactor/i0001-a"},
		{"advisor", AdvisorCaller("b001"), "coevo/advisor/b001"},
		{"draft", DraftCaller("b002"), "coevo/draft/b002"},
		{"validation", ValidationCaller("vb001-candidate-csv-k0"), "coevo/validation/vb001-candidate-csv-k0"},
		{"validation agent", Caller{Kind: CallerValidation, Trial: "vb001-current-a-k1", Agent: "coordinator"},
			"coevo/validation/vb001-current-a-k1/coordinator"},
		{"reflector", ReflectorCaller(conditions.RoleExecutor, 7), "coevo/reflector/executor/i0007"},
		{"tournament candidate draft", CandidateCaller("b002", "c3"), "coevo/draft/b002/c3"},
		{"judge", JudgeCaller("s1b004"), "coevo/judge/s1b004"},
		{"meta-review", MetaReviewCaller(12), "coevo/meta_review/i0012"},
		{"route", RouteCaller("weak", 3), "coevo/route/weak/i0003"},
		{"bare route", Caller{Kind: CallerRoute}, "coevo/route"},
		{"bare planner", Caller{Kind: CallerPlanner}, "planner"},
		{"bare executor", Caller{Kind: CallerExecutor}, "executor"},
		{"bare advisor", Caller{Kind: CallerAdvisor}, "coevo/advisor"},
		{"bare reflector", Caller{Kind: CallerReflector}, "coevo/reflector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.caller.String(); got != tt.path {
				t.Fatalf("String() = %q, want %q", got, tt.path)
			}
			back, err := ParseCaller(tt.path)
			if err != nil {
				t.Fatalf("ParseCaller(%q): %v", tt.path, err)
			}
			if back != tt.caller {
				t.Errorf("ParseCaller(%q) = %+v, want %+v", tt.path, back, tt.caller)
			}
		})
	}
}

func TestParseCallerRejectsMalformed(t *testing.T) {
	tests := []struct {
		path, want string
	}{
		{"", "empty segment"},
		{"planner/", "empty segment"},
		{"executor//i0001-a", "empty segment"},
		{"tasks-try", `"tasks-try", which is no caller kind`},
		{"coevo", "names no co-evolution step"},
		{"coevo/referee/b001", `"referee", which is no co-evolution step`},
		{"coevo/judge/b001/c2", "too many segments for the judge"},
		{"coevo/meta_review/7", "where the iteration"},
		{"planner/not-a-trial", `"not-a-trial" where a trial id`},
		{"planner/i0001-a/plan", `ends in "plan"`},
		{"planner/i0001-a/proposal/x", "too many segments for the planner"},
		{"planner/vb001-current-a-k0", "where a trial id"},
		{"mediator/i0001-a/x", "too many segments for the mediator"},
		{"compactor/i01-a", "where a trial id"},
		{"executor/student-1", "names a student but no trial"},
		{"executor/s/i0001-a/code/x", "too many segments for the executor"},
		{"executor/s/b001", `"b001" where a trial id`},
		{"coevo/advisor/b001/x", "too many segments for the advisor"},
		{"coevo/validation/i0001-a", "where a validation trial id"},
		{"coevo/validation/vb001-candidate-a-k0/code/x", "too many segments for validation"},
		{"coevo/reflector/executor", "needs both the skill's role and the iteration"},
		{"coevo/reflector/executor/7", `"7" where the iteration`},
		{"coevo/route/weak", "needs both the student and the iteration"},
		{"coevo/route/weak/3", `"3" where the iteration`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			c, err := ParseCaller(tt.path)
			if err == nil {
				t.Fatalf("ParseCaller(%q) = %+v, want an error", tt.path, c)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "want planner/<trial>") {
				t.Errorf("ParseCaller(%q) error %q, want it to say %q and name the grammar", tt.path, err, tt.want)
			}
		})
	}
}

func TestCallerReadings(t *testing.T) {
	tests := []struct {
		path              string
		role              conditions.Role
		task              string
		iteration         int
		coevo, train, out bool
	}{
		{"planner/i0003-csv", conditions.RolePlanner, "csv", 3, false, true, false},
		{"planner/i0003-csv/proposal", conditions.RolePlanner, "csv", 3, false, false, false},
		{"planner/e0030-k01-csv", conditions.RolePlanner, "csv", 0, false, false, true},
		{"executor/s/i0002-a/coordinator", conditions.RoleExecutor, "a", 2, false, true, false},
		{"executor/s/i0002-a/code", conditions.RoleCode, "a", 2, false, true, false},
		{"executor/s/e0004-k02-a/explore", conditions.RoleExplore, "a", 0, false, false, true},
		{"mediator/i0010-b", conditions.RoleMediator, "b", 10, false, false, false},
		{"compactor/i0010-b", conditions.RoleCompactor, "b", 10, false, false, false},
		{"coevo/advisor/b001", conditions.RoleAdvisor, "", 0, true, false, false},
		{"coevo/draft/b001", conditions.RolePlanner, "", 0, true, false, false},
		{"coevo/validation/vb001-candidate-x-y-k3/plan", conditions.RolePlan, "x-y", 0, true, false, false},
		{"coevo/reflector/planner/i0005", conditions.RoleReflector, "", 5, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			c, err := ParseCaller(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			task, it := c.Scope()
			if c.ModelRole() != tt.role || task != tt.task || it != tt.iteration || c.Coevo() != tt.coevo ||
				c.Training() != tt.train || c.HeldOut() != tt.out {
				t.Errorf("role %s, scope (%q, %d), coevo %v, training %v, held out %v; want %s, (%q, %d), %v, %v, %v",
					c.ModelRole(), task, it, c.Coevo(), c.Training(), c.HeldOut(),
					tt.role, tt.task, tt.iteration, tt.coevo, tt.train, tt.out)
			}
		})
	}
}
