package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/conditions"

	"github.com/mediated-coevo/harness/internal/durable"
)

// StateVersion changes whenever State changes shape incompatibly.
const StateVersion = 1

// State is a run's checkpoint (state.json), written atomically after every
// completed iteration. Everything a resume needs that is not in an
// append-only file is here; the append-only files are cut back to the
// lengths recorded here.
//
// Three fields hold values whose shape belongs to the orchestrator and the
// model layer: the feedback book, the buffered skill proposals and the
// ledger snapshot. They are type parameters, so this package keeps the
// file's layout without importing either.
type State[Book, Proposal, Ledger any] struct {
	Version            int       `json:"version"`
	RunID              string    `json:"run_id"`
	Row                string    `json:"row"`
	ConfigFingerprint  string    `json:"config_fingerprint"`
	CompletedIteration int       `json:"completed_iteration"`
	Saved              time.Time `json:"saved"`

	HistoryLines    int `json:"history_lines"`
	RejectedLines   int `json:"rejected_lines"`
	ProvenanceLines int `json:"provenance_lines"`
	ReflectionLines int `json:"reflection_lines"`

	SkillHashes map[conditions.Role]string `json:"skill_hashes"`
	Feedback    Book                       `json:"feedback"`
	Buffer      []Proposal                 `json:"buffer"`
	Batches     int                        `json:"batches"`
	// Students are the executor skills of the students that hold their
	// own, by student id: each with its own proposals and batches.
	Students map[string]*StudentSkill[Proposal] `json:"students,omitempty"`
	// Tournament is what the tournaments and meta-reviews carry from one
	// batch to the next; nil while neither has run, so a run without them
	// writes the same file as before they existed.
	Tournament *TournamentState `json:"tournament,omitempty"`
	// RecentRejections are short summaries shown to the Planner when it proposes.
	RecentRejections []string `json:"recent_rejections"`
	// Counts are the trials of completed iterations by status.
	Counts map[TrialStatus]int `json:"counts"`
	// Warnings count the trials of completed iterations by trace warning
	// ("task: message"): task settings their sandbox could not honour.
	Warnings  map[string]int `json:"warnings,omitempty"`
	NotesSeen map[string]int `json:"notes_seen"`
	Notes     []string       `json:"notes"`
	Ledger    Ledger         `json:"ledger"`
	// SpendEpoch counts the saves of this file. Records of the spend
	// journal written since carry it; older ones are already in Ledger.
	SpendEpoch int `json:"spend_epoch,omitempty"`
	// MatrixElapsed is the wall clock of the row's matrix when this was
	// saved, so a resumed matrix keeps counting toward its wall-clock limit.
	MatrixElapsed time.Duration `json:"matrix_elapsed_ns,omitempty"`
}

// StudentSkill is where a student's own executor skill stands at a
// checkpoint: the version in use, the proposals waiting for review and how
// many of its batches were decided.
type StudentSkill[P any] struct {
	SkillHash string `json:"skill_hash"`
	Buffer    []P    `json:"buffer"`
	Batches   int    `json:"batches"`
}

// TournamentState is the tournaments' part of a checkpoint.
type TournamentState struct {
	// Pool holds, per executor skill (the student's id, empty for the
	// lab's), the candidates that competed but were not validated, with
	// their ratings: they compete again in the line's next tournament.
	Pool map[string][]PooledCandidate `json:"pool,omitempty"`
	// Critiques are the latest judge reasons, Advisor feedback and
	// rejection reasons, oldest first, for the next meta-review.
	Critiques []string `json:"critiques,omitempty"`
	// MetaNote is the latest meta-review note the Planner reads.
	MetaNote string `json:"meta_note,omitempty"`
	// Lines and MetaReviewLines count the lines of TournamentFile and
	// MetaReviewsFile at the checkpoint.
	Lines           int `json:"lines,omitempty"`
	MetaReviewLines int `json:"meta_review_lines,omitempty"`
}

// PooledCandidate is a tournament candidate kept for the next tournament.
type PooledCandidate struct {
	ID       string   `json:"id"`
	BatchID  string   `json:"batch_id"`
	Operator string   `json:"operator"`
	Parents  []string `json:"parents"`
	Elo      float64  `json:"elo"`
	Content  string   `json:"content"`
}

// ErrCorruptState means state.json could not be read; it has been moved aside.
var ErrCorruptState = errors.New("corrupt state file")

