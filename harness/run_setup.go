package harness

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x5DEECE66D)) }

// ErrConfigChanged refuses a resume whose configuration differs from the
// one the run started with.
var ErrConfigChanged = errors.New("the configuration changed since the run started")

// open prepares a fresh run or restores a resumed one to its last checkpoint.
func (r *Run) open() error {
	dir := r.Dir.Path
	r.store = &skills.Store{Root: filepath.Join(dir, rundir.SkillsDir)}
	st, err := r.startOrRestore()
	if err != nil {
		return err
	}
	r.st = st
	if r.st.Students == nil {
		r.st.Students = map[string]*rundir.StudentSkill[mediator.Proposal]{}
	}
	r.lines = r.ownLines()
	if r.Ledger != nil {
		r.Ledger.Restore(st.Ledger)
	}
	if err := r.openLogs(); err != nil {
		return err
	}
	if st.CompletedIteration == 0 {
		if err := r.snapshotAll(); err != nil {
			return err
		}
		if err := r.seedOwnSkills(); err != nil {
			return err
		}
		if err := r.checkpoint(0); err != nil {
			return err
		}
	}
	if err := r.restoreOwnSkills(r.st); err != nil {
		return err
	}
	r.makeRoles()
	return r.Dir.UpdateManifest(func(m *rundir.Manifest) {
		m.Status = rundir.StatusRunning
		m.Error = ""
		m.FinishedAt = nil
		m.Iterations = r.Iterations
		m.Counts = maps.Clone(r.st.Counts)
		m.TrialWarnings = maps.Clone(r.st.Warnings)
	})
}

// startOrRestore returns a fresh state for a new run, or the checkpoint of
// a resumed one with the append-only files cut back to it.
func (r *Run) startOrRestore() (*State, error) {
	dir := r.Dir.Path
	fingerprint := config.Fingerprint(r.Config)
	st, err := loadCheckpoint(r.Dir, r.Config, func(msg string) {
		r.emit(Event{Kind: EventStateRebuilt, Row: r.Spec.Name, Message: msg})
	})
	if err != nil {
		return nil, err
	}
	if st == nil {
		if _, err := skills.ValidateTree(r.store.Root); err != nil {
			return nil, fmt.Errorf("skills of row %s: %w", r.Spec.Name, err)
		}
		// A fresh run starts from empty logs, even if an earlier attempt
		// crashed before its first checkpoint.
		for _, f := range []string{rundir.HistoryFile, rundir.RejectedFile, rundir.SkillUpdatesFile, rundir.ReflectionsFile, rundir.SpendJournalFile} {
			if err := durable.TruncateLines(filepath.Join(dir, f), 0); err != nil {
				return nil, err
			}
		}
		return newState(r.Dir.ID, r.Spec.Name, fingerprint), nil
	}
	if st.ConfigFingerprint != fingerprint && !r.ForceResume {
		return nil, fmt.Errorf("%w: %s started with fingerprint %s, now %s; resume with the original configuration, or force it (--force) knowing the rows will not be comparable",
			ErrConfigChanged, dir, short(st.ConfigFingerprint), short(fingerprint))
	}
	// Everything the checkpoint counts must be there before anything is
	// cut back or rewritten.
	if err := rundir.VerifyCheckpoint(dir, promised(st)); err != nil {
		return nil, err
	}
	if st.ConfigFingerprint != fingerprint {
		// Forced: from here on the run follows the new configuration, and
		// its records say so.
		if err := r.Dir.RecordForcedResume(r.Config, r.Meta, st.CompletedIteration+1); err != nil {
			return nil, err
		}
		st.ConfigFingerprint = fingerprint
		if err := compactSpend(dir, st); err != nil {
			return nil, err
		}
	}
	if err := r.rewind(st); err != nil {
		return nil, fmt.Errorf("restore %s to iteration %d: %w", dir, st.CompletedIteration, err)
	}
	// What the journal held is now in st alone, before anything is appended.
	if err := compactSpend(dir, st); err != nil {
		return nil, fmt.Errorf("fold the spend journal of %s into its checkpoint: %w", dir, err)
	}
	return st, nil
}

// openLogs opens the run's append-only records for writing.
func (r *Run) openLogs() error {
	dir := r.Dir.Path
	var err error
	if r.history, err = rundir.OpenHistory(filepath.Join(dir, rundir.HistoryFile)); err != nil {
		return err
	}
	if r.rejected, err = durable.OpenLog(filepath.Join(dir, rundir.RejectedFile)); err != nil {
		return err
	}
	if r.updates, err = durable.OpenLog(filepath.Join(dir, rundir.SkillUpdatesFile)); err != nil {
		return err
	}
	if r.reflections, err = durable.OpenLog(filepath.Join(dir, rundir.ReflectionsFile)); err != nil {
		return err
	}
	return r.openSpend()
}

