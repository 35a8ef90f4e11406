package harness

import (
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
)

// State is a run's checkpoint with the orchestrator's own parts decoded:
// its feedback book, buffered proposals and ledger snapshot.
type State = rundir.State[feedbackBook, mediator.Proposal, llm.LedgerSnapshot]

func newState(runID, row, fingerprint string) *State {
	return &State{Version: rundir.StateVersion, RunID: runID, Row: row, ConfigFingerprint: fingerprint,
		SkillHashes: map[conditions.Role]string{}, Feedback: newFeedbackBook(), NotesSeen: map[string]int{}, Counts: map[string]int{},
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
// feedback book when the file holds none.
func LoadState(dir string) (*State, error) {
	return withBook(rundir.LoadState[feedbackBook, mediator.Proposal, llm.LedgerSnapshot](dir))
}

// loadCheckpoint is rundir.LoadCheckpoint with an empty feedback book when
// the file holds none.
func loadCheckpoint(d *rundir.Dir) (*State, error) {
	return withBook(rundir.LoadCheckpoint[feedbackBook, mediator.Proposal, llm.LedgerSnapshot](d))
}

func withBook(st *State, err error) (*State, error) {
	if st != nil && st.Feedback.Traces == nil {
		st.Feedback = newFeedbackBook()
	}
	return st, err
}

// peekState reads state.json for a summary or a check; see rundir.PeekState.
func peekState(dir string) *State {
	return rundir.PeekState[feedbackBook, mediator.Proposal, llm.LedgerSnapshot](dir)
}

// completedIterations reads how many iterations the run in dir finished,
// for a summary: 0 when state.json is missing or unreadable.
func completedIterations(dir string) int {
	if st := peekState(dir); st != nil {
		return st.CompletedIteration
	}
	return 0
}
