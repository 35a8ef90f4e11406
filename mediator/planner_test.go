package mediator

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
	"github.com/mediated-coevo/harness/skills"
)

const plannerTestExecutorSkill = `---
name: executor
description: How the Executor works in the container.
---

# Executor

- Read the instruction.
- Run your code before submitting.
`

func TestPlannerPlanPrompt(t *testing.T) {
	var manyNotes []string
	for i := 1; i <= plannerMaxNotes+5; i++ {
		manyNotes = append(manyNotes, fmt.Sprintf("NOTE-%02d-END", i))
	}
	tests := []struct {
		name       string
		in         PlanInput
		maxContext int
		want       []string
		absent     []string
	}{
		{
			name: "prior context and notes under their headers",
			in: PlanInput{TaskID: "csv-merge", Iteration: 4, Instruction: "INSTRUCTION-MARK merge the files",
				ExecutorSkill: plannerTestExecutorSkill, PlannerSkill: "PLANNER-SKILL-MARK",
				PriorContext: "REPORT-MARK the output went to /tmp", PriorContextHeader: "The Mediator's report on your last attempt at this task",
				Notes: []string{"NOTE-MARK try the oracle first", "  "}},
			want: []string{"## Task instruction\n\nINSTRUCTION-MARK",
				"## Executor skill", "- Run your code before submitting.",
				"## The Mediator's report on your last attempt at this task\n\nREPORT-MARK",
				"## Notes from the researchers\n\n- NOTE-MARK try the oracle first\n"},
			absent: []string{"## Prior context", "(none)", "# Plan for task"},
		},
		{
			name: "empty prior context leaves the section out",
			in: PlanInput{TaskID: "t", Instruction: "do it", ExecutorSkill: plannerTestExecutorSkill,
				PriorContext: " \n ", PriorContextHeader: "The Mediator's report on your last attempt"},
			want:   []string{"## Task instruction", "## Executor skill", "## Your answer"},
			absent: []string{"Mediator's report", "Prior context", "## Notes", "(none)"},
		},
		{
			name:   "default header",
			in:     PlanInput{TaskID: "t", Instruction: "do it", PriorContext: "shared note text"},
			want:   []string{"## Prior context\n\nshared note text"},
			absent: []string{"## Notes"},
		},
		{
			name:   "the most recent notes are shown",
			in:     PlanInput{TaskID: "t", Instruction: "do it", Notes: manyNotes},
			want:   []string{"- (5 earlier notes not shown)\n- NOTE-06-END\n", "- NOTE-25-END\n"},
			absent: []string{"NOTE-01-END", "NOTE-05-END", "more"},
		},
		{
			name:       "prior context is capped",
			in:         PlanInput{TaskID: "t", Instruction: "do it", PriorContext: strings.Repeat("z", 5000)},
			maxContext: 100,
			want:       []string{"[... cut at 100 characters]"},
			absent:     []string{strings.Repeat("z", 101)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewScripted(`{"plan":"1. go"}`)
			p := &Planner{Client: budgetClient(fake, false), Caller: "planner/i0004-csv-merge", Seed: 11, MaxContextChars: tt.maxContext}
			if _, _, err := p.Plan(context.Background(), tt.in); err != nil {
				t.Fatal(err)
			}
			req := fake.Requests()[0]
			if req.Kind != KindPlan || req.Caller != "planner/i0004-csv-merge" || req.Seed == 0 || req.Schema == nil {
				t.Errorf("kind %q caller %q seed %d schema %v", req.Kind, req.Caller, req.Seed, req.Schema != nil)
			}
			sys, user := req.Messages[0].Content, req.Messages[1].Content
			if !strings.HasPrefix(sys, "You are the Planner") || !strings.Contains(sys, tt.in.PlannerSkill) {
				t.Errorf("system prompt is not the header plus the planner skill:\n%s", sys)
			}
			for _, w := range tt.want {
				if !strings.Contains(user, w) {
					t.Errorf("prompt lacks %q:\n%s", w, user)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(user, a) {
					t.Errorf("prompt contains %q:\n%s", a, user)
				}
			}
		})
	}
}

func TestPlannerPlan(t *testing.T) {
	tests := []struct {
		name     string
		replies  []string
		spent    bool
		want     string
		fellBack bool
		calls    int
		wantErr  error
	}{
		{name: "plan", replies: []string{`{"plan":"1. list files\n2. write out.csv"}`}, want: "1. list files\n2. write out.csv", calls: 1},
		{name: "empty plan twice falls back", replies: []string{`{"plan":" "}`, `nope`}, want: FallbackPlan, fellBack: true, calls: 2},
		{name: "budget error propagates", spent: true, wantErr: llm.ErrBudgetExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewScripted(tt.replies...)
			p := &Planner{Client: budgetClient(fake, tt.spent), Caller: "planner"}
			got, fellBack, err := p.Plan(context.Background(), PlanInput{TaskID: "t", Instruction: "do it"})
			if !fake.Check(t, err, llmtest.Want{Calls: tt.calls, Err: tt.wantErr}) {
				return
			}
			if got != tt.want || fellBack != tt.fellBack {
				t.Errorf("plan %q fellBack %v, want %q %v", got, fellBack, tt.want, tt.fellBack)
			}
		})
	}
	if n := strings.Count(FallbackPlan, "\n") + 1; n != 3 {
		t.Errorf("the fallback plan has %d steps, want 3", n)
	}
}