// makeRoles binds the lab's model-backed roles to their clients.
func (r *Run) makeRoles() {
	exp := r.Config.Experiment
	seed := r.Spec.Seed
	// Each use copies a role and sets the caller path of its work; until
	// then a role is charged to its kind alone.
	r.planner = &mediator.Planner{Client: r.Clients.Get(conditions.RolePlanner), Caller: rundir.Caller{Kind: rundir.CallerPlanner}.String(), Seed: seed, MaxContextChars: exp.PlannerContextMaxChars}
	r.mediator = &mediator.Mediator{Client: r.Clients.Get(conditions.RoleMediator), Caller: rundir.Caller{Kind: rundir.CallerMediator}.String(), MaxChars: exp.ReportMaxChars,
		TranscriptChars: r.Config.Mediator.TranscriptChars, Seed: seed}
	r.advisor = &mediator.Advisor{Client: r.Clients.Get(conditions.RoleAdvisor), Caller: rundir.Caller{Kind: rundir.CallerAdvisor}.String(), Seed: seed}
	r.reflector = &mediator.Reflector{Client: r.Clients.Get(conditions.RoleReflector), Caller: rundir.Caller{Kind: rundir.CallerReflector}.String(),
		MinChangedWords: r.Config.Reflection.MinChangedWords, Seed: seed}
}

func short(s string) string {
	s = strings.TrimPrefix(s, "sha256:")
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// rewind cuts the append-only files back to the checkpoint, puts the skills
// back to the versions in use then, and removes metric parts written after it.
func (r *Run) rewind(st *State) error {
	dir := r.Dir.Path
	lines := tournamentLines(st)
	maps.Copy(lines, map[string]int{rundir.HistoryFile: st.HistoryLines, rundir.RejectedFile: st.RejectedLines,
		rundir.SkillUpdatesFile: st.ProvenanceLines, rundir.ReflectionsFile: st.ReflectionLines})
	for f, n := range lines {
		if err := durable.TruncateLines(filepath.Join(dir, f), n); err != nil {
			return err
		}
	}
	snaps := filepath.Join(dir, rundir.SnapshotsDir)
	current, err := r.store.Hashes()
	if err != nil {
		return err
	}
	for role, want := range st.SkillHashes {
		if current[role] == want {
			continue
		}
		if err := r.store.RestoreFrom(snaps, role, want); err != nil {
			return fmt.Errorf("restore %s skill %s: %w", role, short(want), err)
		}
	}
	parts, _ := filepath.Glob(filepath.Join(r.Dir.MetricsDir(), rundir.MetricsPartPattern))
	updates, _ := rundir.UpdatesParts(r.Dir.MetricsDir())
	for _, p := range append(parts, updates...) {
		it, ok := rundir.ParseMetricsPart(filepath.Base(p))
		if !ok {
			it, ok = rundir.ParseUpdatesPart(filepath.Base(p))
		}
		if ok && it > st.CompletedIteration {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *Run) snapshotAll() error {
	snaps := filepath.Join(r.Dir.Path, rundir.SnapshotsDir)
	for _, role := range conditions.SkillRoles() {
		s, err := r.store.Read(role)
		if err != nil {
			return err
		}
		if _, err := skills.Snapshot(snaps, role, s); err != nil {
			return err
		}
	}
	return nil
}

// checkpoint records a completed iteration. It runs after the iteration's
// metrics part is in place, so a crash between the two only repeats the
// iteration, whose part is then rewritten under the same name.
func (r *Run) checkpoint(it int) error {
	if err := r.Calls.Err(); err != nil {
		return err
	}
	hashes, err := r.store.Hashes()
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// No trial's spend save may interleave with the checkpoint's write.
	r.spendMu.Lock()
	defer r.spendMu.Unlock()
	prev := r.st.CompletedIteration
	r.st.CompletedIteration = it
	r.st.HistoryLines = r.history.Lines()
	r.st.RejectedLines = r.rejected.Count()
	r.st.ProvenanceLines = r.updates.Count()
	r.st.ReflectionLines = r.reflections.Count()
	r.countTournamentLines()
	r.st.SkillHashes = hashes
	if err := r.recordOwnSkills(); err != nil {
		r.st.CompletedIteration = prev
		return err
	}
	if err := r.saveCheckpoint(); err != nil {
		// Not on disk, so not done: the run must not report it.
		r.st.CompletedIteration = prev
		return err
	}
	return r.Dir.UpdateManifest(func(m *rundir.Manifest) {
		m.CompletedIterations = it
		m.Counts = maps.Clone(r.st.Counts)
		m.TrialWarnings = maps.Clone(r.st.Warnings)
	})
}

func (r *Run) finish(status rundir.Status, cause error) {
	_ = r.Dir.UpdateManifest(func(m *rundir.Manifest) {
		m.Status = status
		if cause != nil {
			m.Error = cause.Error()
		}
		m.MarkFinished()
	})
}

func (r *Run) close() {
	for _, c := range []interface{ Close() error }{r.history, r.rejected, r.updates, r.reflections, r.spend} {
		if c != nil {
			c.Close()
		}
	}
	r.closeTournamentLogs()
	if r.spendTap != nil {
		r.spendTap.Close()
	}
}
