package harness

import (
	"cmp"
	"context"
	"fmt"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// labelRun is the run id the row's sandboxes are labelled with: unique
// across runs and matrices, so `harness gc --run <id>` and a resume find
// exactly this run's containers. A matrix row's containers carry the
// matrix's id, and the row's name in their row label.
func (r *Run) labelRun() string { return cmp.Or(r.MatrixID, r.Dir.ID) }

// leftoverRemover is a backend that can remove the sandboxes, networks and
// volumes earlier processes of a run left (killed before they could).
type leftoverRemover interface {
	RemoveLeftovers(ctx context.Context, runID, row string) (executor.Leftovers, error)
}

// removeLeftovers clears, before a resumed run or matrix starts trials,
// what earlier processes of it left behind: labelled with the run (for a
// matrix row resumed alone, with its row too) and not made by this process.
// This process holds the directory's lock, so no earlier one is still at
// work. It says how many it removed. It runs again when the resumed run
// ends (again true): the engine may finish creating a container a killed
// process asked for after the first sweep; that one is only reported when
// there was something to remove.
func (ex *planExecution) removeLeftovers(ctx context.Context, d *rundir.Dir, again bool) error {
	rm, ok := ex.opts.Backend.(leftoverRemover)
	if !ok {
		return nil
	}
	m := d.Manifest()
	runID, row := m.ID, ""
	if m.Kind == rundir.KindRun && m.MatrixID != "" {
		runID, row = m.MatrixID, m.Name
	}
	n, err := rm.RemoveLeftovers(ctx, runID, row)
	if err != nil {
		return fmt.Errorf("remove what earlier processes of %s left running: %w", d.Path, err)
	}
	if !again || n.Total() > 0 {
		ex.emit(Event{Kind: EventLeftoversRemoved, Row: row, Message: fmt.Sprintf(
			"removed %d containers, %d networks and %d volumes that earlier processes of this run left", n.Containers, n.Networks, n.Volumes)})
	}
	return nil
}