func TestPlannerPlanOffline(t *testing.T) {
	p := &Planner{Client: budgetClient(llm.NewOffline(1), false), Caller: "planner", Seed: 1}
	in := PlanInput{TaskID: "hello-world", Iteration: 1, Instruction: "Write /app/hello.txt",
		ExecutorSkill: defaultSkill(t, "executor"), PlannerSkill: defaultSkill(t, "planner")}
	a, fa, err := p.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := p.Plan(context.Background(), in)
	if fa || a != b || !strings.Contains(a, "hello-world") {
		t.Errorf("offline plan %q (fellBack %v), again %q: want the same non-fallback plan naming the task", a, fa, b)
	}
}

func TestPlannerPropose(t *testing.T) {
	base := ProposalInput{TaskID: "t", Iteration: 2, Instruction: "do it", ExecutorSkill: plannerTestExecutorSkill,
		PlannerSkill: "planner skill", Feedback: "FEEDBACK-MARK the output was missing", FeedbackKind: "mediator_report"}
	appendOne := ProposalAnswer{Propose: true, NewContent: "- Create every output file.", Reasoning: "outputs missing"}
	tests := []struct {
		name     string
		in       func(ProposalInput) ProposalInput
		replies  []string
		spent    bool
		want     ProposalAnswer
		fellBack bool
		calls    int
		wantErr  error
	}{
		{name: "no feedback makes no call", in: func(in ProposalInput) ProposalInput { in.Feedback = "  "; return in },
			calls: 0},
		{name: "append", replies: []string{llmtest.JSONText(appendOne)}, want: appendOne, calls: 1},
		{name: "replace", replies: []string{`{"propose":true,"old_content":"- Read the instruction.","new_content":"- Read the instruction twice.","reasoning":"r"}`},
			want:  ProposalAnswer{Propose: true, OldContent: "- Read the instruction.", NewContent: "- Read the instruction twice.", Reasoning: "r"},
			calls: 1},
		{name: "nothing to propose", replies: []string{`{"propose":false,"old_content":"","new_content":"","reasoning":"nothing general"}`},
			want: ProposalAnswer{Reasoning: "nothing general"}, calls: 1},
		{name: "old content not in the skill, twice", replies: []string{
			`{"propose":true,"old_content":"- Not there.","new_content":"- x","reasoning":"r"}`,
			`{"propose":true,"old_content":"- Also not there.","new_content":"- x","reasoning":"r"}`},
			want: ProposalAnswer{Reasoning: "proposal output invalid"}, fellBack: true, calls: 2},
		{name: "an edit that breaks the skill, twice", replies: []string{
			`{"propose":true,"old_content":"name: executor","new_content":"title: executor","reasoning":"r"}`,
			`{"propose":true,"old_content":"---\nname: executor","new_content":"# Executor","reasoning":"r"}`},
			want: ProposalAnswer{Reasoning: "proposal output invalid"}, fellBack: true, calls: 2},
		{name: "invalid once is retried", replies: []string{`{"propose":true}`, llmtest.JSONText(appendOne)},
			want: appendOne, calls: 2},
		{name: "budget error propagates", spent: true, wantErr: llm.ErrBudgetExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base
			if tt.in != nil {
				in = tt.in(in)
			}
			fake := llmtest.NewScripted(tt.replies...)
			p := &Planner{Client: budgetClient(fake, tt.spent), Caller: "planner", Seed: 5}
			got, fellBack, err := p.Propose(context.Background(), in)
			if !fake.Check(t, err, llmtest.Want{Calls: tt.calls, Err: tt.wantErr}) {
				return
			}
			if got != tt.want || fellBack != tt.fellBack {
				t.Errorf("proposal %+v fellBack %v, want %+v %v", got, fellBack, tt.want, tt.fellBack)
			}
		})
	}
}

