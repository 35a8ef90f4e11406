package mediator

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

func sampleBatch() []Proposal {
	return []Proposal{
		{ID: "p1", TaskID: "task-a", Iteration: 1, NewContent: "- NEW-ONE check outputs", Reasoning: "outputs were missing",
			DelayedReward: ptr(1)},
		{ID: "p2", TaskID: "task-b", Iteration: 2, OldContent: "OLD-TWO", NewContent: "- NEW-TWO read errors", Reasoning: "loops"},
	}
}

func TestAdvisorPrompt(t *testing.T) {
	fake := llmtest.NewScripted(`{"approve":true,"feedback":"good"}`)
	a := &Advisor{Client: client(fake), Caller: "coevo/advisor/b001", Seed: 3}
	skill := defaultSkill(t, "executor")
	if _, err := a.Review(context.Background(), "b001", skill, sampleBatch()); err != nil {
		t.Fatal(err)
	}
	req := fake.Requests()[0]
	if req.Kind != KindAdvice || req.Caller != "coevo/advisor/b001" || req.Seed == 0 {
		t.Errorf("kind %q caller %q seed %d", req.Kind, req.Caller, req.Seed)
	}
	user := req.Messages[1].Content
	for _, want := range []string{"## Current executor skill", "## Proposal 1 of 2", "## Proposal 2 of 2",
		"id: p1", "delayed reward (the next attempt at the task): 1.000", "id: p2", "later attempts at task task-b: none yet",
		"edit: append", "OLD-TWO",
		"NEW-ONE", "NEW-TWO", "outputs were missing", strings.TrimSpace(strings.Split(skill, "\n")[1])} {
		if !strings.Contains(user, want) {
			t.Errorf("advisor prompt lacks %q", want)
		}
	}
}

// Each proposal reaches the Advisor with the feedback it was drawn from and
// the rewards its task earned since, the oldest ones left out past the cap.
func TestAdvisorSeesEachProposalsEvidence(t *testing.T) {
	var many []TrialReward
	for it := 3; it < 3+maxLaterRewards+2; it++ {
		many = append(many, TrialReward{Iteration: it, Reward: float64(it) / 100})
	}
	batch := []Proposal{
		{ID: "p1", TaskID: "task-a", Iteration: 1, NewContent: "- check outputs", Reasoning: "r",
			DelayedReward: ptr(0.25), Digest: "DIGEST-ONE the output file was never written",
			DigestKind: "mediator_report", LaterRewards: []TrialReward{{2, 0.25}, {3, 0.75}}},
		{ID: "p2", TaskID: "task-b", Iteration: 2, NewContent: "- read errors", Reasoning: "r",
			Digest: "DIGEST-TWO " + strings.Repeat("x", 2*maxDigestChars) + " DIGEST-TAIL", DigestKind: "trace_summary",
			LaterRewards: many},
		{ID: "p3", TaskID: "task-c", Iteration: 4, NewContent: "- plan first", Reasoning: "r",
			Outcome: Outcome{Status: "completed", Reward: ptr(0.5), TestsPassed: 1, TestsFailed: 1, TestsTotal: 2}},
	}
	fake := llmtest.NewScripted(`{"approve":false,"feedback":"not supported"}`)
	a := &Advisor{Client: client(fake), Caller: "coevo/advisor/b001"}
	if _, err := a.Review(context.Background(), "b001", "skill", batch); err != nil {
		t.Fatal(err)
	}
	user := fake.Requests()[0].Messages[1].Content
	section := func(i int) string {
		start := strings.Index(user, fmt.Sprintf("## Proposal %d of 3", i))
		end := strings.Index(user, fmt.Sprintf("## Proposal %d of 3", i+1))
		if end < 0 {
			end = len(user) // the last proposal ends the prompt
		}
		if start < 0 || end < start {
			t.Fatalf("no section for proposal %d in:\n%s", i, user)
		}
		return user[start:end]
	}
	one, two, three := section(1), section(2), section(3)
	for _, want := range []string{"feedback (mediator_report) it was proposed from", "DIGEST-ONE the output file was never written",
		"rewards of task task-a since: iteration 2: 0.250, iteration 3: 0.750"} {
		if !strings.Contains(one, want) {
			t.Errorf("proposal 1 lacks %q:\n%s", want, one)
		}
	}
	last := many[len(many)-1]
	for _, want := range []string{"feedback (trace_summary) it was proposed from", "DIGEST-TWO",
		"(2 earlier not shown), iteration 5: 0.050", fmt.Sprintf("iteration %d: %.3f", last.Iteration, last.Reward)} {
		if !strings.Contains(two, want) {
			t.Errorf("proposal 2 lacks %q:\n%s", want, two)
		}
	}
	if strings.Contains(two, "DIGEST-TAIL") || strings.Contains(two, "iteration 4: 0.040") {
		t.Errorf("proposal 2 is not capped:\n%s", two)
	}
	if !strings.Contains(three, "later attempts at task task-c: none yet") || strings.Contains(three, "proposed from") ||
		strings.Contains(three, "pending") ||
		!strings.Contains(three, "outcome of iteration 4: status: completed; reward: 0.500; tests: 1 passed, 1 failed, 2 total") {
		t.Errorf("proposal 3 without evidence is shown as:\n%s", three)
	}
	if strings.Contains(one, "DIGEST-TWO") || strings.Contains(two, "DIGEST-ONE") {
		t.Error("a digest is shown under another proposal")
	}
}

