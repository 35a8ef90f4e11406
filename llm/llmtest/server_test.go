package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) (int, map[string]any, http.Header) {
	t.Helper()
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, resp.Header
}

func TestServerScriptsAndRecords(t *testing.T) {
	s := NewServer(t)
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || !strings.HasSuffix(s.URL(), "/v1") {
		t.Fatalf("URL() = %q, want a loopback /v1 root", s.URL())
	}
	s.Push(RateLimited(1500*time.Millisecond), ToolCall("c1", "submit", `{"summary":"x"}`).WithCost(0.5))
	s.Handle(func(r Request) Reply { return Text("from handler " + string(r.Chat.Messages[0].Content)) })

	code, body, hdr := post(t, s.URL(), `{"model":"m","messages":[{"role":"user","content":"one"}]}`)
	if code != 429 || hdr.Get("Retry-After-Ms") != "1500" || hdr.Get("Retry-After") != "2" {
		t.Errorf("429 reply: %d %v", code, hdr)
	}
	if e, _ := body["error"].(map[string]any); e["message"] != "rate limit reached" {
		t.Errorf("error body = %v", body)
	}

	code, body, _ = post(t, s.URL(), `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"two"}]}]}`)
	choice := body["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	call := msg["tool_calls"].([]any)[0].(map[string]any)
	if code != 200 || choice["finish_reason"] != "tool_calls" || call["type"] != "function" || msg["content"] != nil {
		t.Errorf("tool call reply = %v", body)
	}
	usage := body["usage"].(map[string]any)
	if usage["cost"] != 0.5 || usage["prompt_tokens"].(float64) <= 0 {
		t.Errorf("usage = %v", usage)
	}

	_, body, _ = post(t, s.URL(), `{"model":"m","messages":[{"role":"user","content":"three"}]}`)
	msg = body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["content"] != "from handler three" {
		t.Errorf("handler reply = %v", msg)
	}

	reqs := s.Requests()
	if len(reqs) != 3 || s.Pending() != 0 {
		t.Fatalf("recorded %d requests, %d pending", len(reqs), s.Pending())
	}
	if got := string(reqs[1].Chat.Messages[0].Content); got != "two" {
		t.Errorf("content parts decoded to %q", got)
	}
	if reqs[0].Body["model"] != "m" || reqs[0].Path != "/v1/chat/completions" {
		t.Errorf("recorded request = %+v", reqs[0])
	}
}

// A reset reply leaves the client with a connection error, no answer, and
// the server with the whole request.
func TestServerResetsAfterReadingTheRequest(t *testing.T) {
	s := NewServer(t)
	s.Push(ConnectionReset())
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 64<<10) + `"}]}`
	resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got HTTP %d, want the connection reset", resp.StatusCode)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || string(reqs[0].Raw) != body {
		t.Errorf("server recorded %d requests, want the one whole request", len(reqs))
	}
}

func TestMalformedIsNotJSON(t *testing.T) {
	if json.Valid([]byte(Malformed().Raw)) {
		t.Error("Malformed() body is valid JSON")
	}
}

func TestServerCachePrefixes(t *testing.T) {
	s := NewServer(t)
	s.CachePrefixes()
	s.Handle(func(Request) Reply { return Text("ok") })
	long := strings.Repeat("stable text ", 40)
	cached := func(body string) float64 {
		t.Helper()
		_, out, _ := post(t, s.URL(), body)
		usage := out["usage"].(map[string]any)
		d, _ := usage["prompt_tokens_details"].(map[string]any)
		if d == nil {
			return 0
		}
		return d["cached_tokens"].(float64)
	}
	msg := func(model, tail string) string {
		// A long tail keeps the cached part below the prompt's tokens.
		return `{"model":"` + model + `","messages":[{"role":"user","content":"` + long + strings.Repeat(tail, 50) + `"}]}`
	}
	if got := cached(msg("m", "one")); got != 0 {
		t.Errorf("first request: %v cached tokens, want 0", got)
	}
	if got := cached(msg("other", "two")); got != 0 {
		t.Errorf("first request of another model: %v cached tokens, want 0", got)
	}
	// The common prefix with m's previous request is the role, the long
	// text and no more: its length in bytes over 4.
	prefix := len(`[{"role":"user","content":"` + long)
	if got := cached(msg("m", "three")); got != float64(prefix/4) {
		t.Errorf("repeated prefix: %v cached tokens, want %d", got, prefix/4)
	}
	s.Push(Text("x").WithCachedTokens(3))
	if got := cached(msg("m", "four")); got != 3 {
		t.Errorf("scripted cached tokens: %v, want 3", got)
	}
}
