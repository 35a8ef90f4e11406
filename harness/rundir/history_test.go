package rundir

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
)

// A task's rewards are kept per task, after an iteration, and survive a
// replay of the file; unusable trials leave none.
func TestHistoryRewardsAfter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	h, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	reward := func(r float64) *float64 { return &r }
	step := func(task string, it int, r *float64, usable bool) {
		t.Helper()
		if _, err := h.Settle(task, "", it, "t", r, usable, "ok"); err != nil {
			t.Fatal(err)
		}
		if err := h.Add(Entry{ID: task + "/" + string(rune('0'+it)), Role: "planner", Kind: EntryPlan, TaskID: task, Iteration: it}); err != nil {
			t.Fatal(err)
		}
	}
	step("a", 1, reward(0), true)
	step("b", 1, reward(0), true)
	step("a", 2, reward(0.5), true)
	step("b", 2, reward(0.9), true)
	step("a", 3, nil, false)
	step("a", 4, reward(1), true)
	want := []TaskReward{{Iteration: 2, TrialID: "t", Reward: 0.5}, {Iteration: 4, TrialID: "t", Reward: 1}}
	if got := h.RewardsAfter("a", "", 1); !reflect.DeepEqual(got, want) {
		t.Errorf("rewards of a after 1 = %+v, want %+v", got, want)
	}
	if got := h.RewardsAfter("a", "", 4); got != nil {
		t.Errorf("rewards of a after 4 = %+v, want none", got)
	}
	h.Close()
	again, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.RewardsAfter("a", "", 1); !reflect.DeepEqual(got, want) {
		t.Errorf("after replay: %+v, want %+v", got, want)
	}
}

// Each kind of entry is credited with its own outcome: a plan with the
// trial it planned, a report with the next trial of its task, a proposal
// with the first trial after its batch was adopted or, when it was
// rejected, with the verdict. The credit survives a replay of the file.
func TestHistoryCreditsEachKindOfDecision(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	h, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	reward := func(r float64) *float64 { return &r }
	// trial runs iteration it of task a the way the run does: its plan is
	// added before its trial settles, its report and proposal after.
	trial := func(it int, r float64) {
		t.Helper()
		must(h.Add(Entry{ID: fmt.Sprintf("plan%d", it), Role: "planner", Kind: EntryPlan, TaskID: "a", Iteration: it}))
		_, err := h.Settle("a", "", it, fmt.Sprintf("i%d", it), reward(r), true, "scored")
		must(err)
		must(h.Add(Entry{ID: fmt.Sprintf("report%d", it), Role: "mediator", Kind: EntryReport, TaskID: "a", Iteration: it}))
		must(h.Add(Entry{ID: fmt.Sprintf("proposal%d", it), Role: "planner", Kind: EntryProposal, TaskID: "a", Iteration: it}))
	}
	trial(1, 1)
	trial(2, 0)
	must(h.Pend("a", "", []string{"proposal1"})) // proposal1's batch is adopted
	must(h.Credit([]string{"proposal2"}, 0.25))
	trial(3, 0.5)
	h.Close()
	again, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	want := map[string]*float64{
		"plan1": reward(1), "plan2": reward(0), "plan3": reward(0.5),
		"report1": reward(0), "report2": reward(0.5), "report3": nil,
		"proposal1": reward(0.5), "proposal2": reward(0.25), "proposal3": nil,
	}
	for id, w := range want {
		e, ok := again.Entry(id)
		switch {
		case !ok:
			t.Errorf("entry %s is missing", id)
		case (e.Reward == nil) != (w == nil) || (w != nil && *e.Reward != *w):
			t.Errorf("entry %s credited with %v, want %v", id, show(e.Reward), show(w))
		}
	}
	if got := again.Pending("a"); !reflect.DeepEqual(got, []string{"report3"}) {
		t.Errorf("pending = %v, want only report3 (a proposal waits for its batch)", got)
	}
	if got := again.RewardsAfter("a", "", 0); len(got) != 3 {
		t.Errorf("task a has %d trial rewards, want 3: an outcome given without a trial is not one", len(got))
	}
}

func show(r *float64) string {
	if r == nil {
		return "nothing"
	}
	return fmt.Sprint(*r)
}

func TestHistoryRefusesToCreditUnknownEntries(t *testing.T) {
	h, err := OpenHistory(filepath.Join(t.TempDir(), "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.Pend("a", "", []string{"nope"}); err == nil {
		t.Error("Pend of an unknown entry succeeded")
	}
	if err := h.Credit([]string{"nope"}, 0); err == nil {
		t.Error("Credit of an unknown entry succeeded")
	}
}

// Under assignment = "all" two students attempt a task in one iteration:
// each plan is settled by its own trial whichever ends first, and a
// proposal adopted into one student's own skill waits for that student.
func TestSettleKeepsEachStudentsCredit(t *testing.T) {
	reward := func(r float64) *float64 { return &r }
	tests := []struct {
		name string
		run  func(t *testing.T, h *History)
		want map[string]*float64
	}{
		{"two plans of one task, the second trial ends first", func(t *testing.T, h *History) {
			for _, st := range []string{"one", "two"} {
				if err := h.Add(Entry{ID: "plan@" + st, Role: "planner", Kind: EntryPlan, TaskID: "a", Iteration: 1, TrialID: "i0001-a@" + st}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := h.Settle("a", "two", 1, "i0001-a@two", reward(0), true, "scored"); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Settle("a", "one", 1, "i0001-a@one", reward(1), true, "scored"); err != nil {
				t.Fatal(err)
			}
		}, map[string]*float64{"plan@one": reward(1), "plan@two": reward(0)}},
		{"a proposal adopted into one student's own skill", func(t *testing.T, h *History) {
			if err := h.Add(Entry{ID: "proposal", Role: "planner", Kind: EntryProposal, TaskID: "a", Iteration: 1}); err != nil {
				t.Fatal(err)
			}
			if err := h.Pend("a", "one", []string{"proposal"}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Settle("a", "two", 2, "i0002-a", reward(0), true, "scored"); err != nil {
				t.Fatal(err)
			}
			if _, err := h.Settle("a", "one", 3, "i0003-a", reward(1), true, "scored"); err != nil {
				t.Fatal(err)
			}
		}, map[string]*float64{"proposal": reward(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.jsonl")
			h, err := OpenHistory(path)
			if err != nil {
				t.Fatal(err)
			}
			tt.run(t, h)
			h.Close()
			again, err := OpenHistory(path) // the replay agrees with the live history
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			for id, w := range tt.want {
				e, _ := again.Entry(id)
				if (e.Reward == nil) != (w == nil) || (w != nil && *e.Reward != *w) {
					t.Errorf("entry %s credited with %v, want %v", id, show(e.Reward), show(w))
				}
			}
		})
	}
}
