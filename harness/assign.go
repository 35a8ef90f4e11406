package harness

import (
	"fmt"
	"maps"
	"slices"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor/lab"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
)

// trialSlot is one trial of an iteration: a task and the student who
// attempts it.
type trialSlot struct {
	task    int
	student config.LabStudent
}

// assignTrials returns the trials of iteration it (from 1) over tasks
// tasks, in task order, under the lab's declared assignment. rotate is a
// Latin-square rotation: task t goes to student (t+it-1) mod n, so in any n
// consecutive iterations each student meets each task exactly once, and
// student is never confounded with task. all gives every task to every
// student.
func assignTrials(roster []config.LabStudent, mode string, it, tasks int) []trialSlot {
	n := len(roster)
	if n == 0 {
		return nil
	}
	var out []trialSlot
	for t := range tasks {
		if mode == config.AssignAll {
			for _, st := range roster {
				out = append(out, trialSlot{task: t, student: st})
			}
			continue
		}
		out = append(out, trialSlot{task: t, student: roster[(t+it-1)%n]})
	}
	return out
}

// trialsPerTask is how many trials each task gets per iteration.
func trialsPerTask(lab config.Lab) int {
	if lab.Assign() == config.AssignAll {
		return len(lab.Roster())
	}
	return 1
}

// slotTrialID names a slot's trial: the task's training trial id, and,
// when several students attempt the task in one iteration, the student's.
func slotTrialID(it int, task string, student string, perTask int) string {
	if perTask > 1 {
		return rundir.StudentTrialID(it, task, student)
	}
	return rundir.TrialID(it, task)
}

// studentAgents returns, for each student of a lab whose model or executor
// mode differs from the lab's, how to make its agent: every agent of such
// a student (the Executor and, hierarchical, its subagents) calls the
// student's model, with that model's context window and output cap.
// Students like the lab's use the lab's agent.
func studentAgents(cfg *config.Config, settings config.Lab, clients *Clients, byRole map[conditions.Role]*llm.Client,
	window, maxOut map[conditions.Role]int) map[string]func() *lab.Agent {
	out := map[string]func() *lab.Agent{}
	for _, st := range settings.Roster() {
		if st.ModelKey == string(conditions.RoleExecutor) && st.ExecutorMode == settings.ExecutorMode {
			continue
		}
		s := settings
		s.ExecutorMode = st.ExecutorMode
		roles, win, outCap := maps.Clone(byRole), maps.Clone(window), maps.Clone(maxOut)
		m, err := cfg.ModelByKey(st.ModelKey)
		if err != nil {
			continue // validation refuses a student naming no model
		}
		if st.ModelKey != string(conditions.RoleExecutor) {
			cl := clients.ForModel(st.ModelKey)
			if cl == nil {
				continue
			}
			for role := range roles {
				roles[role], win[role], outCap[role] = cl, m.ContextTokens, m.MaxTokens
			}
		}
		out[st.ID] = func() *lab.Agent {
			a := lab.NewAgent(s, roles)
			a.ContextTokens, a.MaxOutputTokens = win, outCap
			a.OfflineDiligence = m.OfflineDiligence
			return a
		}
	}
	return out
}

// executorFamily are the roles a student's model plays: its Executor and,
// hierarchical, the subagents.
var executorFamily = []conditions.Role{conditions.RoleExecutor, conditions.RoleCode, conditions.RoleExplore, conditions.RolePlan}

// shareStudents moves, in a row's token estimate, each student's share of
// the Executor's work to the model it names, so every student's model is
// priced. Students share a row's trials equally under both assignments.
func shareStudents(row map[conditions.Role]roleTokens, lab config.Lab) {
	roster := lab.Roster()
	share := 1 / float64(len(roster))
	whole := maps.Clone(row)
	for _, st := range roster {
		key := conditions.Role(st.ModelKey)
		if key == conditions.RoleExecutor {
			continue
		}
		for _, role := range executorFamily {
			t, ok := whole[role]
			if !ok {
				continue
			}
			moved := roleTokens{t.in * share, t.out * share}
			row[role] = roleTokens{row[role].in - moved.in, row[role].out - moved.out}
			row[key] = roleTokens{row[key].in + moved.in, row[key].out + moved.out}
		}
	}
}

// studentOnlyModels lists, sorted, the keys of an estimate that are models
// only students name.
func studentOnlyModels(tokens map[conditions.Role]roleTokens) []conditions.Role {
	var out []conditions.Role
	for k := range tokens {
		if !k.IsModel() {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// sortedModelKeys lists every configured model: the roles, then the
// models only students name.
func sortedModelKeys(cfg *config.Config) []conditions.Role {
	out := conditions.ModelRoles()
	var extra []conditions.Role
	for k := range cfg.Models {
		if !k.IsModel() {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	return append(out, extra...)
}

// LabPlan is how a lab's students meet the plan's tasks: the declared
// assignment and each student's model, executor mode and skill.
type LabPlan struct {
	Lab string `json:"lab"`
	// Row is set when the lab is as one row's own keys change it.
	Row        string        `json:"row,omitempty"`
	Assignment string        `json:"assignment"`
	Students   []StudentPlan `json:"students"`
}

// StudentPlan is one student of a plan's lab.
type StudentPlan struct {
	ID string `json:"id"`
	// ModelKey is the [models.<key>] entry; Model is provider/model.
	ModelKey     string `json:"model_key"`
	Model        string `json:"model"`
	ExecutorMode string `json:"executor_mode"`
	OwnSkill     bool   `json:"own_skill"`
}

// fillStudents records, for each lab the rows use, its assignment and
// students.
func (p *Plan) fillStudents(cfg *config.Config) error {
	p.Students = nil
	if p.Agent != AgentLab {
		return nil
	}
	var seen []string
	for _, r := range p.Rows {
		own := len(r.ModelOverrides)+len(r.LabOverrides) > 0
		if !own && slices.Contains(seen, r.Lab) {
			continue
		}
		lp := LabPlan{Lab: r.Lab}
		if own {
			lp.Row = r.Name
		} else {
			seen = append(seen, r.Lab)
		}
		rowCfg, err := p.rowConfig(cfg, r)
		if err != nil {
			return err
		}
		lab, err := rowCfg.Lab(r.Lab)
		if err != nil {
			return err
		}
		lp.Assignment = lab.Assign()
		for _, st := range lab.Roster() {
			m, err := rowCfg.ModelByKey(st.ModelKey)
			if err != nil {
				return fmt.Errorf("lab %s, student %s: %w", r.Lab, st.ID, err)
			}
			lp.Students = append(lp.Students, StudentPlan{ID: st.ID, ModelKey: st.ModelKey, Model: modelLabel(m, conditions.Role(st.ModelKey)),
				ExecutorMode: st.ExecutorMode, OwnSkill: st.OwnSkill})
		}
		if n := len(lp.Students); n > 1 && lp.Assignment == config.AssignRotate && p.Iterations%n != 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("lab %s rotates %d students over %d iterations: each student meets each task equally often only over a multiple of %d iterations",
				r.Lab, n, p.Iterations, n))
		}
		p.Students = append(p.Students, lp)
	}
	return nil
}
