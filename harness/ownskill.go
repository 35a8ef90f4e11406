package harness

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
)

// skillLine is one executor skill that evolves through the Advisor and the
// gate: the lab's, shared by its students, or a student's own. Each line
// keeps its own proposals, batches, tree and snapshots.
type skillLine struct {
	// student is empty for the lab's skill.
	student string
	// index is the student's place in the roster, from 1; it names the
	// line's batches, since a student id may hold characters a batch id
	// may not.
	index int
	store *skills.Store
	// snaps is the snapshots directory, relative to the run directory.
	snaps string
}

// batchID names the line's n-th batch.
func (l skillLine) batchID(n int) string {
	if l.student == "" {
		return fmt.Sprintf("b%03d", n)
	}
	return fmt.Sprintf("s%db%03d", l.index, n)
}

// provenanceRole names the line's executor skill in provenance ids and
// the updates table: "executor", or "executor@<student>".
func (l skillLine) provenanceRole() string {
	return l.roleOf(conditions.RoleExecutor)
}

// roleOf names role's skill of this line.
func (l skillLine) roleOf(role conditions.Role) string {
	if l.student == "" {
		return string(role)
	}
	return string(role) + "@" + l.student
}

// validator is the agent the gate's trials of a line's candidates run:
// a student's own skill is measured on that student's model and mode, the
// agent that will use it.
func (r *Run) validator(l skillLine) executor.Agent {
	if l.student == "" {
		return r.NewAgent("validator")
	}
	return r.NewAgent(l.student)
}

// labLine is the lab's executor skill.
func (r *Run) labLine() skillLine {
	return skillLine{store: r.store, snaps: rundir.SnapshotsDir}
}

// ownLines lists, in roster order, the students of the row's lab that hold
// their own executor skill.
func (r *Run) ownLines() []skillLine {
	lab, err := r.Config.Lab(r.Spec.Lab)
	if err != nil {
		return nil
	}
	var out []skillLine
	for i, st := range lab.Roster() {
		if !st.OwnSkill {
			continue
		}
		out = append(out, skillLine{student: st.ID, index: i + 1,
			store: &skills.Store{Root: r.Dir.Join(rundir.StudentSkillsDir(st.ID))}, snaps: rundir.StudentSnapshotsDir(st.ID)})
	}
	return out
}

// ownLine is the line of a student with its own skill.
func (r *Run) ownLine(student string) (skillLine, bool) {
	for _, l := range r.lines {
		if l.student == student {
			return l, true
		}
	}
	return skillLine{}, false
}

// seedOwnSkills gives each student with its own skill, on a fresh run, a
// copy of the lab's executor skill, snapshotted as its first version.
func (r *Run) seedOwnSkills() error {
	for _, l := range r.lines {
		if err := os.RemoveAll(filepath.Dir(l.store.Root)); err != nil {
			return fmt.Errorf("clear the skill of student %s: %w", l.student, err)
		}
		role := string(conditions.RoleExecutor)
		if err := skills.CopyTree(filepath.Join(r.store.Root, role), filepath.Join(l.store.Root, role)); err != nil {
			return fmt.Errorf("copy the lab's executor skill to student %s: %w", l.student, err)
		}
		s, err := l.store.Read(conditions.RoleExecutor)
		if err != nil {
			return err
		}
		if _, err := skills.Snapshot(r.Dir.Join(l.snaps), conditions.RoleExecutor, s); err != nil {
			return err
		}
		r.st.Students[l.student] = &rundir.StudentSkill[mediator.Proposal]{SkillHash: s.Hash}
	}
	return nil
}

// restoreOwnSkills puts each student's own skill back to the version the
// checkpoint recorded.
func (r *Run) restoreOwnSkills(st *State) error {
	for _, l := range r.lines {
		want := st.Students[l.student]
		if want == nil {
			return fmt.Errorf("the checkpoint records no skill of student %s, which holds its own (own_skill = true); resume with the configuration the run started with", l.student)
		}
		cur, err := l.store.Read(conditions.RoleExecutor)
		if err == nil && cur.Hash == want.SkillHash {
			continue
		}
		if err := l.store.RestoreFrom(r.Dir.Join(l.snaps), conditions.RoleExecutor, want.SkillHash); err != nil {
			return fmt.Errorf("restore the skill of student %s: %w", l.student, err)
		}
	}
	return nil
}

// ownSkillTexts reads each own skill in use at the start of an iteration.
func (r *Run) ownSkillTexts() (map[string]*skills.Skill, error) {
	out := map[string]*skills.Skill{}
	for _, l := range r.lines {
		s, err := l.store.Read(conditions.RoleExecutor)
		if err != nil {
			return nil, fmt.Errorf("read the executor skill of student %s: %w", l.student, err)
		}
		out[l.student] = s
	}
	return out, nil
}

// forStudent is the iteration's input as a student's trial sees it: the
// student's own executor skill in place of the lab's, when it holds one.
func (in *iterationInput) forStudent(student string) *iterationInput {
	s, ok := in.own[student]
	if !ok {
		return in
	}
	c := *in
	c.hashes = cloneMap(in.hashes)
	c.skillText = cloneMap(in.skillText)
	c.hashes[conditions.RoleExecutor] = s.Hash
	c.skillText[conditions.RoleExecutor] = string(s.Content)
	return &c
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// bufferFor returns the buffer and decided-batch count of a line.
func (r *Run) bufferFor(l skillLine) (*[]mediator.Proposal, *int) {
	if l.student == "" {
		return &r.st.Buffer, &r.st.Batches
	}
	own := r.st.Students[l.student]
	return &own.Buffer, &own.Batches
}

// recordOwnSkills notes, for a checkpoint, the version of each own skill
// in use.
func (r *Run) recordOwnSkills() error {
	for _, l := range r.lines {
		s, err := l.store.Read(conditions.RoleExecutor)
		if err != nil {
			return fmt.Errorf("read the executor skill of student %s: %w", l.student, err)
		}
		r.st.Students[l.student].SkillHash = s.Hash
	}
	return nil
}

// ownAtCheckpoint restores each own executor skill as it stood at cp: the
// lab's, which each started as a copy of, at the initial checkpoint, and the
// version the last checkpoint recorded at the final one.
func (r *Run) ownAtCheckpoint(cp checkpoint) (map[string]*skills.Skill, error) {
	out := map[string]*skills.Skill{}
	for _, l := range r.lines {
		if cp.iteration == 0 {
			out[l.student] = &skills.Skill{Hash: cp.hashes[conditions.RoleExecutor], Content: []byte(cp.text[conditions.RoleExecutor])}
			continue
		}
		hash := r.st.Students[l.student].SkillHash
		content, err := skills.Restore(r.Dir.Join(l.snaps), conditions.RoleExecutor, hash)
		if err != nil {
			return nil, fmt.Errorf("restore the executor skill of student %s at checkpoint %d: %w", l.student, cp.iteration, err)
		}
		out[l.student] = &skills.Skill{Hash: hash, Content: content}
	}
	return out, nil
}
