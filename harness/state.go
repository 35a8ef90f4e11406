package harness

import (
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
)

// State is a run's checkpoint with the orchestrator's own parts decoded:
// its feedback book, buffered proposals and ledger snapshot.
type State = rundir.State[feedbackBook, mediator.Proposal, llm.LedgerSnapshot]

func newState(runID, row, fingerprint string) *State {
	return &State{Version: rundir.StateVersion, RunID: runID, Row: row, ConfigFingerprint: fingerprint,
		SkillHashes: map[conditions.Role]string{}, Feedback: newFeedbackBook(), NotesSeen: map[string]int{}, Counts: map[rundir.TrialStatus]int{},
		Warnings: map[string]int{}}
}

func (b feedbackBook) clone() feedbackBook {
	c := newFeedbackBook()
	for k, v := range b.Traces {
		c.Traces[k] = append([]traceNote(nil), v...)
	}
	for k, v := range b.Reports {
		c.Reports[k] = v
	}
	return c
}

// LoadState reads state.json as rundir.LoadState does, with an empty
// feedback book when the file holds none, and the spend journal's records
// since it was saved, and the calls the call log holds beyond them, added
// to its ledger.
func LoadState(dir string) (*State, error) {
	return completed(dir)(rundir.LoadState[feedbackBook, mediator.Proposal, llm.LedgerSnapshot](dir))
}

// loadCheckpoint is rundir.LoadCheckpoint completed as LoadState is, with
// a corrupt or missing state.json rebuilt where the run's other records
// allow it; rebuilt, when set, has the rebuilt file saved and hears of it
// (see restoreCheckpoint).
func loadCheckpoint(d *rundir.Dir, cfg *config.Config, rebuilt func(string)) (*State, error) {
	return restoreCheckpoint(d, cfg, rebuilt)
}

// completed fills in what a loaded state of the run in dir lacks: an empty
// feedback book when the file holds none, the spend since it was saved,
// and the spend of calls only the call log recorded (a hard kill).
func completed(dir string) func(*State, error) (*State, error) {
	return func(st *State, err error) (*State, error) {
		if st == nil || err != nil {
			return st, err
		}
		if st.Feedback.Traces == nil {
			st.Feedback = newFeedbackBook()
		}
		if err := foldSpend(dir, st); err != nil {
			return nil, err
		}
		if err := reconcileCalls(dir, st); err != nil {
			return nil, err
		}
		return st, nil
	}
}

// peekState reads state.json for a summary or a check; see rundir.PeekState.
// The spend journal is added to its ledger when it can be read.
func peekState(dir string) *State {
	st := rundir.PeekState[feedbackBook, mediator.Proposal, llm.LedgerSnapshot](dir)
	if st != nil {
		_ = foldSpend(dir, st)
	}
	return st
}

// completedIterations reads how many iterations the run in dir finished,
// for a summary: 0 when state.json is missing or unreadable.
func completedIterations(dir string) int {
	if st := peekState(dir); st != nil {
		return st.CompletedIteration
	}
	return 0
}