// LoadState reads dir's state.json. A missing file returns (nil, nil). A
// file that does not decode is renamed to state.json.corrupt-<time> and
// reported, never trusted; while such a file lies next to a missing
// state.json, every later call reports it again, so a second attempt cannot
// mistake the directory for a new run and wipe its history. The maps are
// never nil.
func LoadState[B, P, L any](dir string) (*State[B, P, L], error) {
	path := filepath.Join(dir, StateFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		aside, gerr := filepath.Glob(path + ".corrupt-*")
		if gerr != nil || len(aside) == 0 {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %s was found corrupt earlier and moved aside to %s, so this directory cannot be resumed safely: "+
			"start a new run (its metrics, history and artifacts stay readable for inspect), or put a valid state.json back and resume",
			ErrCorruptState, path, strings.Join(aside, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var st State[B, P, L]
	if err := json.Unmarshal(data, &st); err != nil || st.Version != StateVersion {
		aside := fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405Z"))
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("%w %s (and could not move it aside: %v)", ErrCorruptState, path, rerr)
		}
		reason := "unsupported version"
		if err != nil {
			reason = err.Error()
		}
		return nil, fmt.Errorf("%w %s (%s): moved it aside to %s and did not trust it; this directory cannot be resumed safely, so start a new run (its metrics, history and artifacts stay readable for inspect)", ErrCorruptState, path, reason, aside)
	}
	if st.NotesSeen == nil {
		st.NotesSeen = map[string]int{}
	}
	if st.Counts == nil {
		st.Counts = map[TrialStatus]int{}
	}
	if st.Warnings == nil {
		st.Warnings = map[string]int{}
	}
	if st.SkillHashes == nil {
		st.SkillHashes = map[conditions.Role]string{}
	}
	return &st, nil
}

// LoadCheckpoint is LoadState for the run in d, which also refuses a run
// whose run.json counts completed iterations but that has no state.json:
// starting it afresh would wipe its history.
func LoadCheckpoint[B, P, L any](d *Dir) (*State[B, P, L], error) {
	st, err := LoadState[B, P, L](d.Path)
	if err != nil || st != nil {
		return st, err
	}
	if n := d.Manifest().CompletedIterations; n > 0 {
		return nil, fmt.Errorf("%w: %s has no state.json although %s says %d iterations were completed, so this directory cannot be resumed safely: "+
			"start a new run (its metrics, history and artifacts stay readable for inspect), or put its state.json back and resume",
			ErrCorruptState, d.Path, ManifestFile, n)
	}
	return nil, nil
}

// PeekState reads dir's state.json for a summary or a check: nil when it is
// missing or unreadable. Unlike LoadState it never moves a bad file aside,
// so reading is all it does.
func PeekState[B, P, L any](dir string) *State[B, P, L] {
	data, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return nil
	}
	var st State[B, P, L]
	if json.Unmarshal(data, &st) != nil {
		return nil
	}
	return &st
}

// Save writes state.json into dir atomically.
func (st *State[B, P, L]) Save(dir string) error {
	st.Saved = time.Now().UTC()
	return durable.WriteJSON(filepath.Join(dir, StateFile), st)
}

// SpendRecord is one line of the spend journal (SpendJournalFile): what
// was charged since the previous record, by caller, appended after each
// trial so that the per-trial save costs the same however long the run
// has gone. Usage is the model layer's usage type. A record belongs to the
// state.json save whose SpendEpoch it carries: loading a checkpoint adds
// the records of its epoch to its ledger, and a save bumps the epoch, so a
// crash between a save and the journal's truncation adds nothing twice.
type SpendRecord[Usage any] struct {
	Epoch   int              `json:"epoch"`
	Charges map[string]Usage `json:"charges,omitempty"`
	// Elapsed and MatrixElapsed are the run's and its matrix's wall clock
	// when the record was written (not a difference).
	Elapsed       time.Duration `json:"elapsed_ns"`
	MatrixElapsed time.Duration `json:"matrix_elapsed_ns,omitempty"`
}

// ReadSpendJournal returns the records of dir's spend journal that carry
// epoch, in order. A missing journal holds none; a torn last line (a crash
// while appending) is skipped, as that record was never complete. Any other
// line that does not decode is damage (ErrDamaged).
func ReadSpendJournal[Usage any](dir string, epoch int) ([]SpendRecord[Usage], error) {
	var recs []SpendRecord[Usage]
	path := filepath.Join(dir, SpendJournalFile)
	err := durable.ReadLog(path, func(line []byte) error {
		var rec SpendRecord[Usage]
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		if rec.Epoch == epoch {
			recs = append(recs, rec)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: the spend journal cannot be read (%v), so what the run spent since its checkpoint is unknown. "+
			"Put the file back as it was (from a backup or a copy of the directory) and resume again, or delete the damaged line "+
			"(its spend is then not counted); nothing was changed", ErrDamaged, err)
	}
	return recs, nil
}