func TestPlannerProposePrompt(t *testing.T) {
	tests := []struct {
		name       string
		kind       string
		rejections []string
		want       []string
		absent     []string
	}{
		{name: "mediator report with rejections", kind: "mediator_report", rejections: []string{"REJECT-MARK batch b001"},
			want:   []string{"## Feedback: the Mediator's report on the last attempt\n\nFEEDBACK-MARK", "## Recently rejected batches\n\n- REJECT-MARK batch b001"},
			absent: []string{"trace summary"}},
		{name: "trace summary without rejections", kind: "trace_summary",
			want:   []string{"## Feedback: a summary of the last attempt's trace\n\nFEEDBACK-MARK"},
			absent: []string{"## Recently rejected batches", "(none)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewScripted(`{"propose":false,"old_content":"","new_content":"","reasoning":"r"}`)
			p := &Planner{Client: budgetClient(fake, false), Caller: "planner/i0002-t"}
			_, _, err := p.Propose(context.Background(), ProposalInput{TaskID: "t", Iteration: 2, Instruction: "INSTR",
				ExecutorSkill: plannerTestExecutorSkill, PlannerSkill: "PLANNER-SKILL-MARK", Feedback: "FEEDBACK-MARK",
				FeedbackKind: tt.kind, RecentRejections: tt.rejections})
			if err != nil {
				t.Fatal(err)
			}
			req := fake.Requests()[0]
			if req.Kind != KindProposal || req.Caller != "planner/i0002-t" {
				t.Errorf("kind %q caller %q", req.Kind, req.Caller)
			}
			if !strings.Contains(req.Messages[0].Content, "PLANNER-SKILL-MARK") {
				t.Errorf("system prompt lacks the planner skill")
			}
			user := req.Messages[1].Content
			for _, w := range append(tt.want, "## Task instruction\n\nINSTR", "## Current executor skill", "- Run your code before submitting.") {
				if !strings.Contains(user, w) {
					t.Errorf("prompt lacks %q:\n%s", w, user)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(user, a) {
					t.Errorf("prompt contains %q", a)
				}
			}
		})
	}
}

func TestPlannerProposeOffline(t *testing.T) {
	skill := defaultSkill(t, "executor")
	p := &Planner{Client: budgetClient(llm.NewOffline(4), false), Caller: "planner", Seed: 4}
	ans, fellBack, err := p.Propose(context.Background(), ProposalInput{TaskID: "t", Iteration: 1, Instruction: "do it",
		ExecutorSkill: skill, Feedback: "the output file was missing", FeedbackKind: "mediator_report"})
	if err != nil || fellBack || !ans.Propose {
		t.Fatalf("offline proposal %+v fellBack %v err %v; want a proposal", ans, fellBack, err)
	}
	next, err := ApplyProposal(skill, ans.OldContent, ans.NewContent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := skills.Parse([]byte(next)); err != nil || !strings.Contains(next, ans.NewContent) {
		t.Errorf("applied offline proposal: parse error %v", err)
	}
}

func TestPlannerApplyProposal(t *testing.T) {
	tests := []struct {
		name     string
		skill    string
		old, new string
		want     string
		errText  string
	}{
		{name: "append adds a line", skill: "a\nb\n", new: "- c", want: "a\nb\n- c\n"},
		{name: "append to text without a final newline", skill: "a", new: "c\n\n", want: "a\nc\n"},
		{name: "append to an empty skill", skill: "", new: "c", want: "c\n"},
		{name: "replace the first occurrence", skill: "x y x", old: "x", new: "z", want: "z y x"},
		{name: "replace multi-line", skill: "one\ntwo\nthree\n", old: "two\nthree", new: "2\n3", want: "one\n2\n3\n"},
		{name: "old with stray blank space", skill: "- keep\n- old line\n", old: "\n- old line  \n\n", new: " - new line\n",
			want: "- keep\n- new line\n"},
		{name: "delete", skill: "a\nb\n", old: "b\n", new: "", want: "a\n"},
		{name: "old not found", skill: "a", old: "zzz", new: "b", errText: "is not in the skill"},
		{name: "nothing at all", skill: "a", errText: "neither old nor new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ApplyProposal(tt.skill, tt.old, tt.new)
			if tt.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want one saying %q", err, tt.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func plannerTestBatch() []Proposal {
	r := 1.0
	return []Proposal{
		{ID: "row/i0001/a/proposal", TaskID: "a", Iteration: 1, NewContent: "- Create every output file the instruction names.",
			Reasoning: "outputs missing", DelayedReward: &r},
		{ID: "row/i0001/b/proposal", TaskID: "b", Iteration: 1, OldContent: "- Read the instruction.",
			NewContent: "- Read the instruction and list the files it names.", Reasoning: "inputs skipped"},
	}
}

func TestPlannerDraft(t *testing.T) {
	good := strings.Replace(plannerTestExecutorSkill, "- Read the instruction.\n",
		"- Read the instruction and list the files it names.\n- Create every output file the instruction names.\n", 1)
	tests := []struct {
		name     string
		replies  []string
		batch    []Proposal
		spent    bool
		want     string
		fellBack bool
		calls    int
		wantErr  error
		errText  string
	}{
		{name: "valid draft", replies: []string{llmtest.JSONText(DraftAnswer{Content: good})}, want: good, calls: 1},
		{name: "fenced draft is unwrapped", replies: []string{llmtest.JSONText(DraftAnswer{Content: "```markdown\n" + good + "```\n"})},
			want: good, calls: 1},
		{name: "invalid twice keeps the current skill", replies: []string{
			llmtest.JSONText(DraftAnswer{Content: "# Executor\n\n- no front matter\n"}),
			llmtest.JSONText(DraftAnswer{Content: strings.Replace(good, "name: executor", "name: renamed", 1)})},
			want: plannerTestExecutorSkill, fellBack: true, calls: 2},
		{name: "invalid once is retried", replies: []string{`{"content":""}`, llmtest.JSONText(DraftAnswer{Content: good})},
			want: good, calls: 2},
		{name: "budget error propagates", spent: true, wantErr: llm.ErrBudgetExhausted},
		{name: "empty batch", batch: []Proposal{}, errText: "no proposals"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewScripted(tt.replies...)
			p := &Planner{Client: budgetClient(fake, tt.spent), Caller: "coevo/draft/b001", Seed: 8}
			batch := tt.batch
			if batch == nil {
				batch = plannerTestBatch()
			}
			got, fellBack, err := p.Draft(context.Background(), plannerTestExecutorSkill, batch, "ADVICE-MARK merge both")
			if !fake.Check(t, err, llmtest.Want{Calls: tt.calls, Err: tt.wantErr, ErrText: tt.errText}) {
				return
			}
			if got != tt.want || fellBack != tt.fellBack {
				t.Errorf("draft %q fellBack %v, want %q %v", got, fellBack, tt.want, tt.fellBack)
			}
			req := fake.Requests()[0]
			user := req.Messages[1].Content
			for _, w := range []string{"## Current executor skill", "## Approved proposal 1 of 2", "## Approved proposal 2 of 2",
				"delayed reward (the next attempt at the task): 1.000", "later attempts at task b: none yet",
				"## Advisor's feedback\n\nADVICE-MARK"} {
				if !strings.Contains(user, w) {
					t.Errorf("draft prompt lacks %q", w)
				}
			}
			if req.Kind != KindSkillDraft || req.Caller != "coevo/draft/b001" || req.Seed == 0 {
				t.Errorf("kind %q caller %q seed %d", req.Kind, req.Caller, req.Seed)
			}
		})
	}
}

func TestPlannerDraftOffline(t *testing.T) {
	current := defaultSkill(t, "executor")
	p := &Planner{Client: budgetClient(llm.NewOffline(2), false), Caller: "coevo/draft", Seed: 2}
	got, fellBack, err := p.Draft(context.Background(), current, plannerTestBatch(), "approved")
	if err != nil || fellBack {
		t.Fatalf("offline draft: fellBack %v err %v", fellBack, err)
	}
	s, err := skills.Parse([]byte(got))
	if err != nil {
		t.Fatalf("offline draft does not parse: %v", err)
	}
	if s.Name != "executor" || !strings.Contains(got, "- Create every output file the instruction names.") || got == current {
		t.Errorf("offline draft does not carry the approved edit:\n%s", got)
	}
}
