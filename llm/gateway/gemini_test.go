package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
)

// geminiPost sends body with the key in the header Google's SDKs use.
func geminiPost(t *testing.T, url, key, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("x-goog-api-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Gemini's function calls may carry no id: a response is matched to its
// call by name. The provider still gets ids on both sides, the same ones
// in every call of the conversation.
func TestGeminiMapsCallsWithoutIDsByName(t *testing.T) {
	model := &toolModel{}
	_, srv := newGateway(t, config.APIGemini, model, nil)
	body := `{"system_instruction":{"parts":[{"text":"sys"}]},
	"contents":[{"role":"user","parts":[{"text":"do it"}]},
	{"role":"model","parts":[{"text":"thinking hard","thought":true},{"text":"I will look."},{"functionCall":{"name":"run","args":{"cmd":"ls"}}},{"functionCall":{"name":"read","args":{"path":"a"}}}]},
	{"role":"user","parts":[{"functionResponse":{"name":"read","response":{"output":"A"}}},{"functionResponse":{"name":"run","response":{"error":"denied"}}},{"text":"go on"}]}],
	"tools":[{"functionDeclarations":[{"name":"run","parameters":{"type":"OBJECT","properties":{"cmd":{"type":"STRING"}}}},
	{"name":"read","parametersJsonSchema":{"type":"object","properties":{"path":{"type":"string"}}}}]}],
	"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`
	for i := range 2 {
		if resp, out := geminiPost(t, srv.URL+"/v1beta/models/gemini-x:generateContent", "tok", body); resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %d %s", i+1, resp.StatusCode, out)
		}
	}
	req := model.reqs[0]
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,tool,user" {
		t.Fatalf("roles = %s, want system,user,assistant,tool,tool,user", got)
	}
	asst, read, run := req.Messages[2], req.Messages[3], req.Messages[4]
	if asst.Content != "I will look." || len(asst.ToolCalls) != 2 || asst.ToolCalls[0].Arguments != `{"cmd":"ls"}` {
		t.Errorf("assistant message = %+v, want its text without the thought and both calls", asst)
	}
	if read.ToolCallID != asst.ToolCalls[1].ID || read.Content != "A" || run.ToolCallID != asst.ToolCalls[0].ID || run.Content != "error: denied" {
		t.Errorf("results %+v and %+v do not answer the calls %+v by name", read, run, asst.ToolCalls)
	}
	if asst.ToolCalls[0].ID == asst.ToolCalls[1].ID || asst.ToolCalls[0].ID != model.reqs[1].Messages[2].ToolCalls[0].ID {
		t.Errorf("call ids %q, %q are not distinct or change between calls (%q)", asst.ToolCalls[0].ID, asst.ToolCalls[1].ID, model.reqs[1].Messages[2].ToolCalls[0].ID)
	}
	if req.ToolChoice != "required" || len(req.Tools) != 2 {
		t.Errorf("tool choice %q and %d tools, want required and 2", req.ToolChoice, len(req.Tools))
	}
	props, _ := req.Tools[0].Parameters["properties"].(map[string]any)
	cmd, _ := props["cmd"].(map[string]any)
	if req.Tools[0].Parameters["type"] != "object" || cmd["type"] != "string" || req.Tools[1].Parameters["type"] != "object" {
		t.Errorf("tool schemas = %+v, want JSON Schema's lower-case types", req.Tools)
	}
}

