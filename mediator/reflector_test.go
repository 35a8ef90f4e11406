package mediator

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
	"github.com/mediated-coevo/harness/skills"
)

func TestSimilarity(t *testing.T) {
	tests := []struct {
		name    string
		a, b    string
		want    float64
		changed int
	}{
		{"identical", "a b c", "a b c", 1, 0},
		{"whitespace does not count", "a  b\n\tc\n", " a b c", 1, 0},
		{"both empty", "", "  \n", 1, 0},
		{"one empty", "a b", "", 0, 2},
		{"disjoint", "a b c", "x y z", 0, 6},
		{"one word changed", "a b c d", "a b x d", 0.75, 2},
		{"reversed order keeps one match", "a b c", "c b a", 1.0 / 3, 4},
		{"insertion", "a b c", "a b new c", 6.0 / 7, 1},
		{"case matters", "Word", "word", 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Similarity(tt.a, tt.b); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Similarity(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got, back := Similarity(tt.a, tt.b), Similarity(tt.b, tt.a); got != back {
				t.Errorf("not symmetric: %v vs %v", got, back)
			}
			if got := ChangedWords(tt.a, tt.b); got != tt.changed || ChangedWords(tt.b, tt.a) != got {
				t.Errorf("ChangedWords(%q, %q) = %d, want %d both ways", tt.a, tt.b, got, tt.changed)
			}
		})
	}
}

const currentPlanner = `---
name: planner
description: Plans for the Executor.
---

# Planner

- Write short numbered plans.
- Name the output files.
- Say how to verify the result.
`

func samplePairs() []Pair {
	return []Pair{{
		Better: PairEntry{ID: "r/i0002/a/plan", Role: "planner", TaskID: "a", Iteration: 2, Content: "BETTER-MARK list outputs first", Reward: 1},
		Worse:  PairEntry{ID: "r/i0001/a/plan", Role: "planner", TaskID: "a", Iteration: 1, Content: "WORSE-MARK just do it", Reward: 0},
		Gap:    1,
	}}
}

func TestReflect(t *testing.T) {
	rewrite := strings.Replace(currentPlanner, "- Say how to verify the result.\n",
		"- Say how to verify the result.\n- List every output file the instruction names before any work starts, and check each exists before submitting.\n- Prefer commands whose output proves a requirement is met.\n", 1)
	fenced := "```markdown\n" + rewrite + "```"
	tests := []struct {
		name       string
		replies    []string
		pairs      []Pair
		minChanged int
		spent      bool
		role       string
		outcome    string
		changed    bool
		fellBack   bool
		calls      int
		wantErr    error
		errText    string
	}{
		{name: "no pairs makes no call", pairs: []Pair{}, outcome: OutcomeNoPairs, calls: 0},
		{name: "no change", replies: []string{`{"no_change":true,"content":"","reasoning":"nothing new"}`},
			outcome: OutcomeNoChange, calls: 1},
		{name: "updated", replies: []string{llmtest.JSONText(ReflectionAnswer{Content: rewrite, Reasoning: "outputs first"})},
			minChanged: 5, outcome: OutcomeUpdated, changed: true, calls: 1},
		{name: "a fenced rewrite is unwrapped", replies: []string{llmtest.JSONText(ReflectionAnswer{Content: fenced, Reasoning: "r"})},
			minChanged: 5, outcome: OutcomeUpdated, changed: true, calls: 1},
		{name: "too similar", replies: []string{llmtest.JSONText(ReflectionAnswer{Content: rewrite, Reasoning: "small"})},
			minChanged: 100, outcome: OutcomeTooSimilar, calls: 1},
		{name: "a two-word tweak is too similar", replies: []string{llmtest.JSONText(ReflectionAnswer{
			Content: strings.Replace(currentPlanner, "Say how to verify the result.", "Say how to check the result.", 1), Reasoning: "tweak"})},
			minChanged: 5, outcome: OutcomeTooSimilar, calls: 1},
		{name: "identical up to whitespace is too similar even without a threshold",
			replies: []string{llmtest.JSONText(ReflectionAnswer{Content: strings.ReplaceAll(currentPlanner, "\n\n", "\n\n\n"), Reasoning: "same"})},
			outcome: OutcomeTooSimilar, calls: 1},
		{name: "invalid twice", replies: []string{
			llmtest.JSONText(ReflectionAnswer{Content: "# Planner\n\nno front matter\n", Reasoning: "r"}),
			llmtest.JSONText(ReflectionAnswer{Content: "---\nname: planner\n---\n\nbody without description\n", Reasoning: "r"})},
			minChanged: 5, outcome: OutcomeInvalid, fellBack: true, calls: 2},
		{name: "a renamed skill is invalid", replies: []string{
			llmtest.JSONText(ReflectionAnswer{Content: strings.Replace(rewrite, "name: planner", "name: other", 1), Reasoning: "r"}),
			`not json`},
			minChanged: 5, outcome: OutcomeInvalid, fellBack: true, calls: 2},
		{name: "invalid once is retried", replies: []string{
			llmtest.JSONText(ReflectionAnswer{Content: "no front matter", Reasoning: "r"}),
			llmtest.JSONText(ReflectionAnswer{Content: rewrite, Reasoning: "r"})},
			minChanged: 5, outcome: OutcomeUpdated, changed: true, calls: 2},
		{name: "budget error propagates", spent: true, wantErr: llm.ErrBudgetExhausted},
		{name: "unknown role", role: "executor", errText: "only the planner and mediator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewScripted(tt.replies...)
			pairs := tt.pairs
			if pairs == nil {
				pairs = samplePairs()
			}
			role := conditions.Role(tt.role)
			if role == "" {
				role = conditions.RolePlanner
			}
			r := &Reflector{Client: budgetClient(fake, tt.spent), Caller: "coevo/reflector/planner", MinChangedWords: tt.minChanged, Seed: 2}
			got, err := r.Reflect(context.Background(), role, currentPlanner, pairs)
			if !fake.Check(t, err, llmtest.Want{Calls: tt.calls, Err: tt.wantErr, ErrText: tt.errText}) {
				return
			}
			if got.Outcome != tt.outcome || got.Changed != tt.changed || got.FellBack != tt.fellBack {
				t.Errorf("outcome %q changed %v fellBack %v, want %q %v %v (%+v)",
					got.Outcome, got.Changed, got.FellBack, tt.outcome, tt.changed, tt.fellBack, got)
			}
			if got.Changed {
				if got.Content != rewrite {
					t.Errorf("content = %q, want the rewrite", got.Content)
				}
				if _, err := skills.Parse([]byte(got.Content)); err != nil {
					t.Errorf("adopted content does not parse: %v", err)
				}
				if got.Similarity <= 0 || got.Similarity >= 1 || got.ChangedWords < tt.minChanged {
					t.Errorf("similarity %v, %d changed words; want in (0, 1) and at least %d", got.Similarity, got.ChangedWords, tt.minChanged)
				}
			}
		})
	}
}

