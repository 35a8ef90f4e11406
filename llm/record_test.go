package llm_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// callLog is a CallRecorder keeping records in memory.
type callLog struct {
	mu   sync.Mutex
	recs []llm.CallRecord
}

func (l *callLog) Record(r llm.CallRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
}

func TestClientRecordsEveryCall(t *testing.T) {
	type want struct {
		attempts, retries int
		failed, answered  bool
	}
	tests := []struct {
		name    string
		replies []llmtest.Reply
		spent   bool
		want    want
	}{
		{"an answer", []llmtest.Reply{llmtest.Text("hi")}, false, want{attempts: 1, answered: true}},
		{"an answer after retries", []llmtest.Reply{llmtest.ServerError(), llmtest.ServerError(), llmtest.Text("hi")}, false,
			want{attempts: 3, retries: 2, answered: true}},
		{"a refused key", []llmtest.Reply{llmtest.Status(http.StatusUnauthorized, "bad key")}, false, want{attempts: 1, failed: true}},
		{"retries run out", []llmtest.Reply{llmtest.ServerError(), llmtest.ServerError(), llmtest.ServerError()}, false,
			want{attempts: 3, retries: 2, failed: true}},
		{"a spent budget", nil, true, want{failed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(tt.replies...)
			log := &callLog{}
			ledger := llm.NewLedger(llm.Limits{MaxTokens: 1_000_000})
			if tt.spent {
				ledger = llm.NewLedger(llm.Limits{MaxTokens: 1})
				ledger.Charge("earlier", llm.Usage{InputTokens: 1, Calls: 1})
			}
			c := &llm.Client{Provider: serverProvider(t, srv.URL()), Ledger: ledger, Role: "planner",
				Model: "configured-model", Recorder: log}
			_, err := c.Complete(context.Background(), llm.Request{Caller: "planner/i0001-a", Messages: []llm.Message{{Role: llm.RoleUser, Content: "q"}}})
			if (err != nil) != tt.want.failed {
				t.Fatalf("err = %v, want failure %v", err, tt.want.failed)
			}
			if len(log.recs) != 1 {
				t.Fatalf("%d records, want 1", len(log.recs))
			}
			r := log.recs[0]
			if r.Caller != "planner/i0001-a" || r.Role != "planner" || r.Model != "configured-model" || r.Start.IsZero() ||
				len(r.Request.Messages) != 1 {
				t.Errorf("record %+v", r)
			}
			if r.Attempts != tt.want.attempts || r.Retries != tt.want.retries || (r.Err != nil) != tt.want.failed ||
				(r.Response != nil) != tt.want.answered {
				t.Errorf("attempts %d retries %d err %v response %v; want %+v", r.Attempts, r.Retries, r.Err, r.Response != nil, tt.want)
			}
			if tt.want.answered && r.Response.Usage.Calls != 1 {
				t.Errorf("usage %+v", r.Response.Usage)
			}
		})
	}
}

func TestStructuredRecordsUnusableAnswersAndTheFallback(t *testing.T) {
	type answer struct {
		Name string `json:"name"`
	}
	tests := []struct {
		name         string
		replies      []string
		wantUnusable []bool
		wantFallback []bool
	}{
		{"usable at once", []string{`{"name":"x"}`}, []bool{false}, []bool{false}},
		{"usable when asked again", []string{`not json`, `{"name":"x"}`}, []bool{true, false}, []bool{false, false}},
		{"falls back", []string{`not json`, `nor this`}, []bool{true, true}, []bool{false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &callLog{}
			c := &llm.Client{Provider: llmtest.NewScripted(tt.replies...), Role: "mediator", Recorder: log}
			_, fellBack, err := llm.Structured(context.Background(), c, llm.Request{Caller: "mediator/i0002-a"}, nil, answer{})
			if err != nil {
				t.Fatal(err)
			}
			if len(log.recs) != len(tt.replies) {
				t.Fatalf("%d records for %d calls", len(log.recs), len(tt.replies))
			}
			for i, r := range log.recs {
				if (r.Unusable != "") != tt.wantUnusable[i] || r.Fallback != tt.wantFallback[i] {
					t.Errorf("call %d: unusable %q fallback %v", i+1, r.Unusable, r.Fallback)
				}
			}
			if fellBack != tt.wantFallback[len(tt.wantFallback)-1] {
				t.Errorf("fellBack = %v", fellBack)
			}
		})
	}
}
