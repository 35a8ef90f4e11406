package mediator

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// entries builds entries of one role for a task, one per reward.
func entries(task string, rewards ...float64) []PairEntry {
	out := make([]PairEntry, len(rewards))
	for i, r := range rewards {
		out[i] = PairEntry{ID: fmt.Sprintf("%s/%d", task, i), Role: "planner", TaskID: task, Iteration: i,
			Content: fmt.Sprintf("plan %d of %s", i, task), Reward: r}
	}
	return out
}

func ids(pairs []Pair) [][2]string {
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		out[i] = [2]string{p.Better.ID, p.Worse.ID}
	}
	return out
}

func TestFormPairs(t *testing.T) {
	cfg := PairConfig{MaxPairs: 5, BucketFraction: 0.3, MinRewardGap: 0.2}
	tests := []struct {
		name    string
		entries []PairEntry
		cfg     PairConfig
		want    [][2]string // nil: only the checks below
		n       int
		cross   int
	}{
		{
			name:    "one pair from the extremes of one task",
			entries: entries("a", 0, 0.5, 1),
			cfg:     cfg,
			want:    [][2]string{{"a/2", "a/0"}},
			n:       1,
		},
		{
			name:    "gap below the minimum gives no pair",
			entries: entries("a", 0.5, 0.6),
			cfg:     cfg,
			n:       0,
		},
		{
			name:    "a gap equal to the minimum counts despite float error",
			entries: entries("a", 0.5, 0.7),
			cfg:     cfg,
			want:    [][2]string{{"a/1", "a/0"}},
			n:       1,
		},
		{
			name:    "equal rewards never pair, even with no minimum gap",
			entries: entries("a", 1, 1, 1, 1),
			cfg:     PairConfig{MaxPairs: 5, BucketFraction: 0.5},
			n:       0,
		},
		{
			name:    "buckets are disjoint with a fraction over one half",
			entries: entries("a", 0, 0.4, 0.6, 1),
			cfg:     PairConfig{MaxPairs: 10, BucketFraction: 1, MinRewardGap: 0},
			// k is capped at 2: bottom {0, 0.4}, top {0.6, 1}; never 0.4 vs 0 or 1 vs 0.6.
			want: [][2]string{{"a/3", "a/0"}, {"a/2", "a/0"}, {"a/3", "a/1"}, {"a/2", "a/1"}},
			n:    4,
		},
		{
			name:    "cap at MaxPairs",
			entries: entries("a", 0, 0, 0, 0, 0, 1, 1, 1, 1, 1),
			cfg:     PairConfig{MaxPairs: 3, BucketFraction: 0.5, MinRewardGap: 0.2},
			n:       3,
		},
		{
			name:    "same-task pairs are preferred when there are enough",
			entries: slices.Concat(entries("a", 0, 0, 1, 1), entries("b", 0, 0, 1, 1), entries("c", 0.2, 0.9)),
			cfg:     PairConfig{MaxPairs: 5, BucketFraction: 0.5, MinRewardGap: 0.2},
			n:       5,
			cross:   0,
		},
		{
			name:    "cross-task pairs fill up and are marked",
			entries: slices.Concat(entries("a", 0, 1), entries("b", 0.5), entries("c", 0.1)),
			cfg:     PairConfig{MaxPairs: 3, BucketFraction: 0.5, MinRewardGap: 0.2},
			// same task: a/1 over a/0. Over all four (0, 0.1, 0.5, 1) the buckets are
			// {a/0, c/0} and {b/0, a/1}; cross-task pairs: b/0-a/0, b/0-c/0, a/1-c/0.
			n:     3,
			cross: 2,
		},
		{
			name:    "entries without a task are ignored",
			entries: []PairEntry{{ID: "x", Role: "planner", Reward: 0}, {ID: "y", Role: "planner", Reward: 1}},
			cfg:     cfg,
			n:       0,
		},
		{
			name: "different roles never pair",
			entries: []PairEntry{{ID: "p", Role: "planner", TaskID: "a", Reward: 0},
				{ID: "m", Role: "mediator", TaskID: "a", Reward: 1}},
			cfg: cfg,
			n:   0,
		},
		{
			name: "different kinds never pair, within a task or across tasks",
			entries: []PairEntry{{ID: "plan-a", Role: "planner", Kind: "plan", TaskID: "a", Reward: 0},
				{ID: "prop-a", Role: "planner", Kind: "proposal", TaskID: "a", Reward: 1},
				{ID: "prop-b", Role: "planner", Kind: "proposal", TaskID: "b", Reward: 1}},
			cfg: cfg,
			n:   0,
		},
		{
			name: "each kind pairs with itself only",
			entries: []PairEntry{{ID: "plan-0", Role: "planner", Kind: "plan", TaskID: "a", Reward: 0},
				{ID: "plan-1", Role: "planner", Kind: "plan", TaskID: "a", Reward: 1},
				{ID: "prop-0", Role: "planner", Kind: "proposal", TaskID: "a", Reward: 0.5},
				{ID: "prop-1", Role: "planner", Kind: "proposal", TaskID: "b", Reward: 0},
				{ID: "prop-2", Role: "planner", Kind: "proposal", TaskID: "b", Reward: 0.9}},
			cfg: PairConfig{MaxPairs: 10, BucketFraction: 0.5, MinRewardGap: 0.2},
			// Mixing kinds, plan-1 over prop-1 would be the widest gap; it
			// is never formed.
			want: [][2]string{{"plan-1", "plan-0"}, {"prop-2", "prop-1"}},
			n:    2,
		},
		{
			name:    "no pairs with MaxPairs zero",
			entries: entries("a", 0, 1),
			cfg:     PairConfig{BucketFraction: 0.3},
			n:       0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FormPairs(tt.entries, tt.cfg, 42)
			if len(got) != tt.n {
				t.Fatalf("got %d pairs %v, want %d", len(got), ids(got), tt.n)
			}
			if tt.want != nil && !reflect.DeepEqual(ids(got), tt.want) {
				t.Errorf("pairs = %v, want %v", ids(got), tt.want)
			}
			cross := 0
			for i, p := range got {
				if p.Gap != p.Better.Reward-p.Worse.Reward || p.Gap <= 0 || p.Gap < tt.cfg.MinRewardGap-1e-9 {
					t.Errorf("pair %v has gap %v (rewards %v, %v)", ids(got)[i], p.Gap, p.Better.Reward, p.Worse.Reward)
				}
				if p.Better.Role != p.Worse.Role {
					t.Errorf("pair %v mixes roles", ids(got)[i])
				}
				if p.Better.Kind != p.Worse.Kind {
					t.Errorf("pair %v mixes kinds %s and %s", ids(got)[i], p.Better.Kind, p.Worse.Kind)
				}
				if p.CrossTask != (p.Better.TaskID != p.Worse.TaskID) {
					t.Errorf("pair %v: CrossTask = %v for tasks %s, %s", ids(got)[i], p.CrossTask, p.Better.TaskID, p.Worse.TaskID)
				}
				if p.CrossTask {
					cross++
				}
				if i > 0 && got[i-1].Gap < p.Gap {
					t.Errorf("pairs are not sorted by gap: %v before %v", got[i-1].Gap, p.Gap)
				}
			}
			if cross != tt.cross {
				t.Errorf("%d cross-task pairs, want %d", cross, tt.cross)
			}
		})
	}
}

func TestFormPairsDeterministic(t *testing.T) {
	var all []PairEntry
	for _, task := range []string{"a", "b", "c", "d"} {
		all = append(all, entries(task, 0, 0.1, 0.3, 0.5, 0.6, 0.8, 0.9, 1, 1, 0)...)
	}
	cfg := PairConfig{MaxPairs: 5, BucketFraction: 0.3, MinRewardGap: 0.2}
	first := FormPairs(all, cfg, 9)
	if len(first) != 5 {
		t.Fatalf("got %d pairs, want 5", len(first))
	}
	shuffler := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		shuffled := slices.Clone(all)
		shuffler.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if again := FormPairs(shuffled, cfg, 9); !reflect.DeepEqual(ids(again), ids(first)) {
			t.Fatalf("same seed, reordered input: %v, first %v", ids(again), ids(first))
		}
	}
	differs := false
	for seed := int64(10); seed < 30 && !differs; seed++ {
		differs = !reflect.DeepEqual(ids(FormPairs(all, cfg, seed)), ids(first))
	}
	if !differs {
		t.Errorf("20 other seeds all chose the same pairs; the seed is not used")
	}
}
