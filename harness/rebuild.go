package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
)

// rebuildState reconstructs the checkpoint of the run in d from the records
// that hold the same facts: run.json (how many iterations completed),
// config.toml (the configuration the run started with), the metric parts (the trials' statuses and
// warnings), the history (its length at the checkpoint, the Mediator's
// reports and the human notes the Planner is shown), the skills directory
// and the call log (the spend). It refuses, naming the file and what is
// missing, when a part of the checkpoint is kept nowhere else: the trace
// summaries of the full_traces condition, and everything skill evolution
// adds (buffered proposals, the gate's batches, recent rejections, the skills
// in use at the checkpoint). It only reads; the caller saves the result.
func rebuildState(d *rundir.Dir, cfg *config.Config) (*State, error) {
	m := d.Manifest()
	n := m.CompletedIterations
	fingerprint, err := startFingerprint(d, cfg)
	if err != nil {
		return nil, err
	}
	if n > 0 && conditions.Condition(m.Condition).PlannerContext() == conditions.ContextTraceSummaries {
		return nil, fmt.Errorf("condition %s shows the Planner trace summaries, which only state.json kept", m.Condition)
	}
	for _, rel := range []string{rundir.SkillUpdatesFile, rundir.RejectedFile, rundir.ReflectionsFile} {
		lines, err := countLines(d.Join(rel))
		if err != nil {
			return nil, err
		}
		if lines > 0 {
			return nil, fmt.Errorf("%s holds %d records of skill evolution; the buffered proposals, the gate's batches and the skills in use at the checkpoint were kept only in state.json", rel, lines)
		}
	}
	if err := rundir.VerifyCheckpoint(d.Path, rundir.Promised{Completed: n}); err != nil {
		return nil, fmt.Errorf("%s counts %d completed iterations, but %w", rundir.ManifestFile, n, err)
	}
	st := newState(d.ID, m.Name, fingerprint)
	st.CompletedIteration = n
	if err := countTrials(d, n, st); err != nil {
		return nil, err
	}
	if err := replayHistory(d, n, st); err != nil {
		return nil, err
	}
	hashes, err := (&skills.Store{Root: d.Join(rundir.SkillsDir)}).Hashes()
	if err != nil {
		return nil, fmt.Errorf("the skills in %s: %w", rundir.SkillsDir, err)
	}
	st.SkillHashes = hashes
	if err := rebuildOwnSkills(d, st); err != nil {
		return nil, err
	}
	// The ledger starts empty and a later epoch than any journal record:
	// the call log, which holds every call, is then charged in full when
	// the state is completed, and the journal adds nothing twice.
	if err := spendClock(d.Path, st); err != nil {
		return nil, err
	}
	return st, nil
}

// startFingerprint is the fingerprint the checkpoint of the run in d would
// hold: that of its config.toml (the configuration it started with, or was
// last forced to) as the orchestrator computes it, from cfg with the row's
// seed, which a row's config.toml carries and cfg may not. A resume under
// another configuration then differs from it and is refused, as with an
// intact state.json.
func startFingerprint(d *rundir.Dir, cfg *config.Config) (string, error) {
	was, err := d.ResolvedConfig()
	if err != nil {
		return "", fmt.Errorf("%s, the configuration the run started with: %w", rundir.ConfigFile, err)
	}
	was.Experiment.Seed = cfg.Experiment.Seed
	return config.Fingerprint(was), nil
}

// countTrials fills st's trial counts and warnings from the training rows
// of the metric parts of iterations 1..n.
func countTrials(d *rundir.Dir, n int, st *State) error {
	for it := 1; it <= n; it++ {
		rows, err := rundir.ReadMetricsFile(filepath.Join(d.MetricsDir(), rundir.MetricsPartName(it)))
		if err != nil {
			return fmt.Errorf("read the metrics of iteration %d: %w", it, err)
		}
		for _, row := range rows {
			if row.Phase != "" && row.Phase != rundir.PhaseTrain {
				continue
			}
			st.Counts[row.Status]++
			for _, w := range row.Warnings {
				st.Warnings[row.TaskID+": "+w]++
			}
		}
	}
	return nil
}

