package openaiapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
	"github.com/mediated-coevo/harness/llm/openaiapi"
)

func ptr[T any](v T) *T { return &v }

func testModel(url string) config.Model {
	return config.Model{
		Provider:   config.ProviderOpenAI,
		BaseURL:    url,
		Model:      "test-model",
		MaxRetries: 2,
		Timeout:    config.Duration{Duration: 5 * time.Second},
	}
}

// sleepLog records the backoff waits instead of spending them.
type sleepLog struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleepLog) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepLog) get() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

func newProvider(t *testing.T, m config.Model, sl *sleepLog) *openaiapi.Provider {
	t.Helper()
	b := openaiapi.Backoff{Base: time.Millisecond, Max: 50 * time.Millisecond}
	if sl != nil {
		b.Sleep = sl.sleep
	}
	p, err := openaiapi.New(m, openaiapi.WithBackoff(b))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var listTool = llm.Tool{
	Name:        "list_dir",
	Description: "List a directory.",
	Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}},
		"required":   []string{"path"},
	},
}

var submitTool = llm.Tool{
	Name:        "submit",
	Description: "Finish.",
	Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"summary": map[string]any{"type": "string"}},
		"required":   []string{"summary"},
	},
}

func TestToolCallRoundTrip(t *testing.T) {
	srv := llmtest.NewServer(t)
	// The first answer leaves out "type":"function", which must not break
	// the assistant turn sent back in the second request.
	first := llmtest.ToolCall("call_1", "list_dir", `{"path":"/app"}`).WithUsage(50, 12)
	first.OmitToolType = true
	srv.Push(first, llmtest.Text("done").WithUsage(80, 3))

	t.Setenv("LLMTEST_KEY", "sk-test")
	m := testModel(srv.URL())
	m.APIKeyEnv = "LLMTEST_KEY"
	m.Temperature = ptr(0.0)
	m.TopP = ptr(0.9)
	m.Seed = ptr(int64(1234))
	m.MaxTokens = 1024
	p := newProvider(t, m, nil)
	ctx := context.Background()

	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "You are careful."},
		{Role: llm.RoleUser, Content: "list files"},
	}
	resp, err := p.Complete(ctx, llm.Request{Messages: msgs, Tools: []llm.Tool{listTool, submitTool}})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.ToolCall{ID: "call_1", Name: "list_dir", Arguments: `{"path":"/app"}`}
	if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0] != want {
		t.Fatalf("tool calls = %+v, want [%+v]", resp.Message.ToolCalls, want)
	}
	if resp.Usage.InputTokens != 50 || resp.Usage.OutputTokens != 12 || resp.Attempts != 1 || resp.FinishReason != "tool_calls" {
		t.Errorf("response = %+v", resp)
	}
	msgs = append(msgs, resp.Message, llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Name: "list_dir", Content: "a.txt"})
	resp, err = p.Complete(ctx, llm.Request{Messages: msgs, Tools: []llm.Tool{listTool, submitTool}, ToolChoice: "submit"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "done" {
		t.Errorf("content = %q", resp.Message.Content)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(reqs))
	}
	r1 := reqs[0]
	if got := r1.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	c := r1.Chat
	if c.Model != "test-model" || c.Temperature == nil || *c.Temperature != 0 || c.TopP == nil || *c.TopP != 0.9 ||
		c.Seed == nil || *c.Seed != 1234 || c.MaxTokens == nil || *c.MaxTokens != 1024 {
		t.Errorf("sampling parameters not sent: %s", r1.Raw)
	}
	if len(c.Tools) != 2 || c.Tools[0].Type != "function" || c.Tools[0].Function.Name != "list_dir" ||
		c.Tools[0].Function.Parameters["type"] != "object" {
		t.Errorf("tools = %+v", c.Tools)
	}
	if len(c.ToolChoice) != 0 {
		t.Errorf("first request has tool_choice %s, want none", c.ToolChoice)
	}
	if len(c.Messages) != 2 || c.Messages[0].Role != "system" || c.Messages[1].Content != "list files" {
		t.Errorf("messages = %+v", c.Messages)
	}

	c = reqs[1].Chat
	if len(c.Messages) != 4 {
		t.Fatalf("second request has %d messages, want 4", len(c.Messages))
	}
	a := c.Messages[2]
	if a.Role != "assistant" || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != "call_1" || a.ToolCalls[0].Type != "function" ||
		a.ToolCalls[0].Function.Name != "list_dir" || a.ToolCalls[0].Function.Arguments != `{"path":"/app"}` {
		t.Errorf("assistant turn sent back = %+v", a)
	}
	if tm := c.Messages[3]; tm.Role != "tool" || tm.ToolCallID != "call_1" || tm.Content != "a.txt" {
		t.Errorf("tool result sent = %+v", tm)
	}
	var choice struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(c.ToolChoice, &choice); err != nil || choice.Type != "function" || choice.Function.Name != "submit" {
		t.Errorf("tool_choice = %s, want the submit function forced", c.ToolChoice)
	}
}

