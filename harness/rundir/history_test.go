package rundir

import (
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
		if _, err := h.Settle(task, it, "t", r, usable, "ok"); err != nil {
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
	if got := h.RewardsAfter("a", 1); !reflect.DeepEqual(got, want) {
		t.Errorf("rewards of a after 1 = %+v, want %+v", got, want)
	}
	if got := h.RewardsAfter("a", 4); got != nil {
		t.Errorf("rewards of a after 4 = %+v, want none", got)
	}
	h.Close()
	again, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := again.RewardsAfter("a", 1); !reflect.DeepEqual(got, want) {
		t.Errorf("after replay: %+v, want %+v", got, want)
	}
}
