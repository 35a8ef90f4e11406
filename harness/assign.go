package harness

import (
	"maps"

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
		if st.ModelKey != string(conditions.RoleExecutor) {
			m, err := cfg.ModelByKey(st.ModelKey)
			cl := clients.ForModel(st.ModelKey)
			if err != nil || cl == nil {
				continue // validation refuses a student naming no model
			}
			for role := range roles {
				roles[role], win[role], outCap[role] = cl, m.ContextTokens, m.MaxTokens
			}
		}
		out[st.ID] = func() *lab.Agent {
			a := lab.NewAgent(s, roles)
			a.ContextTokens, a.MaxOutputTokens = win, outCap
			return a
		}
	}
	return out
}