func TestGeminiAnswersInItsOwnShape(t *testing.T) {
	model := &toolModel{}
	_, srv := newGateway(t, config.APIGemini, model, nil)
	first := shapes[config.APIGemini].first
	resp, body := geminiPost(t, srv.URL+"/v1beta/models/m:generateContent", "tok", first)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var got struct {
		Candidates []struct {
			Content struct {
				Role  string
				Parts []struct {
					FunctionCall struct {
						ID, Name string
						Args     map[string]any
					}
				}
			}
			FinishReason string
		}
		UsageMetadata struct{ PromptTokenCount, CandidatesTokenCount, TotalTokenCount int }
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || len(got.Candidates) != 1 {
		t.Fatalf("answer %s: %v", body, err)
	}
	c := got.Candidates[0]
	if c.Content.Role != "model" || len(c.Content.Parts) != 1 || c.Content.Parts[0].FunctionCall.Name != "run" ||
		c.Content.Parts[0].FunctionCall.ID != "call_1" || c.Content.Parts[0].FunctionCall.Args["cmd"] != "ls" || c.FinishReason != "STOP" {
		t.Errorf("candidate = %+v, want the model's function call run(cmd=ls)", c)
	}
	if u := got.UsageMetadata; u.PromptTokenCount != 100 || u.CandidatesTokenCount != 10 || u.TotalTokenCount != 110 {
		t.Errorf("usageMetadata = %+v, want 100 + 10 = 110", u)
	}

	// Without alt=sse a stream is one JSON array of responses.
	resp, body = geminiPost(t, srv.URL+"/v1beta/models/m:streamGenerateContent", "tok", first)
	var arr []map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &arr) != nil || len(arr) != 1 || arr[0]["candidates"] == nil {
		t.Errorf("stream without alt=sse: %d %s, want a JSON array of one response", resp.StatusCode, body)
	}
	// With it, data lines of whole responses and no [DONE], which the format lacks.
	_, body = geminiPost(t, srv.URL+"/v1beta/models/m:streamGenerateContent?alt=sse", "tok", first)
	data, ok := strings.CutPrefix(strings.TrimSpace(body), "data: ")
	if !ok || strings.Contains(body, "[DONE]") || json.Unmarshal([]byte(data), &got) != nil || got.Candidates[0].Content.Role != "model" {
		t.Errorf("stream with alt=sse = %q, want one data event holding a response", body)
	}
}

func TestGeminiAcceptsItsKeyPlacesAndRefusesOthers(t *testing.T) {
	model := &toolModel{}
	_, srv := newGateway(t, config.APIGemini, model, nil)
	first := shapes[config.APIGemini].first
	tests := []struct {
		name, path, key string
		want            int
	}{
		{"header", "/v1beta/models/m:generateContent", "tok", http.StatusOK},
		{"query", "/v1beta/models/m:generateContent?key=tok", "", http.StatusOK},
		{"v1", "/v1/models/m:generateContent", "tok", http.StatusOK},
		{"wrong key", "/v1beta/models/m:generateContent", "AIza-real-key", http.StatusUnauthorized},
		{"no key", "/v1beta/models/m:generateContent", "", http.StatusUnauthorized},
		{"unknown method", "/v1beta/models/m:embedContent", "tok", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := geminiPost(t, srv.URL+tt.path, tt.key, first)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tt.want)
			}
			if tt.want != http.StatusOK {
				var e struct {
					Error struct {
						Code            int
						Status, Message string
					}
				}
				if json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != tt.want || e.Error.Status == "" || e.Error.Message == "" {
					t.Errorf("error body %s is not Google's {error: {code, message, status}}", body)
				}
			}
		})
	}
	if len(model.reqs) != 3 {
		t.Errorf("provider got %d calls, want only the 3 authorized ones", len(model.reqs))
	}
}

func TestGeminiCountsTokensWithoutAModelCall(t *testing.T) {
	model := &toolModel{}
	_, srv := newGateway(t, config.APIGemini, model, nil)
	for _, body := range []string{
		`{"contents":[{"role":"user","parts":[{"text":"` + strings.Repeat("x", 400) + `"}]}]}`,
		`{"generateContentRequest":{"model":"models/m","contents":[{"role":"user","parts":[{"text":"` + strings.Repeat("x", 400) + `"}]}]}}`,
	} {
		resp, out := geminiPost(t, srv.URL+"/v1beta/models/m:countTokens", "tok", body)
		var got struct{ TotalTokens int }
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(out), &got) != nil || got.TotalTokens != 100 {
			t.Errorf("countTokens: %d %s, want totalTokens 100", resp.StatusCode, out)
		}
	}
	if len(model.reqs) != 0 {
		t.Errorf("countTokens made %d model calls", len(model.reqs))
	}
}

func TestGeminiBudgetRefusalIsNotRetryable(t *testing.T) {
	model := &toolModel{}
	ledger := llm.NewLedger(llm.Limits{MaxTokens: 50})
	_, srv := newGateway(t, config.APIGemini, model, ledger)
	sh := shapes[config.APIGemini]
	if resp, body := geminiPost(t, srv.URL+sh.path, "tok", sh.first); resp.StatusCode != http.StatusOK {
		t.Fatalf("first call: %d %s", resp.StatusCode, body)
	}
	resp, body := geminiPost(t, srv.URL+sh.path, "tok", sh.second)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"PERMISSION_DENIED"`) || !strings.Contains(body, "budget_exhausted") {
		t.Errorf("call past the budget: %d %s, want 403 PERMISSION_DENIED naming budget_exhausted", resp.StatusCode, body)
	}
}
