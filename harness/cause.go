package harness

import (
	"fmt"
	"time"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
)

// recordPlanFailure writes the trace of a trial that never started because
// the Planner could not plan it, so that its cause is kept with the trial
// as any other failure's is: in the trace and the row's cause column.
func (t *taskRun) recordPlanFailure(err error) error {
	tr := &executor.Trace{TaskID: t.task.ID, Iteration: t.it, TrialID: t.trialID, Agent: AgentLab,
		Status: executor.Status(t.row.Status), StartedAt: time.Now().UTC()}
	tr.Errors = []string{executor.Clip(fmt.Sprintf("planner: %v", err), 4000)}
	executor.SetCause(tr, executor.AgentCause(err), fmt.Errorf("planner: %w", err))
	tr.FinishedAt = tr.StartedAt
	t.row.Cause = rundir.Nullable(tr.Cause)
	if err := durable.WriteJSON(t.r.Dir.Join(rundir.TracePath(t.entryTask, t.it)), tr); err != nil {
		return fmt.Errorf("record the failed plan of %s: %w", t.trialID, err)
	}
	return nil
}