func TestNoKeySendsNoAuthorization(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(llmtest.Text("hi"))
	t.Setenv("OPENAI_API_KEY", "sk-must-not-leak")
	m := testModel(srv.URL())
	m.APIKeyEnv = "LLMTEST_UNSET_KEY"
	p := newProvider(t, m, nil)
	if _, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none (no key configured)", got)
	}
}

func TestStructuredOutputRequest(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(llmtest.Text(`{"plan":"1. do it"}`))
	p := newProvider(t, testModel(srv.URL()), nil)
	_, err := p.Complete(context.Background(), llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "plan"}},
		Schema: map[string]any{"type": "object", "properties": map[string]any{"plan": map[string]any{"type": "string"}},
			"required": []string{"plan"}, "additionalProperties": false},
		SchemaName: "plan",
		Seed:       77,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := srv.Requests()[0].Chat
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string         `json:"name"`
			Strict bool           `json:"strict"`
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(c.ResponseFormat, &rf); err != nil {
		t.Fatalf("response_format %s: %v", c.ResponseFormat, err)
	}
	if rf.Type != "json_schema" || rf.JSONSchema.Name != "plan" || !rf.JSONSchema.Strict || rf.JSONSchema.Schema["type"] != "object" {
		t.Errorf("response_format = %s", c.ResponseFormat)
	}
	if c.Seed == nil || *c.Seed != 77 {
		t.Errorf("request seed not passed on: %s", srv.Requests()[0].Raw)
	}
}