func TestAdvisorReview(t *testing.T) {
	tests := []struct {
		name    string
		replies []string
		batch   []Proposal
		spent   bool
		want    Advice
		calls   int
		wantErr error
		errText string
	}{
		{name: "approve", replies: []string{`{"approve":true,"feedback":"general and concrete"}`},
			want: Advice{Approve: true, Feedback: "general and concrete"}, calls: 1},
		{name: "reject", replies: []string{`{"approve":false,"feedback":"too specific"}`},
			want: Advice{Feedback: "too specific"}, calls: 1},
		{name: "invalid twice rejects", replies: []string{`{"approve":true}`, `nonsense`},
			want: Advice{Feedback: FeedbackInvalidOutput, FellBack: true}, calls: 2},
		{name: "budget error propagates", spent: true, wantErr: llm.ErrBudgetExhausted},
		{name: "empty batch", batch: []Proposal{}, errText: "no proposals"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewScripted(tt.replies...)
			batch := tt.batch
			if batch == nil {
				batch = sampleBatch()
			}
			a := &Advisor{Client: budgetClient(fake, tt.spent), Caller: "coevo/advisor"}
			got, err := a.Review(context.Background(), "b002", "skill", batch)
			if !fake.Check(t, err, llmtest.Want{Calls: tt.calls, Err: tt.wantErr, ErrText: tt.errText}) {
				return
			}
			if got != tt.want {
				t.Errorf("advice = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAdvisorOfflineDeterministic(t *testing.T) {
	a := &Advisor{Client: client(llm.NewOffline(5)), Caller: "coevo/advisor", Seed: 5}
	approved := 0
	for _, id := range []string{"b001", "b002", "b003", "b004", "b005", "b006"} {
		x, err := a.Review(context.Background(), id, "skill", sampleBatch())
		if err != nil {
			t.Fatal(err)
		}
		y, _ := a.Review(context.Background(), id, "skill", sampleBatch())
		if x != y || x.FellBack || x.Feedback == "" {
			t.Errorf("batch %s: %+v then %+v; want equal, non-fallback advice with feedback", id, x, y)
		}
		if x.Approve {
			approved++
		}
	}
	if approved == 0 {
		t.Errorf("the offline Advisor approved none of 6 batches")
	}
}

func TestProposalEditText(t *testing.T) {
	tests := []struct {
		name string
		pr   Proposal
		max  int
		want string
	}{
		{"an append", Proposal{NewContent: "- new\n", Reasoning: "because\n it helps"}, 100,
			"edit: append\nnew content:\n```\n- new\n```\nreasoning: because it helps"},
		{"a replacement", Proposal{OldContent: "old", NewContent: "new", Reasoning: "r"}, 100,
			"replaces:\n```\nold\n```\nnew content:\n```\nnew\n```\nreasoning: r"},
		{"blank old content appends", Proposal{OldContent: " \n", NewContent: "new", Reasoning: "r"}, 100,
			"edit: append\nnew content:\n```\nnew\n```\nreasoning: r"},
		{"each part is capped", Proposal{OldContent: strings.Repeat("o", 40), NewContent: strings.Repeat("n", 40), Reasoning: strings.Repeat("r", 40)}, 30,
			"replaces:\n```\nooo\n[... cut at 30 characters]\n```\nnew content:\n```\nnnn\n[... cut at 30 characters]\n```\n" +
				"reasoning: rrr\n[... cut at 30 characters]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.pr.EditText(tt.max); got != tt.want {
				t.Errorf("EditText(%d) = %q; want %q", tt.max, got, tt.want)
			}
		})
	}
}
