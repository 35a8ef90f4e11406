package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
)

// toolModel answers the first call with a tool call and every later one
// with text, and keeps the requests it saw.
type toolModel struct {
	mu   sync.Mutex
	reqs []llm.Request
}

func (m *toolModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req)
	u := llm.Usage{InputTokens: 100, OutputTokens: 10, Calls: 1}
	if len(m.reqs) == 1 {
		return llm.Response{Usage: u, Message: llm.Message{Role: llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "run", Arguments: `{"cmd":"ls"}`}}}}, nil
	}
	return llm.Response{Usage: u, Message: llm.Message{Role: llm.RoleAssistant, Content: "all done"}}, nil
}

func (m *toolModel) Offline() bool { return false }

// shapes holds, per API shape, its path (and its streaming path, for a
// shape that streams by path rather than by a body field), a first
// request offering a tool, and a second one carrying that tool's result.
var shapes = map[string]struct {
	path, streamPath string
	first, second    string
}{
	config.APIOpenAI: {"/v1/chat/completions", "",
		`{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"do it"}],"tools":[{"type":"function","function":{"name":"run","parameters":{"type":"object"}}}]}`,
		`{"model":"m","messages":[{"role":"user","content":"do it"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"run","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"file.txt"}]}`},
	config.APIOpenAIResponses: {"/v1/responses", "",
		`{"model":"m","instructions":"sys","input":[{"role":"user","content":[{"type":"input_text","text":"do it"}]}],"tools":[{"type":"function","name":"run","parameters":{"type":"object"}}]}`,
		`{"model":"m","input":[{"role":"user","content":"do it"},{"type":"function_call","call_id":"call_1","name":"run","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"file.txt"}]}`},
	config.APIAnthropic: {"/v1/messages", "",
		`{"model":"m","max_tokens":100,"system":"sys","messages":[{"role":"user","content":"do it"}],"tools":[{"name":"run","input_schema":{"type":"object"}}]}`,
		`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"do it"},{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"run","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"file.txt"}]}]}`},
	config.APIGemini: {"/v1beta/models/m:generateContent", "/v1beta/models/m:streamGenerateContent?alt=sse",
		`{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"do it"}]}],"tools":[{"functionDeclarations":[{"name":"run","parameters":{"type":"OBJECT"}}]}]}`,
		`{"contents":[{"role":"user","parts":[{"text":"do it"}]},{"role":"model","parts":[{"functionCall":{"id":"call_1","name":"run","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"run","response":{"output":"file.txt"}}}]}]}`},
}

func newGateway(t *testing.T, api string, p llm.Provider, ledger *llm.Ledger) (*Gateway, *httptest.Server) {
	t.Helper()
	g := &Gateway{Client: &llm.Client{Provider: p, Ledger: ledger, Role: "executor", Model: "the-model"},
		Caller: "executor/student-1", API: api, Token: "tok"}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	return g, srv
}

func post(t *testing.T, url, token, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestGatewayRoundTripsToolCallsInEveryShape(t *testing.T) {
	for api, sh := range shapes {
		for _, stream := range []bool{false, true} {
			name := api
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				model := &toolModel{}
				ledger := llm.NewLedger(llm.Limits{})
				g, srv := newGateway(t, api, model, ledger)
				path, first, second := sh.path, sh.first, sh.second
				if stream && sh.streamPath != "" {
					path = sh.streamPath
				} else if stream {
					first = strings.Replace(first, `{"model":"m"`, `{"model":"m","stream":true`, 1)
				}
				resp, body := post(t, srv.URL+path, "tok", first)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				if !strings.Contains(body, `call_1`) || !strings.Contains(body, `run`) || !strings.Contains(body, `ls`) {
					t.Errorf("answer lacks the tool call: %s", body)
				}
				if stream && !strings.Contains(resp.Header.Get("Content-Type"), "text/event-stream") {
					t.Errorf("streamed answer has content type %q", resp.Header.Get("Content-Type"))
				}
				if stream && !strings.Contains(body, "10") {
					t.Errorf("stream does not carry the final usage: %s", body)
				}
				if resp, body = post(t, srv.URL+sh.path, "tok", second); resp.StatusCode != http.StatusOK || !strings.Contains(body, "all done") {
					t.Fatalf("second call: %d %s", resp.StatusCode, body)
				}
				checkForwarded(t, model.reqs)
				if got := ledger.ByCaller()["executor/student-1"]; got.Calls != 2 || got.InputTokens != 200 {
					t.Errorf("ledger for executor/student-1 = %+v, want 2 calls and 200 input tokens", got)
				}
				if calls := g.Calls(); len(calls) != 2 || calls[0].Stream != stream || calls[1].Response.Message.Content != "all done" {
					t.Errorf("recorded calls = %+v", calls)
				}
			})
		}
	}
}

