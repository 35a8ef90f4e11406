package harness

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
)

func TestAssignTrialsBalancesStudentsAndTasks(t *testing.T) {
	roster := config.Lab{Students: config.Students{Count: 3}}.Roster()
	tests := []struct {
		mode       string
		iterations int
		// perPair is how often each (student, task) pair occurs;
		// perIteration the trials of one iteration.
		perPair, perIteration int
	}{
		{config.AssignRotate, 3, 1, 3},
		{config.AssignRotate, 6, 2, 3},
		{config.AssignAll, 2, 2, 9},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s-%d", tc.mode, tc.iterations), func(t *testing.T) {
			pairs := map[string]int{}
			for it := 1; it <= tc.iterations; it++ {
				slots := assignTrials(roster, tc.mode, it, 3)
				if len(slots) != tc.perIteration {
					t.Errorf("iteration %d has %d trials, want %d", it, len(slots), tc.perIteration)
				}
				for _, s := range slots {
					pairs[fmt.Sprintf("%s/%d", s.student.ID, s.task)]++
				}
			}
			if len(pairs) != 9 {
				t.Errorf("%d distinct (student, task) pairs, want 9: %v", len(pairs), pairs)
			}
			for pair, n := range pairs {
				if n != tc.perPair {
					t.Errorf("pair %s occurs %d times, want %d", pair, n, tc.perPair)
				}
			}
		})
	}
}

// heteroLab gives the default lab two students on two models, the second
// one only students name.
func heteroLab(assignment string) func(*config.Config) {
	return func(c *config.Config) {
		m := c.Models[conditions.RoleExecutor]
		m.Model = "cheap/model"
		c.Models["cheap"] = m
		lab := c.Labs[config.DefaultLab]
		lab.Assignment = assignment
		lab.Students = config.Students{ByID: map[string]config.Student{"strong": {}, "weak": {Model: "cheap"}}}
		c.Labs[config.DefaultLab] = lab
	}
}

func TestStudentsFollowTheAssignment(t *testing.T) {
	tests := []struct {
		mode    string
		cond    conditions.Condition
		pol     conditions.Policy
		perPair int
	}{
		{config.AssignRotate, conditions.NoFeedback, conditions.PolicyNone, 1},
		{config.AssignAll, conditions.NoFeedback, conditions.PolicyNone, 2},
		// With feedback and every skill evolving, several trials of one
		// task in an iteration keep their records apart.
		{config.AssignAll, conditions.LearnedMediator, conditions.PolicyAll, 2},
	}
	for _, tc := range tests {
		t.Run(tc.mode+"-"+string(tc.cond), func(t *testing.T) {
			tr := newTestRun(t, tc.cond, tc.pol, []string{"a", "b"}, 2, heteroLab(tc.mode))
			tr.execute(t)
			rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
			if err != nil {
				t.Fatal(err)
			}
			// Offline, each student's model is recorded as the offline player
			// standing in for it, never as the configured name.
			models := tr.run.Config.Models
			wantModel := map[string]string{"strong": models[conditions.RoleExecutor].RecordedName(conditions.RoleExecutor),
				"weak": models["cheap"].RecordedName("cheap")}
			if wantModel["weak"] == wantModel["strong"] {
				t.Fatalf("both students are recorded as %q: the two models must stay apart", wantModel["weak"])
			}
			pairs := map[string]int{}
			trialIDs := map[string]bool{}
			for _, r := range rows {
				pairs[r.Student+"/"+r.TaskID]++
				if r.StudentModel == nil || *r.StudentModel != wantModel[r.Student] {
					t.Errorf("row %s of student %q has student_model %v, want %q", r.TrialID, r.Student, r.StudentModel, wantModel[r.Student])
				}
				if trialIDs[r.TrialID] {
					t.Errorf("trial id %s is used twice", r.TrialID)
				}
				trialIDs[r.TrialID] = true
			}
			for _, st := range []string{"strong", "weak"} {
				for _, task := range []string{"a", "b"} {
					if n := pairs[st+"/"+task]; n != tc.perPair {
						t.Errorf("student %s met task %s %d times, want %d (pairs %v)", st, task, n, tc.perPair, pairs)
					}
				}
			}
			for _, s := range tr.trials.specs {
				c, err := rundir.ParseCaller(s.Caller)
				if err != nil || c.Kind != rundir.CallerExecutor || wantModel[c.Student] == "" {
					t.Errorf("trial %s caller %q does not name a student of the lab (%v)", s.TrialID, s.Caller, err)
				}
			}
		})
	}
}

func TestPlanRecordsStudentsAndPricesTheirModels(t *testing.T) {
	tests := []struct {
		mode      string
		perTask   int
		wantNotes bool
	}{{config.AssignRotate, 1, true}, {config.AssignAll, 2, false}}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := rundirTestConfig(t)
			heteroLab(tc.mode)(cfg)
			cheap := cfg.Models["cheap"]
			cheap.PriceInputPerMTok, cheap.PriceOutputPerMTok = new(100.0), new(100.0)
			cfg.Models["cheap"] = cheap
			p, err := BuildRunPlan(cfg, PlanOptions{Tasks: []string{"a", "b"}, Iterations: 3, Condition: conditions.NoFeedback, OutDir: "out"})
			if err != nil {
				t.Fatal(err)
			}
			if p.Trials != 2*tc.perTask*3 {
				t.Errorf("trials = %d, want tasks x %d x iterations = %d", p.Trials, tc.perTask, 2*tc.perTask*3)
			}
			if len(p.Students) != 1 || p.Students[0].Assignment != tc.mode || len(p.Students[0].Students) != 2 ||
				p.Students[0].Students[1].ModelKey != "cheap" || !strings.HasSuffix(p.Students[0].Students[1].Model, "/cheap/model") {
				t.Errorf("students = %+v", p.Students)
			}
			if p.Models["cheap"] == "" || p.EstimatedTokensByRole["cheap"] <= 0 || p.EstimatedTokensByRole[conditions.RoleExecutor] <= 0 {
				t.Errorf("models %v, tokens %v: want the executor and the cheap model priced", p.Models, p.EstimatedTokensByRole)
			}
			// Half the Executor's work is the weak student's, at 100 $/Mtok.
			minCost := float64(p.EstimatedTokensByRole["cheap"]) * 100 / 1e6
			if p.EstimatedCostUSD < minCost {
				t.Errorf("cost %v does not include the cheap model's %v", p.EstimatedCostUSD, minCost)
			}
			rotates := false
			for _, n := range p.Notes {
				rotates = rotates || strings.Contains(n, "rotates 2 students over 3 iterations")
			}
			if rotates != tc.wantNotes {
				t.Errorf("notes %q: rotation note %v, want %v", p.Notes, rotates, tc.wantNotes)
			}
		})
	}
}
