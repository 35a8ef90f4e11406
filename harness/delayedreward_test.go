package harness

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/mediator"
)

// Under a rotation the next trial of a proposal's task is another
// student's: the Advisor is told only the rewards of the proposing
// student's own later trials of the task.
func TestDelayedRewardComesFromTheProposingStudent(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b"}, 6, func(c *config.Config) {
		c.Experiment.AdvisorBufferMax = 4
		l := c.Labs[config.DefaultLab]
		l.Students = config.Students{Count: 2}
		l.Assignment = config.AssignRotate
		c.Labs[config.DefaultLab] = l
	})
	tr.trials.trialReward = map[string]float64{}
	for it := 1; it <= 6; it++ {
		tr.trials.trialReward[fmt.Sprintf("a/%d", it)] = 0.1 * float64(it)
		tr.trials.trialReward[fmt.Sprintf("b/%d", it)] = 0.05 + 0.1*float64(it)
	}
	tr.execute(t)
	dir := tr.run.Dir.Path
	h, err := rundir.OpenHistory(filepath.Join(dir, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	reviewedAt := map[string]int{}
	for _, u := range readJSONL[Provenance](t, filepath.Join(dir, rundir.SkillUpdatesFile)) {
		reviewedAt[u.BatchID] = u.Iteration
	}
	for _, rej := range readJSONL[rejection](t, filepath.Join(dir, rundir.RejectedFile)) {
		reviewedAt[rej.BatchID] = rej.Iteration
	}
	seen, later := 0, 0
	for _, q := range tr.rec.ByKind(mediator.KindAdvice) {
		prompt := promptText(q)
		batchID := strings.TrimPrefix(q.Caller, "coevo/advisor/")
		for _, e := range h.Entries(func(e *rundir.Entry) bool { return e.Kind == rundir.EntryProposal }) {
			if !strings.Contains(prompt, "id: "+e.ID+"\n") {
				continue
			}
			seen++
			// Two students rotate over two tasks: the proposing student
			// meets the task again every second iteration.
			var want []string
			for it := e.Iteration + 2; it <= reviewedAt[batchID]; it += 2 {
				want = append(want, fmt.Sprintf("iteration %d: %.3f", it, tr.trials.trialReward[fmt.Sprintf("%s/%d", e.TaskID, it)]))
			}
			later += len(want)
			line := fmt.Sprintf("rewards of task %s since: %s\n", e.TaskID, strings.Join(want, ", "))
			if len(want) == 0 {
				line = fmt.Sprintf("later attempts at task %s: none yet\n", e.TaskID)
			}
			if !strings.Contains(prompt, line) {
				t.Errorf("batch %s (iteration %d): the Advisor's prompt lacks %q for %s", batchID, reviewedAt[batchID], line, e.ID)
			}
		}
	}
	if seen == 0 || later == 0 {
		t.Fatalf("%d proposals reached the Advisor with %d later rewards of their student; want some of each", seen, later)
	}
}