// checkForwarded checks what reached the provider: the system prompt and
// the tool of the first call, the tool's result in the second.
func checkForwarded(t *testing.T, reqs []llm.Request) {
	t.Helper()
	if len(reqs) != 2 {
		t.Fatalf("provider got %d calls, want 2", len(reqs))
	}
	r0 := reqs[0]
	if r0.Caller != "executor/student-1" || r0.Messages[0].Role != llm.RoleSystem || r0.Messages[0].Content != "sys" ||
		len(r0.Tools) != 1 || r0.Tools[0].Name != "run" {
		t.Errorf("first request = %+v", r0)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	prev := reqs[1].Messages[len(reqs[1].Messages)-2]
	if last.Role != llm.RoleTool || last.ToolCallID != "call_1" || last.Content != "file.txt" ||
		len(prev.ToolCalls) != 1 || prev.ToolCalls[0].ID != "call_1" {
		t.Errorf("second request ends with %+v after %+v, want the tool's result after its call", last, prev)
	}
}

func TestGatewayRefusesWithoutTheTrialToken(t *testing.T) {
	model := &toolModel{}
	_, srv := newGateway(t, config.APIOpenAI, model, nil)
	for _, token := range []string{"", "sk-real-key", "tok2"} {
		resp, body := post(t, srv.URL+"/v1/chat/completions", token, shapes[config.APIOpenAI].first)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: status %d (%s), want 401", token, resp.StatusCode, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(shapes[config.APIOpenAI].first))
	req.Header.Set("x-api-key", "tok")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("x-api-key with the token: %v %v, want 200", resp, err)
	}
	if len(model.reqs) != 1 {
		t.Errorf("provider got %d calls, want only the authorized one", len(model.reqs))
	}
}

func TestGatewayServesOnlyItsShape(t *testing.T) {
	_, srv := newGateway(t, config.APIAnthropic, &toolModel{}, nil)
	resp, body := post(t, srv.URL+"/v1/chat/completions", "tok", shapes[config.APIOpenAI].first)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `speaks the \"anthropic\" API only`) {
		t.Errorf("chat path on an anthropic gateway: %d %s", resp.StatusCode, body)
	}
}

func TestGatewayStopsCallsOnceTheBudgetIsSpent(t *testing.T) {
	model := &toolModel{}
	ledger := llm.NewLedger(llm.Limits{MaxTokens: 50})
	g, srv := newGateway(t, config.APIAnthropic, model, ledger)
	sh := shapes[config.APIAnthropic]
	if resp, body := post(t, srv.URL+sh.path, "tok", sh.first); resp.StatusCode != http.StatusOK {
		t.Fatalf("first call: %d %s", resp.StatusCode, body)
	}
	resp, body := post(t, srv.URL+sh.path, "tok", sh.second)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "budget_exhausted") {
		t.Errorf("call past the budget: %d %s, want 403 budget_exhausted", resp.StatusCode, body)
	}
	if len(model.reqs) != 1 {
		t.Errorf("provider got %d calls, want the refused one kept from it", len(model.reqs))
	}
	if err := g.Err(); !errors.Is(err, llm.ErrBudgetExhausted) {
		t.Errorf("Err() = %v, want the budget's", err)
	}
}

func TestGatewayStreamIsWellFormedServerSentEvents(t *testing.T) {
	_, srv := newGateway(t, config.APIOpenAI, &toolModel{}, nil)
	body := strings.Replace(shapes[config.APIOpenAI].first, `{"model":"m"`, `{"model":"m","stream":true`, 1)
	_, text := post(t, srv.URL+"/v1/chat/completions", "tok", body)
	sc := bufio.NewScanner(strings.NewReader(text))
	var events int
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Errorf("event %q is not JSON: %v", line, err)
		}
		events++
	}
	if events < 3 || !strings.HasSuffix(strings.TrimSpace(text), "data: [DONE]") {
		t.Errorf("stream has %d events and ends %q", events, text[max(len(text)-20, 0):])
	}
}

type failingModel struct{}

func (failingModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Attempts: 1}, errors.New("upstream 500")
}

func (failingModel) Offline() bool { return false }

func TestGatewayReportsAFailingEndpoint(t *testing.T) {
	g, srv := newGateway(t, config.APIOpenAI, failingModel{}, nil)
	resp, body := post(t, srv.URL+"/v1/chat/completions", "tok", shapes[config.APIOpenAI].first)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "upstream 500") {
		t.Errorf("failed call: %d %s, want 502 with the error", resp.StatusCode, body)
	}
	var mf interface{ ModelFailure() bool }
	if err := g.Err(); !errors.As(err, &mf) || errors.Is(err, llm.ErrBudgetExhausted) {
		t.Errorf("Err() = %v, want the model endpoint's failure", err)
	}
	if calls := g.Calls(); len(calls) != 1 || calls[0].Err == "" || calls[0].Response != nil {
		t.Errorf("recorded calls = %+v", calls)
	}
}
