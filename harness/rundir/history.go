package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"sync"
	"time"

	"github.com/mediated-coevo/harness/internal/durable"
)

// The kinds of history entries, and the author of entries no model wrote.
const (
	EntryPlan     = "plan"
	EntryProposal = "proposal"
	EntryReport   = "report"
	EntryNote     = "note"
	// EntryRoute is an item of one student's evidence that reached
	// another student's own executor skill under pooled or mediated
	// routing.
	EntryRoute  = "route"
	AuthorHuman = "human"
	// AuthorNetwork wrote what another lab of a network sent (a proposal
	// that entered the lab's buffer at a diffusion barrier).
	AuthorNetwork = "network"
)

// Entry is one Planner or Mediator output in the history. Its outcome
// arrives later, as a separate record that names the entry's id; which
// outcome an entry gets depends on its kind (see History).
type Entry struct {
	ID        string    `json:"id"`
	Role      string    `json:"role"` // planner | mediator | human
	Kind      string    `json:"kind"` // plan | proposal | report | note
	TaskID    string    `json:"task_id"`
	Iteration int       `json:"iteration"`
	Content   string    `json:"content,omitempty"`
	Path      string    `json:"path,omitempty"` // artifact holding the full content, relative to the run dir
	Withheld  bool      `json:"withheld,omitempty"`
	SkillHash string    `json:"skill_hash,omitempty"` // the producer's skill when it wrote this
	TrialID   string    `json:"trial_id,omitempty"`   // the trial this entry came from or fed
	Created   time.Time `json:"created"`

	// Reward is the entry's outcome, once attached: its own trial's reward
	// for a plan, the next trial's for a report, and for a proposal what
	// followed its batch's decision.
	Reward *float64 `json:"reward,omitempty"`
	// Source is what the entry was written from, when the Reflector should
	// see it beside the entry: the prior context of a plan, the feedback
	// of a proposal.
	Source string `json:"source,omitempty"`
	// Trial is the outcome of the entry's own trial (the one a plan
	// guided, or a report or proposal is about); nil when none ran.
	Trial *TrialOutcome `json:"trial,omitempty"`

	// From and To are, for a routed item (kind route), the student whose
	// trial (TrialID) it came from and the student whose own skill it
	// reached; Form is how it travelled (note, proposal, or pooled) and
	// Reason why, in the Mediator's words under mediated routing.
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
	Form   string `json:"form,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// TrialOutcome is the verifier's verdict on one trial.
type TrialOutcome struct {
	Status      string   `json:"status"`
	Reward      *float64 `json:"reward,omitempty"`
	TestsPassed int      `json:"tests_passed,omitempty"`
	TestsFailed int      `json:"tests_failed,omitempty"`
	TestsTotal  int      `json:"tests_total,omitempty"`
}

// HistoryRecord is one line of history.jsonl: an entry, a trial's reward
// attached to entries by id, a drop of pending ids after an unusable trace,
// ids made pending again (pend), or an outcome given to ids without a trial
// (outcome: a rejected proposal's).
type HistoryRecord struct {
	Type      string   `json:"type"` // entry | reward | drop | pend | outcome
	Entry     *Entry   `json:"entry,omitempty"`
	IDs       []string `json:"ids,omitempty"`
	Reward    *float64 `json:"reward,omitempty"`
	TaskID    string   `json:"task_id,omitempty"`
	Iteration int      `json:"iteration,omitempty"`
	TrialID   string   `json:"trial_id,omitempty"`
	// Student attempted the trial of a reward or drop record; in a pend
	// record, it is the only student whose trial may settle the ids (a
	// proposal adopted into that student's own skill), empty for any.
	Student string      `json:"student,omitempty"`
	Status  TrialStatus `json:"status,omitempty"`
}

// History keeps the entries of a run and their outcomes, credited by the
// kind of decision each entry is:
//
//   - a plan is pending from the moment it is added, before its own trial
//     settles, so its outcome is the reward of the trial it planned;
//   - a report is added after its trial, so its outcome is the reward of the
//     task's next trial, the one whose plan it informed;
//   - a proposal is not pending when added: the run makes it pending when
//     its batch is adopted (Pend), so the next trial of its task, which runs
//     with the adopted skill, settles it, or gives it the gate's verdict
//     when the batch is rejected (Credit).
//
// Rewards are attached by id, so tasks that run concurrently can never mix
// them up. It is safe for concurrent use.
type History struct {
	mu      sync.Mutex
	log     *durable.Log
	entries map[string]*Entry
	order   []string
	pending map[string][]string // task -> ids awaiting a delayed reward
	// pendStudent names, for a pended id, the only student whose trial may
	// settle it.
	pendStudent map[string]string
	rewards     map[string][]TaskReward
	lines       int
}

// TaskReward is the reward of one usable trial of a task, as a reward
// record attached it.
type TaskReward struct {
	Iteration int
	TrialID   string
	// Student is who attempted the trial; empty in records written before
	// students were recorded.
	Student string
	Reward  float64
}

// OpenHistory opens (or replays) history.jsonl at path.
func OpenHistory(path string) (*History, error) {
	h := &History{entries: map[string]*Entry{}, pending: map[string][]string{}, pendStudent: map[string]string{},
		rewards: map[string][]TaskReward{}}
	err := durable.ReadLog(path, func(line []byte) error {
		var rec HistoryRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		h.lines++
		return h.apply(rec)
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("replay history %s: %w", path, err)
	}
	log, err := durable.OpenLog(path)
	if err != nil {
		return nil, err
	}
	h.log = log
	return h, nil
}

func (h *History) apply(rec HistoryRecord) error {
	switch rec.Type {
	case "entry":
		if rec.Entry == nil || rec.Entry.ID == "" {
			return errors.New("entry record without an id")
		}
		e := *rec.Entry
		if _, dup := h.entries[e.ID]; dup {
			return fmt.Errorf("duplicate history id %q", e.ID)
		}
		h.entries[e.ID] = &e
		h.order = append(h.order, e.ID)
		if e.Role != AuthorHuman && e.Kind != EntryProposal {
			h.pending[e.TaskID] = append(h.pending[e.TaskID], e.ID)
		}
	case "reward":
		for _, id := range rec.IDs {
			if e, ok := h.entries[id]; ok {
				r := *rec.Reward
				e.Reward = &r
			}
		}
		h.pending[rec.TaskID] = removeIDs(h.pending[rec.TaskID], rec.IDs)
		if rec.Reward != nil {
			h.rewards[rec.TaskID] = append(h.rewards[rec.TaskID], TaskReward{Iteration: rec.Iteration, TrialID: rec.TrialID, Student: rec.Student, Reward: *rec.Reward})
		}
	case "drop":
		h.pending[rec.TaskID] = removeIDs(h.pending[rec.TaskID], rec.IDs)
	case "pend":
		h.pending[rec.TaskID] = append(removeIDs(h.pending[rec.TaskID], rec.IDs), rec.IDs...)
		for _, id := range rec.IDs {
			h.pendStudent[id] = rec.Student
		}
	case "outcome":
		if rec.Reward == nil {
			return errors.New("outcome record without a reward")
		}
		for _, id := range rec.IDs {
			if e, ok := h.entries[id]; ok {
				r := *rec.Reward
				e.Reward = &r
			}
		}
	default:
		return fmt.Errorf("unknown history record type %q", rec.Type)
	}
	return nil
}

func removeIDs(list, drop []string) []string {
	if len(drop) == 0 {
		return list
	}
	gone := make(map[string]bool, len(drop))
	for _, id := range drop {
		gone[id] = true
	}
	out := list[:0:0]
	for _, id := range list {
		if !gone[id] {
			out = append(out, id)
		}
	}
	return out
}

func (h *History) write(rec HistoryRecord) error {
	if err := h.log.Append(rec); err != nil {
		return err
	}
	h.lines++
	return h.apply(rec)
}

// Add records a new entry; it becomes pending for its task until the next
// trace of that task settles it.
func (h *History) Add(e Entry) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.ID == "" {
		return errors.New("history entry needs an id")
	}
	if _, dup := h.entries[e.ID]; dup {
		return fmt.Errorf("history id %q is already used", e.ID)
	}
	if e.Created.IsZero() {
		e.Created = time.Now().UTC()
	}
	return h.write(HistoryRecord{Type: "entry", Entry: &e})
}

// Settle hands the outcome of a task's trial to its pending entries: a usable
// trace attaches its reward to each by id; an unusable one drops them, so they
// are never tagged later with an unrelated reward. The record names the
// student who attempted the trial, so a task's rewards can be told apart
// by student (RewardsAfter). It returns the ids touched.
func (h *History) Settle(taskID, student string, iteration int, trialID string, reward *float64, usable bool, status TrialStatus) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	for _, id := range h.pending[taskID] {
		if h.settles(id, student, trialID) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rec := HistoryRecord{IDs: ids, TaskID: taskID, Iteration: iteration, TrialID: trialID, Student: student, Status: status}
	if usable && reward != nil {
		r := *reward
		rec.Type, rec.Reward = "reward", &r
	} else {
		rec.Type = "drop"
	}
	return ids, h.write(rec)
}

// settles reports whether a trial of student, trialID, may settle the
// pending entry id. A plan waits for its own trial: when several students
// attempt a task in one iteration, another student's trial may end first.
// An id pended for one student waits for that student's trial.
func (h *History) settles(id, student, trialID string) bool {
	if e := h.entries[id]; e != nil && e.Kind == EntryPlan && e.TrialID != "" && e.TrialID != trialID {
		return false
	}
	s := h.pendStudent[id]
	return s == "" || s == student
}

// Pend makes entries of a task pending, so that the task's next usable
// trial settles them: a proposal once its batch is adopted. A non-empty
// student restricts that to the student's trials: a proposal adopted into
// a student's own skill is followed only by that student's trials.
func (h *History) Pend(taskID, student string, ids []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		if _, ok := h.entries[id]; !ok {
			return fmt.Errorf("pend history entry %q: no such entry", id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return h.write(HistoryRecord{Type: "pend", IDs: ids, TaskID: taskID, Student: student})
}

// Credit gives entries an outcome no trial produced: a rejected proposal's
// is the gate's verdict. It leaves the task's trial rewards alone.
func (h *History) Credit(ids []string, outcome float64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		if _, ok := h.entries[id]; !ok {
			return fmt.Errorf("credit history entry %q: no such entry", id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return h.write(HistoryRecord{Type: "outcome", IDs: ids, Reward: &outcome})
}

// Entry returns a copy of the entry with the given id.
func (h *History) Entry(id string) (Entry, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.entries[id]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// Entries returns copies of the entries that match keep, in the order they were added.
func (h *History) Entries(keep func(*Entry) bool) []Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Entry
	for _, id := range h.order {
		e := h.entries[id]
		if keep == nil || keep(e) {
			out = append(out, *e)
		}
	}
	return out
}

// RewardsAfter returns the rewards the task's trials by student after
// iteration received, in the order they were recorded: under a rotation
// the task's next trial is often another student's, whose reward says
// nothing of this student's proposal. An empty student, and a record
// written before students were recorded, match any. A trial leaves a
// reward record only when it settled some pending entry of its task; its
// own plan, at least, is.
func (h *History) RewardsAfter(taskID, student string, iteration int) []TaskReward {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []TaskReward
	for _, r := range h.rewards[taskID] {
		if student != "" && r.Student != "" && r.Student != student {
			continue
		}
		if r.Iteration > iteration {
			out = append(out, r)
		}
	}
	return out
}

// Pending returns the ids awaiting a reward for a task, sorted.
func (h *History) Pending(taskID string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]string(nil), h.pending[taskID]...)
	sort.Strings(out)
	return out
}

// Lines is the number of records in the file, for checkpoints.
func (h *History) Lines() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lines
}

// Close closes the file.
func (h *History) Close() error { return h.log.Close() }