func TestRetries(t *testing.T) {
	user := []llm.Message{{Role: llm.RoleUser, Content: "hello"}}
	tests := []struct {
		name         string
		replies      []llmtest.Reply
		timeout      time.Duration
		wantErr      string // empty: success
		wantAttempts int
		wantWaits    []time.Duration // exact waits, when Retry-After decides them
	}{
		{
			name:         "429 then success honours Retry-After",
			replies:      []llmtest.Reply{llmtest.RateLimited(30 * time.Millisecond), llmtest.Text("ok").WithUsage(10, 5)},
			wantAttempts: 2,
			wantWaits:    []time.Duration{30 * time.Millisecond},
		},
		{
			name:         "slow reply past the attempt timeout then success",
			replies:      []llmtest.Reply{llmtest.Slow(3*time.Second, llmtest.Text("late")), llmtest.Text("ok").WithUsage(10, 5)},
			timeout:      150 * time.Millisecond,
			wantAttempts: 2,
		},
		{
			name:         "body stalling past the attempt timeout is a timeout",
			replies:      []llmtest.Reply{llmtest.Stalled(3*time.Second, llmtest.Text("late")), llmtest.Stalled(3*time.Second, llmtest.Text("late")), llmtest.Stalled(3*time.Second, llmtest.Text("late"))},
			timeout:      150 * time.Millisecond,
			wantErr:      "attempt timed out after 150ms",
			wantAttempts: 3,
		},
		{
			name:         "malformed body then success",
			replies:      []llmtest.Reply{llmtest.Malformed(), llmtest.Text("ok").WithUsage(10, 5)},
			wantAttempts: 2,
		},
		{
			name:         "408 and 409 are retried",
			replies:      []llmtest.Reply{llmtest.Status(408, "timeout"), llmtest.Status(409, "conflict"), llmtest.Text("ok").WithUsage(10, 5)},
			wantAttempts: 3,
		},
		{
			name:         "persistent 500 fails after max_retries+1 attempts",
			replies:      []llmtest.Reply{llmtest.ServerError(), llmtest.ServerError(), llmtest.ServerError()},
			wantErr:      "giving up after 3 attempts: HTTP 500: internal server error",
			wantAttempts: 3,
		},
		{
			name:         "persistent malformed body fails",
			replies:      []llmtest.Reply{llmtest.Malformed(), llmtest.Malformed(), llmtest.Malformed()},
			wantErr:      "malformed response body",
			wantAttempts: 3,
		},
		{
			name:         "400 is not retried and carries the server message",
			replies:      []llmtest.Reply{llmtest.Status(400, "model 'x' does not exist")},
			wantErr:      "HTTP 400: model 'x' does not exist",
			wantAttempts: 1,
		},
		{
			name:         "401 is not retried",
			replies:      []llmtest.Reply{llmtest.Status(401, "invalid api key")},
			wantErr:      "invalid api key",
			wantAttempts: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(tt.replies...)
			m := testModel(srv.URL())
			if tt.timeout > 0 {
				m.Timeout = config.Duration{Duration: tt.timeout}
			}
			sl := &sleepLog{}
			ledger := llm.NewLedger(llm.Limits{})
			c := &llm.Client{Provider: newProvider(t, m, sl), Ledger: ledger, Role: "planner"}
			resp, err := c.Complete(context.Background(), llm.Request{Caller: "planner", Messages: user})
			if got := srv.Count(); got != tt.wantAttempts {
				t.Errorf("server saw %d attempts, want %d", got, tt.wantAttempts)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				// Counted as one failed call with its retries; charged nothing,
				// since this ledger charges only what endpoints report.
				want := llm.Usage{Calls: 1, Failures: 1, Retries: int64(tt.wantAttempts - 1)}
				if got := ledger.Total(); got != want {
					t.Errorf("failed call: ledger total %+v, want %+v", got, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != "ok" || resp.Attempts != tt.wantAttempts {
				t.Errorf("content %q attempts %d, want ok, %d", resp.Message.Content, resp.Attempts, tt.wantAttempts)
			}
			// Usage is charged once, for the successful attempt only.
			if got := ledger.Total(); got.Calls != 1 || got.InputTokens != 10 || got.OutputTokens != 5 {
				t.Errorf("ledger total = %+v, want one call of 10+5 tokens", got)
			}
			if got := ledger.Total().Retries; got != int64(tt.wantAttempts-1) {
				t.Errorf("ledger counts %d retries, want %d", got, tt.wantAttempts-1)
			}
			if tt.wantWaits != nil {
				if got := sl.get(); len(got) != len(tt.wantWaits) || got[0] != tt.wantWaits[0] {
					t.Errorf("waits = %v, want %v", got, tt.wantWaits)
				}
			}
		})
	}
}

func TestBackoffGrowsWithJitter(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(llmtest.ServerError(), llmtest.ServerError(), llmtest.ServerError(), llmtest.Text("ok"))
	m := testModel(srv.URL())
	m.MaxRetries = 3
	sl := &sleepLog{}
	p, err := openaiapi.New(m, openaiapi.WithBackoff(openaiapi.Backoff{Base: 100 * time.Millisecond, Max: 300 * time.Millisecond, Sleep: sl.sleep}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	waits := sl.get()
	// Without Retry-After the n-th wait lies in [d/2, d) for d = base*2^n,
	// capped at Max.
	caps := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	if len(waits) != len(caps) {
		t.Fatalf("waits = %v, want %d of them", waits, len(caps))
	}
	for i, w := range waits {
		if w < caps[i]/2 || w >= caps[i] {
			t.Errorf("wait %d = %v, want in [%v, %v)", i, w, caps[i]/2, caps[i])
		}
	}
}

func TestConnectionErrorIsRetried(t *testing.T) {
	dead := httptest.NewServer(nil)
	url := dead.URL + "/v1"
	dead.Close() // nothing listens there any more: connection refused on loopback
	p := newProvider(t, testModel(url), &sleepLog{})
	_, err := p.Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if err == nil || !strings.Contains(err.Error(), "giving up after 3 attempts") || !strings.Contains(err.Error(), "connection") {
		t.Fatalf("err = %v, want a connection failure after 3 attempts", err)
	}
}

func TestCancelStopsRetrying(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(llmtest.ServerError(), llmtest.ServerError(), llmtest.ServerError())
	ctx, cancel := context.WithCancel(context.Background())
	sl := func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }
	p, err := openaiapi.New(testModel(srv.URL()), openaiapi.WithBackoff(openaiapi.Backoff{Sleep: sl}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// The failure that made it wait is kept: it is what the user must fix.
	if !strings.Contains(err.Error(), "HTTP 500: internal server error") {
		t.Errorf("err = %v, want it to name the 500 it was waiting to retry", err)
	}
	if srv.Count() != 1 {
		t.Errorf("server saw %d attempts after cancel, want 1", srv.Count())
	}
}

func TestCost(t *testing.T) {
	tests := []struct {
		name      string
		priceIn   *float64
		priceOut  *float64
		reply     llmtest.Reply
		wantCost  float64
		wantKnown bool
		// priceCached is the model's cached-input price.
		priceCached *float64
	}{
		{"from configured price", ptr(2.0), ptr(8.0), llmtest.Text("a").WithUsage(1000, 500), (1000*2.0 + 500*8.0) / 1e6, true, nil},
		{"configured price wins over reported cost", ptr(2.0), ptr(8.0), llmtest.Text("a").WithUsage(1000, 500).WithCost(9), (1000*2.0 + 500*8.0) / 1e6, true, nil},
		{"from reported usage.cost", nil, nil, llmtest.Text("a").WithUsage(1000, 500).WithCost(0.0012), 0.0012, true, nil},
		{"half a price is no price", ptr(2.0), nil, llmtest.Text("a").WithUsage(1000, 500).WithCost(0.0012), 0.0012, true, nil},
		{"unknown", nil, nil, llmtest.Text("a").WithUsage(1000, 500), 0, false, nil},
		{"cached input at the input price when no cached price", ptr(2.0), ptr(8.0),
			llmtest.Text("a").WithUsage(1000, 500).WithCachedTokens(800), (1000*2.0 + 500*8.0) / 1e6, true, nil},
		{"cached input at its own price", ptr(2.0), ptr(8.0),
			llmtest.Text("a").WithUsage(1000, 500).WithCachedTokens(800), (200*2.0 + 800*0.5 + 500*8.0) / 1e6, true, ptr(0.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(tt.reply)
			m := testModel(srv.URL())
			m.PriceInputPerMTok, m.PriceOutputPerMTok, m.PriceCachedInputPerMTok = tt.priceIn, tt.priceOut, tt.priceCached
			resp, err := newProvider(t, m, nil).Complete(context.Background(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
			if err != nil {
				t.Fatal(err)
			}
			u := resp.Usage
			if u.CachedInputTokens != tt.reply.CachedTokens {
				t.Errorf("cached input tokens = %d, want %d", u.CachedInputTokens, tt.reply.CachedTokens)
			}
			if u.CostKnown != tt.wantKnown || math.Abs(u.CostUSD-tt.wantCost) > 1e-12 {
				t.Errorf("cost = %v (known %v), want %v (known %v)", u.CostUSD, u.CostKnown, tt.wantCost, tt.wantKnown)
			}
		})
	}
}

func TestNewRejectsIncompleteModel(t *testing.T) {
	tests := []struct {
		name string
		m    config.Model
		want string
	}{
		{"no base url", config.Model{Provider: "openai", Model: "m"}, "base_url"},
		{"no model", config.Model{Provider: "openai", BaseURL: "http://127.0.0.1:1/v1"}, "model name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := openaiapi.New(tt.m); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}
