package harness

import (
	"errors"
	"maps"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// promised is what a checkpoint says is on disk.
func promised(st *State) rundir.Promised {
	lines := tournamentLines(st)
	maps.Copy(lines, map[string]int{rundir.HistoryFile: st.HistoryLines, rundir.RejectedFile: st.RejectedLines,
		rundir.SkillUpdatesFile: st.ProvenanceLines, rundir.ReflectionsFile: st.ReflectionLines})
	return rundir.Promised{Completed: st.CompletedIteration, Lines: lines}
}

// verifyCompleted checks that a run recorded as completed holds everything
// its checkpoint promises. It only reads: a resume never changes a completed
// run's recorded status, and reports a hole instead of "completed".
func verifyCompleted(d *rundir.Dir) error {
	st := peekState(d.Path)
	if st == nil {
		return nil // no checkpoint to hold it to; opening the run says why
	}
	return rundir.VerifyCheckpoint(d.Path, promised(st))
}

// alreadyCompleted is the outcome of resuming a run that completed every
// planned iteration: nothing runs and nothing is written, and a run that
// does not hold what it promises says so without being marked failed.
func (r *Run) alreadyCompleted() (Result, bool) {
	m := r.Dir.Manifest()
	if m.Status != rundir.StatusCompleted || m.CompletedIterations < r.Iterations {
		return Result{}, false
	}
	if len(r.HeldOut) > 0 && r.EvalTrials > 0 {
		// A held-out evaluation may still have a checkpoint to redo: the
		// resume goes through, and still verifies before it writes.
		return Result{}, false
	}
	if err := verifyCompleted(r.Dir); err != nil {
		return Result{Status: rundir.StatusFailed, Iterations: m.CompletedIterations, Err: err}, true
	}
	return Result{Status: rundir.StatusCompleted, Iterations: m.CompletedIterations}, true
}

// leavesStatus reports whether a run that could not be opened keeps its
// recorded status: a refused resume leaves the directory as it was.
func leavesStatus(err error) bool {
	return errors.Is(err, ErrConfigChanged) || errors.Is(err, rundir.ErrDamaged) || errors.Is(err, rundir.ErrInUse)
}

// untouched reports whether every row of a matrix had completed and was
// left alone.
func untouched(rows []RowOutcome) bool {
	for _, r := range rows {
		if !r.skipped {
			return false
		}
	}
	return len(rows) > 0
}
