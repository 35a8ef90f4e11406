package openaiapi_test

import (
	"context"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// An answer without usage is charged at an estimate of a quarter of its
// characters, priced, and marked as estimated.
func TestAnswerWithoutUsageIsEstimated(t *testing.T) {
	srv := llmtest.NewServer(t)
	answer := strings.Repeat("a", 400)
	srv.Push(llmtest.Text(answer).WithoutUsage())
	m := testModel(srv.URL())
	in, out := 1000.0, 4000.0
	m.PriceInputPerMTok, m.PriceOutputPerMTok = &in, &out
	ledger := llm.NewLedger(llm.Limits{})
	c := &llm.Client{Provider: newProvider(t, m, nil), Ledger: ledger, Role: "planner"}
	prompt := strings.Repeat("p", 800)
	resp, err := c.Complete(context.Background(), llm.Request{Caller: "planner", Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}})
	if err != nil {
		t.Fatal(err)
	}
	u := resp.Usage
	// 800 characters of content plus the 4 of the role name; 400 of answer.
	if u.InputTokens != 201 || u.OutputTokens != 100 || u.EstimatedTokens != 301 {
		t.Errorf("usage %+v, want 201 input and 100 output tokens, all estimated", u)
	}
	if want := (201*in + 100*out) / 1e6; math.Abs(u.CostUSD-want) > 1e-12 || !u.CostKnown {
		t.Errorf("cost %v (known %v), want %v", u.CostUSD, u.CostKnown, want)
	}
	if got := ledger.Total(); got.EstimatedTokens != 301 || got.Tokens() != 301 {
		t.Errorf("ledger total %+v, want the 301 estimated tokens", got)
	}
}

// A reported usage is taken as is and not marked.
func TestReportedUsageIsNotEstimated(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(llmtest.Text("ok").WithUsage(10, 5))
	c := &llm.Client{Provider: newProvider(t, testModel(srv.URL()), nil), Ledger: llm.NewLedger(llm.Limits{}), Role: "planner"}
	resp, err := c.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.InputTokens != 10 || resp.Usage.OutputTokens != 5 || resp.Usage.EstimatedTokens != 0 {
		t.Errorf("usage %+v", resp.Usage)
	}
}

// Under ChargeSent every attempt the endpoint received and reported nothing
// for is charged its input at the estimate; without it, only reports count.
// Either way the call, its retries and its failure are counted.
func TestFailedAttemptsAreChargedWhatWasSent(t *testing.T) {
	prompt := strings.Repeat("x", 396) // 400 characters with the role: 100 tokens
	tests := []struct {
		name       string
		replies    []llmtest.Reply
		chargeSent bool
		wantErr    bool
		want       llm.Usage
	}{
		{"retries exhausted, charged as sent", []llmtest.Reply{llmtest.ServerError(), llmtest.ServerError(), llmtest.ServerError()}, true, true,
			llm.Usage{InputTokens: 300, EstimatedTokens: 300, Calls: 1, Failures: 1, Retries: 2}},
		{"retries exhausted, reported only", []llmtest.Reply{llmtest.ServerError(), llmtest.ServerError(), llmtest.ServerError()}, false, true,
			llm.Usage{Calls: 1, Failures: 1, Retries: 2}},
		{"401 charged as sent", []llmtest.Reply{llmtest.Status(401, "invalid api key")}, true, true,
			llm.Usage{InputTokens: 100, EstimatedTokens: 100, Calls: 1, Failures: 1}},
		{"connection reset after the request was read, charged as sent",
			[]llmtest.Reply{llmtest.ConnectionReset(), llmtest.ConnectionReset(), llmtest.ConnectionReset()}, true, true,
			llm.Usage{InputTokens: 300, EstimatedTokens: 300, Calls: 1, Failures: 1, Retries: 2}},
		{"connection reset then answered", []llmtest.Reply{llmtest.ConnectionReset(), llmtest.Text("ok").WithUsage(10, 5)}, true, false,
			llm.Usage{InputTokens: 110, OutputTokens: 5, EstimatedTokens: 100, Calls: 1, Retries: 1}},
		{"connection reset, reported only", []llmtest.Reply{llmtest.ConnectionReset(), llmtest.Text("ok").WithUsage(10, 5)}, false, false,
			llm.Usage{InputTokens: 10, OutputTokens: 5, Calls: 1, Retries: 1}},
		{"malformed then answered", []llmtest.Reply{llmtest.Malformed(), llmtest.Text("ok").WithUsage(10, 5)}, true, false,
			llm.Usage{InputTokens: 110, OutputTokens: 5, EstimatedTokens: 100, Calls: 1, Retries: 1}},
		{"malformed then answered, reported only", []llmtest.Reply{llmtest.Malformed(), llmtest.Text("ok").WithUsage(10, 5)}, false, false,
			llm.Usage{InputTokens: 10, OutputTokens: 5, Calls: 1, Retries: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(tt.replies...)
			ledger := llm.NewLedger(llm.Limits{ChargeSent: tt.chargeSent})
			c := &llm.Client{Provider: newProvider(t, testModel(srv.URL()), &sleepLog{}), Ledger: ledger.Child("row"), Role: "planner"}
			_, err := c.Complete(context.Background(), llm.Request{Caller: "planner/t1", Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			got := ledger.ByCaller()["row/planner/t1"]
			got.CostKnown = false
			if got != tt.want {
				t.Errorf("charged %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A connection that never carried the request (nothing listens) is
// retried and counted, but charged no tokens even under ChargeSent: the
// endpoint consumed nothing.
func TestRefusedConnectionIsChargedNothing(t *testing.T) {
	dead := httptest.NewServer(nil)
	url := dead.URL + "/v1"
	dead.Close()
	ledger := llm.NewLedger(llm.Limits{ChargeSent: true})
	c := &llm.Client{Provider: newProvider(t, testModel(url), &sleepLog{}), Ledger: ledger, Role: "planner"}
	_, err := c.Complete(context.Background(), llm.Request{Caller: "planner", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}})
	if err == nil || !strings.Contains(err.Error(), "connection") {
		t.Fatalf("err = %v, want a connection failure", err)
	}
	want := llm.Usage{Calls: 1, Failures: 1, Retries: 2}
	if got := ledger.Total(); got != want {
		t.Errorf("charged %+v, want %+v", got, want)
	}
}
