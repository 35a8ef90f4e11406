package view

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// provenance is one line of history/skill_updates.jsonl: a committed skill
// change and the evidence behind it.
type provenance struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	// Student marks a change to a student's own executor skill, which
	// is not the lab's timeline.
	Student     string              `json:"student"`
	Flow        string              `json:"flow"`
	Iteration   int                 `json:"iteration"`
	BatchID     string              `json:"batch_id"`
	ProposalIDs []string            `json:"proposal_ids"`
	EntryIDs    []string            `json:"entry_ids"`
	PairIDs     [][2]string         `json:"pair_ids"`
	Advice      string              `json:"advice"`
	Rule        string              `json:"rule"`
	Numbers     map[string]float64  `json:"numbers"`
	Rewards     map[string]*float64 `json:"rewards"`
	OldHash     string              `json:"old_hash"`
	NewHash     string              `json:"new_hash"`
	Evidence    string              `json:"evidence"`
	Time        time.Time           `json:"time"`
}

// decisionFile is artifacts/validation/<batch>/decision.json.
type decisionFile struct {
	Tasks    []string `json:"tasks"`
	Decision struct {
		Accept  bool               `json:"accept"`
		Rule    string             `json:"rule"`
		Reason  string             `json:"reason"`
		Numbers map[string]float64 `json:"numbers"`
	} `json:"decision"`
	Trials []struct {
		Task   string   `json:"task"`
		Arm    string   `json:"arm"`
		Index  int      `json:"index"`
		Reward *float64 `json:"reward"`
	} `json:"trials"`
	TrialsSpent int `json:"trials_spent"`
}

// version is one version of a skill on the timeline, with the change that
// made it (nil for the first) and the lines that changed.
type version struct {
	Hash      string
	Text      string
	Missing   bool // its snapshot is not on disk
	Change    *provenance
	Decision  *decisionFile
	Proposals []rundir.Entry
	Diff      []diffLine
}

// diffLine is one line of a diff between consecutive versions: Op is ' ',
// '+' or '-'; '@' starts a hunk.
type diffLine struct {
	Op   string
	Text string
}

func (s *Server) skill(w http.ResponseWriter, r *http.Request) error {
	t, m, err := s.open(r)
	if err != nil {
		return err
	}
	role := r.URL.Query().Get("role")
	if !conditions.Role(role).IsSkill() {
		return fmt.Errorf("%w: %q is not a role (pass ?role=executor, planner or mediator)", errNotFound, role)
	}
	versions, err := timeline(t.Path, role)
	if err != nil {
		return err
	}
	s.render(w, "skill", page{Title: role + " skill of " + t.Name(), Crumbs: crumbs(t),
		Refresh: m.Status == rundir.StatusRunning,
		Data: struct {
			T        target
			Role     string
			Versions []version
		}{t, role, versions}})
	return nil
}

// timeline lists every version of a role's skill in the run: the one it
// started with, then one per committed update, each diffed against the one
// before.
func timeline(dir, role string) ([]version, error) {
	var changes []provenance
	err := readLines(filepath.Join(dir, rundir.SkillUpdatesFile), func(line []byte) {
		var p provenance
		if json.Unmarshal(line, &p) == nil && p.Role == role && p.Student == "" {
			changes = append(changes, p)
		}
	})
	if err != nil {
		return nil, err
	}
	if len(changes) == 0 {
		text, err := os.ReadFile(filepath.Join(dir, rundir.SkillsDir, role, "SKILL.md"))
		if err != nil {
			return nil, fmt.Errorf("%w: the run keeps no %s skill", errNotFound, role)
		}
		return []version{{Hash: "current", Text: string(text)}}, nil
	}
	proposals := proposalEntries(dir, changes)
	out := []version{snapshot(dir, role, changes[0].OldHash)}
	for i := range changes {
		c := &changes[i]
		v := snapshot(dir, role, c.NewHash)
		v.Change = c
		for _, id := range c.ProposalIDs {
			if e, ok := proposals[id]; ok {
				v.Proposals = append(v.Proposals, e)
			}
		}
		if c.BatchID != "" {
			var d decisionFile
			if ok, _ := readJSON(filepath.Join(dir, rundir.ValidationBatchDir(c.BatchID), rundir.DecisionFile), &d); ok {
				v.Decision = &d
			}
		}
		v.Diff = diff(out[len(out)-1].Text, v.Text)
		out = append(out, v)
	}
	return out, nil
}

// snapshot reads the version of a skill with the given hash
// (skills_snapshots/<role>/<hex>/SKILL.md).
func snapshot(dir, role, hash string) version {
	hex := strings.TrimPrefix(hash, "sha256:")
	v := version{Hash: hash}
	if hex == "" || !filepath.IsLocal(hex) || strings.ContainsAny(hex, `/\`) {
		v.Missing = true
		return v
	}
	text, err := os.ReadFile(filepath.Join(dir, rundir.SnapshotsDir, role, hex, "SKILL.md"))
	v.Text, v.Missing = string(text), err != nil
	return v
}

// proposalEntries finds the history entries the updates name as their
// proposals, by id.
func proposalEntries(dir string, changes []provenance) map[string]rundir.Entry {
	want := map[string]bool{}
	for _, c := range changes {
		for _, id := range c.ProposalIDs {
			want[id] = true
		}
	}
	out := map[string]rundir.Entry{}
	if len(want) == 0 {
		return out
	}
	readLines(filepath.Join(dir, rundir.HistoryFile), func(line []byte) {
		var rec rundir.HistoryRecord
		if json.Unmarshal(line, &rec) == nil && rec.Entry != nil && want[rec.Entry.ID] {
			out[rec.Entry.ID] = *rec.Entry
		}
	})
	return out
}

// diff is a line diff of a and b with three lines of context per hunk.
func diff(a, b string) []diffLine {
	al, bl := difflib.SplitLines(a), difflib.SplitLines(b)
	m := difflib.NewMatcher(al, bl)
	var out []diffLine
	for _, group := range m.GetGroupedOpCodes(3) {
		first, last := group[0], group[len(group)-1]
		out = append(out, diffLine{"@", fmt.Sprintf("lines %d-%d → %d-%d", first.I1+1, last.I2, first.J1+1, last.J2)})
		for _, op := range group {
			switch op.Tag {
			case 'e':
				for _, l := range al[op.I1:op.I2] {
					out = append(out, diffLine{" ", strings.TrimRight(l, "\n")})
				}
			case 'd', 'r', 'i':
				for _, l := range al[op.I1:op.I2] {
					out = append(out, diffLine{"-", strings.TrimRight(l, "\n")})
				}
				for _, l := range bl[op.J1:op.J2] {
					out = append(out, diffLine{"+", strings.TrimRight(l, "\n")})
				}
			}
		}
	}
	return out
}

// readLines calls fn with every complete line of a JSON Lines file; a
// missing file has none.
func readLines(path string, fn func([]byte)) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