func TestReflectPrompt(t *testing.T) {
	fake := llmtest.NewScripted(`{"no_change":true,"content":"","reasoning":"r"}`)
	r := &Reflector{Client: client(fake), Caller: "coevo/reflector/mediator/i0005", MinChangedWords: 5, Seed: 1}
	if _, err := r.Reflect(context.Background(), conditions.RoleMediator, currentPlanner, samplePairs()); err != nil {
		t.Fatal(err)
	}
	req := fake.Requests()[0]
	if req.Kind != KindReflection || req.Caller != "coevo/reflector/mediator/i0005" || req.Seed == 0 {
		t.Errorf("kind %q caller %q seed %d", req.Kind, req.Caller, req.Seed)
	}
	if !strings.Contains(req.Messages[0].Content, "protocol the Mediator follows") {
		t.Errorf("system prompt does not describe the mediator skill")
	}
	user := req.Messages[1].Content
	for _, want := range []string{"## Current mediator skill", "Write short numbered plans", "## Pair 1 of 1: task a, reward gap 1.000",
		"### Worse: entry r/i0001/a/plan", "WORSE-MARK", "### Better: entry r/i0002/a/plan", "BETTER-MARK"} {
		if !strings.Contains(user, want) {
			t.Errorf("reflection prompt lacks %q", want)
		}
	}
	if strings.Index(user, "WORSE-MARK") > strings.Index(user, "BETTER-MARK") {
		t.Errorf("the worse entry should come first")
	}
	// The offline Reflector reads the pairs one per line.
	if got := pairLine(samplePairs()[0]); strings.Count(got, "\n") != 0 || !strings.Contains(got, "WORSE-MARK") {
		t.Errorf("pairLine = %q, want the pair on one line", got)
	}
}

func TestReflectOffline(t *testing.T) {
	for _, role := range []conditions.Role{conditions.RolePlanner, conditions.RoleMediator} {
		t.Run(string(role), func(t *testing.T) {
			r := &Reflector{Client: client(llm.NewOffline(3)), Caller: "coevo/reflector", MinChangedWords: 5, Seed: 3}
			current := defaultSkill(t, string(role))
			got, err := r.Reflect(context.Background(), role, current, samplePairs())
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != OutcomeUpdated || got.FellBack {
				t.Fatalf("offline reflection: %+v", got)
			}
			s, err := skills.Parse([]byte(got.Content))
			if err != nil || s.Name != string(role) {
				t.Errorf("offline rewrite: parse error %v, name %v", err, s)
			}
		})
	}
}
