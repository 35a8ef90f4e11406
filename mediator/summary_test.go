package mediator

import (
	"context"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

func TestCompactorSummariseTrace(t *testing.T) {
	text := strings.Repeat("TRACE-MARK step failed\n", 100)
	tests := []struct {
		name     string
		replies  []string
		spent    bool
		want     string
		fellBack bool
		calls    int
		wantErr  error
	}{
		{name: "summary", replies: []string{`{"summary":"it failed"}`}, want: "it failed", calls: 1},
		{name: "empty twice falls back", replies: []string{`{"summary":" "}`, "nope"}, want: "FALLBACK", fellBack: true, calls: 2},
		{name: "budget error propagates", spent: true, wantErr: llm.ErrBudgetExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewScripted(tt.replies...)
			c := &Compactor{Client: budgetClient(fake, tt.spent), Caller: "compactor/i0002-t"}
			got, fellBack, err := c.SummariseTrace(context.Background(), 99, text, "FALLBACK")
			if !fake.Check(t, err, llmtest.Want{Calls: tt.calls, Err: tt.wantErr}) {
				return
			}
			if got != tt.want || fellBack != tt.fellBack {
				t.Errorf("summary %q fellBack %v, want %q %v", got, fellBack, tt.want, tt.fellBack)
			}
			req := fake.Requests()[0]
			if req.Kind != KindTraceSummary || req.Caller != "compactor/i0002-t" || req.Seed != 99 || req.Schema == nil {
				t.Errorf("kind %q caller %q seed %d schema %v", req.Kind, req.Caller, req.Seed, req.Schema != nil)
			}
			if !strings.Contains(req.Messages[1].Content, "TRACE-MARK") {
				t.Errorf("the prompt lacks the trace")
			}
		})
	}
}

func TestCompactorOffline(t *testing.T) {
	text := strings.Repeat("TRACE-MARK step failed\n", 100)
	c := &Compactor{Client: client(llm.NewOffline(1)), Caller: "compactor"}
	got, fellBack, err := c.SummariseTrace(context.Background(), 1, text, "FALLBACK")
	if err != nil || fellBack {
		t.Fatalf("offline summary: fellBack %v err %v", fellBack, err)
	}
	if got != digest(text) || len(got) >= len(text) {
		t.Errorf("offline summary %q is not the digest of the trace", got)
	}
}