// replayHistory finds where the history stood at the checkpoint of
// iteration n (the records of later iterations follow it) and takes the
// Mediator's latest exposed report per task and the notes picked up.
func replayHistory(d *rundir.Dir, n int, st *State) error {
	lines, cut := 0, -1
	err := durable.ReadLog(d.Join(rundir.HistoryFile), func(line []byte) error {
		lines++
		var rec rundir.HistoryRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		it, ok := recordIteration(rec)
		if !ok {
			return fmt.Errorf("line %d is a %q record, which only skill evolution writes", lines, rec.Type)
		}
		if it > n {
			if cut < 0 {
				cut = lines - 1
			}
			return nil
		}
		if cut >= 0 {
			return fmt.Errorf("line %d belongs to iteration %d but follows records of iteration %d", lines, it, n+1)
		}
		noteEntry(rec.Entry, st)
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s cannot be replayed: %w", rundir.HistoryFile, err)
	}
	if cut < 0 {
		cut = lines
	}
	st.HistoryLines = cut
	return nil
}

// recordIteration is the iteration a history record belongs to; false for
// records that carry none (the ones skill evolution writes).
func recordIteration(rec rundir.HistoryRecord) (int, bool) {
	switch {
	case rec.Type == "entry" && rec.Entry != nil && rec.Entry.Kind != rundir.EntryProposal:
		return rec.Entry.Iteration, true
	case rec.Type == "reward" || rec.Type == "drop":
		return rec.Iteration, true
	}
	return 0, false
}

// noteEntry keeps in st what the Planner is shown from a history entry of
// a completed iteration: a task's latest exposed report, a human note.
func noteEntry(e *rundir.Entry, st *State) {
	switch {
	case e == nil:
	case e.Kind == rundir.EntryReport && !e.Withheld:
		st.Feedback.Reports[e.TaskID] = reportNote{TaskID: e.TaskID, Iteration: e.Iteration, EntryID: e.ID, Content: e.Content}
	case e.Kind == rundir.EntryNote && e.Role == rundir.AuthorHuman:
		st.NotesSeen[filepath.Base(e.Path)] = e.Iteration
		st.Notes = append(st.Notes, e.Content)
	}
}

// spendClock sets st's spend epoch past every record of the spend journal
// and its clocks to the latest the journal saw.
func spendClock(dir string, st *State) error {
	err := durable.ReadLog(filepath.Join(dir, rundir.SpendJournalFile), func(line []byte) error {
		var rec rundir.SpendRecord[llm.Usage]
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		st.SpendEpoch = max(st.SpendEpoch, rec.Epoch+1)
		st.Ledger.Elapsed = max(st.Ledger.Elapsed, rec.Elapsed)
		st.MatrixElapsed = max(st.MatrixElapsed, rec.MatrixElapsed)
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s cannot be read: %w", rundir.SpendJournalFile, err)
	}
	return nil
}

func countLines(path string) (int, error) {
	n := 0
	err := durable.ReadLog(path, func([]byte) error { n++; return nil })
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return n, nil
}

// restoreCheckpoint loads the checkpoint of the run in d, resumed under
// cfg; when state.json is corrupt or missing it rebuilds it from the run's
// other records. With
// rebuilt set (the caller holds the run's lock) the rebuilt checkpoint is
// saved, recorded in run.json's warnings and told to rebuilt; without, it
// is only returned, and the run rebuilds it again when it is opened to
// run. Where the checkpoint cannot be rebuilt, the refusal says why.
func restoreCheckpoint(d *rundir.Dir, cfg *config.Config, rebuilt func(string)) (*State, error) {
	st, err := rundir.LoadCheckpoint[feedbackBook, mediator.Proposal, llm.LedgerSnapshot](d)
	if errors.Is(err, rundir.ErrCorruptState) {
		fresh, rerr := rebuildState(d, cfg)
		if rerr != nil {
			return nil, fmt.Errorf("%w; it cannot be rebuilt from the run's other records either: %v", err, rerr)
		}
		if rebuilt != nil {
			if err := keepRebuilt(d, fresh, rebuilt); err != nil {
				return nil, err
			}
		}
		st, err = fresh, nil
	}
	return completed(d.Path)(st, err)
}

// keepRebuilt saves a rebuilt checkpoint, records it in run.json's
// warnings and tells tell.
func keepRebuilt(d *rundir.Dir, st *State, tell func(string)) error {
	if err := st.Save(d.Path); err != nil {
		return fmt.Errorf("save the checkpoint of %s rebuilt from its other records: %w", d.Path, err)
	}
	msg := fmt.Sprintf("%s was unreadable or missing and was rebuilt from run.json, the metric parts, the history and the call log (%d completed iterations)",
		d.Join(rundir.StateFile), st.CompletedIteration)
	if err := d.UpdateManifest(func(m *rundir.Manifest) { m.Warnings = append(m.Warnings, msg) }); err != nil {
		return err
	}
	tell(msg)
	return nil
}

// rebuildOwnSkills records the own executor skill of each student that
// holds one. Without records of skill evolution (see rebuildState), each
// is still the version it started with and was checkpointed at.
func rebuildOwnSkills(d *rundir.Dir, st *State) error {
	entries, err := os.ReadDir(d.Join(rundir.StudentsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the students' skills in %s: %w", rundir.StudentsDir, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		s, err := (&skills.Store{Root: d.Join(rundir.StudentSkillsDir(e.Name()))}).Read(conditions.RoleExecutor)
		if err != nil {
			return fmt.Errorf("the executor skill of student %s: %w", e.Name(), err)
		}
		if st.Students == nil {
			st.Students = map[string]*rundir.StudentSkill[mediator.Proposal]{}
		}
		st.Students[e.Name()] = &rundir.StudentSkill[mediator.Proposal]{SkillHash: s.Hash}
	}
	return nil
}
