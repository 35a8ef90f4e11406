package mediator

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

func sampleDigest() TraceDigest {
	return TraceDigest{
		TaskID: "csv-merge", Iteration: 3, Status: "scored", Reward: ptr(0.25),
		TestsPassed: 1, TestsFailed: 3, TestsTotal: 4,
		FailedTests:     []string{"test_output_exists", "test_columns"},
		VerifierExcerpt: "VERIFIER-MARK assertion failed on column order",
		AgentExcerpt:    "AGENT-MARK wrote /app/out.csv",
		Errors:          []string{"ERROR-MARK python: command not found"},
		Plan:            "PLAN-MARK 1. read the input",
	}
}

func TestMediatorPromptShowsTraceAndProtocolOnly(t *testing.T) {
	protocol := defaultSkill(t, "mediator")
	fake := llmtest.NewScripted(llmtest.JSONText(ReportAnswer{AbstractionLevel: LevelTrace, Content: "ok", Reasoning: "r"}))
	m := &Mediator{Client: client(fake), Caller: "mediator/i0003-csv-merge", MaxChars: 1000, Seed: 7}
	if _, err := m.Report(context.Background(), protocol, sampleDigest()); err != nil {
		t.Fatal(err)
	}
	if fake.Count() != 1 {
		t.Fatalf("calls = %d, want 1", fake.Count())
	}
	req := fake.Requests()[0]
	if req.Caller != "mediator/i0003-csv-merge" || req.Kind != KindReport || req.Seed == 0 || req.Schema == nil {
		t.Errorf("request caller %q kind %q seed %d schema %v: want the mediator's caller, kind report, a seed and a schema",
			req.Caller, req.Kind, req.Seed, req.Schema != nil)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != llm.RoleSystem || req.Messages[1].Role != llm.RoleUser {
		t.Fatalf("messages = %+v, want system then user", req.Messages)
	}
	sys, user := req.Messages[0].Content, req.Messages[1].Content
	if !strings.Contains(sys, strings.TrimSpace(protocol)) || !strings.HasPrefix(sys, "You are the Mediator") {
		t.Errorf("system prompt is not the role header followed by the protocol:\n%s", sys)
	}
	for _, want := range []string{"csv-merge", "iteration 3", "reward: 0.250", "1 passed, 3 failed, 4 total",
		"test_columns", "ERROR-MARK", "VERIFIER-MARK", "AGENT-MARK", "PLAN-MARK", "at most 1000 characters",
		"## Outcome", "## Failed tests", "## Errors", "## Verifier output (excerpt)", "## Executor output (excerpt)"} {
		if !strings.Contains(user, want) {
			t.Errorf("user prompt lacks %q", want)
		}
	}
	all := llmtest.RequestText(req)
	for _, role := range []string{"executor", "planner"} {
		other := defaultSkill(t, role)
		desc := strings.SplitN(strings.SplitN(other, "description:", 2)[1], "\n", 2)[0]
		if strings.Contains(all, strings.TrimSpace(desc)) {
			t.Errorf("the Mediator's request shows the %s skill", role)
		}
	}
}

func TestMediatorPromptCapsTaskText(t *testing.T) {
	d := sampleDigest()
	d.AgentExcerpt = strings.Repeat("x", 50000)
	d.Errors = make([]string, 40)
	for i := range d.Errors {
		d.Errors[i] = "err" + strconv.Itoa(i) + " " + strings.Repeat("y", 2000)
	}
	fake := llmtest.NewScripted(llmtest.JSONText(ReportAnswer{AbstractionLevel: LevelTrace, Content: "ok", Reasoning: "r"}))
	m := &Mediator{Client: client(fake), Caller: "mediator"}
	if _, err := m.Report(context.Background(), "protocol", d); err != nil {
		t.Fatal(err)
	}
	user := fake.Requests()[0].Messages[1].Content
	if n := len(user); n > 3*maxExcerptChars+maxErrors*(maxErrorChars+10)+2000 {
		t.Errorf("user prompt is %d bytes; task text is not capped", n)
	}
	if !strings.Contains(user, "[... cut at 4000 characters]") || !strings.Contains(user, "... and 30 more") {
		t.Errorf("caps are not marked in the prompt")
	}
}

func TestMediatorReport(t *testing.T) {
	long := strings.Repeat("word ", 100)
	tests := []struct {
		name     string
		replies  []string
		maxChars int
		spent    bool
		want     Report
		calls    int
		wantErr  error
	}{
		{
			name:    "report",
			replies: []string{`{"abstraction_level":"reflection","content":"The output went to the wrong place.","withheld":false,"reasoning":"clear cause"}`},
			want: Report{Content: "The output went to the wrong place.", Reason: "clear cause", AbstractionLevel: "reflection",
				Chars: len("The output went to the wrong place.")},
			calls: 1,
		},
		{
			name:    "withheld keeps its reason",
			replies: []string{`{"abstraction_level":"","content":"","withheld":true,"reasoning":"environment noise"}`},
			want:    Report{Withheld: true, Reason: "environment noise"},
			calls:   1,
		},
		{
			name:     "cut to MaxChars",
			replies:  []string{llmtest.JSONText(ReportAnswer{AbstractionLevel: "trace", Content: long, Reasoning: "r"})},
			maxChars: 60,
			want:     Report{Reason: "r", AbstractionLevel: "trace", Chars: 60, Truncated: true},
			calls:    1,
		},
		{
			name:    "malformed twice falls back to withholding",
			replies: []string{"not json", `{"abstraction_level":"sideways","content":"x","withheld":false,"reasoning":""}`},
			want:    Report{Withheld: true, Reason: ReasonInvalidOutput, FellBack: true},
			calls:   2,
		},
		{
			name:    "malformed once is retried",
			replies: []string{"```json\n{\"withheld\":true}\n```", `{"abstraction_level":"pattern","content":"c","withheld":false,"reasoning":"r"}`},
			want:    Report{Content: "c", Reason: "r", AbstractionLevel: "pattern", Chars: 1},
			calls:   2,
		},
		{
			name:    "budget error propagates",
			spent:   true,
			calls:   0,
			wantErr: llm.ErrBudgetExhausted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewScripted(tt.replies...)
			m := &Mediator{Client: budgetClient(fake, tt.spent), Caller: "mediator", MaxChars: tt.maxChars, Seed: 1}
			got, err := m.Report(context.Background(), "protocol", sampleDigest())
			if !fake.Check(t, err, llmtest.Want{Calls: tt.calls, Err: tt.wantErr}) {
				return
			}
			if tt.want.Truncated {
				if !strings.HasSuffix(got.Content, "[... cut at 60 characters]") || utf8.RuneCountInString(got.Content) != 60 {
					t.Errorf("content %q is not cut to 60 characters with a note", got.Content)
				}
				got.Content = ""
			}
			if got != tt.want {
				t.Errorf("report = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestMediatorOffline(t *testing.T) {
	m := &Mediator{Client: client(llm.NewOffline(42)), Caller: "mediator", MaxChars: 300, Seed: 42}
	protocol := defaultSkill(t, "mediator")
	withheld, reported := 0, 0
	for i := range 24 {
		d := sampleDigest()
		d.TaskID = "task-" + strconv.Itoa(i)
		a, err := m.Report(context.Background(), protocol, d)
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.Report(context.Background(), protocol, d)
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Errorf("offline report for %s is not deterministic: %+v vs %+v", d.TaskID, a, b)
		}
		if a.FellBack {
			t.Errorf("offline report fell back: %+v", a)
		}
		if a.Chars > 300 {
			t.Errorf("offline report has %d characters, over MaxChars", a.Chars)
		}
		if a.Withheld {
			withheld++
			if a.Reason == "" {
				t.Errorf("withheld report without reason")
			}
		} else {
			reported++
		}
	}
	if withheld == 0 || reported == 0 {
		t.Errorf("offline Mediator withheld %d and reported %d of 24; want some of each", withheld, reported)
	}
}
