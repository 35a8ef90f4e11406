// Package llmtest holds fakes for tests of code that calls models: a fake
// OpenAI-compatible chat-completions server, which listens on the loopback
// interface only, answers each request with the next scripted Reply (or a
// handler's) in the real wire format with usage (unless a Reply leaves it
// out), and records every request
// it received; and in-process providers (Scripted, Recorder) with helpers
// for checking what they were asked.
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/llm"
)

// Reply is one scripted answer. Build it with the helpers (Text, ToolCalls,
// JSON, Status, RateLimited, ServerError, Slow, Malformed, ConnectionReset).
type Reply struct {
	// Status is the HTTP status; zero means 200.
	Status int
	// Header holds extra response headers (e.g. Retry-After).
	Header map[string]string
	// ErrorMessage is the error.message of a non-2xx answer.
	ErrorMessage string
	// Raw, when set, is sent as the body verbatim (a malformed body, say).
	Raw string
	// Delay is waited before answering (or until the client gives up).
	Delay time.Duration
	// BodyStall, when set, sends the headers and the first half of the
	// body, then waits this long (or until the client gives up) before the
	// rest: a reply that stalls mid-body.
	BodyStall time.Duration
	// Reset, when set, answers nothing: the server reads the whole request,
	// then resets the connection (a TCP RST), as a proxy or an endpoint that
	// crashes mid-call does.
	Reset bool

	Content   string
	ToolCalls []llm.ToolCall
	// OmitToolType leaves "type":"function" out of tool calls, as some
	// servers do.
	OmitToolType bool
	FinishReason string

	PromptTokens     int64
	CompletionTokens int64
	// CachedTokens, when set, is reported as
	// usage.prompt_tokens_details.cached_tokens, whatever CachePrefixes says.
	CachedTokens int64
	// Cost, when set, is reported as usage.cost (OpenRouter style).
	Cost *float64
	// OmitUsage leaves usage out of the answer, as some servers do.
	OmitUsage bool
}

// Text is a plain assistant answer.
func Text(s string) Reply { return Reply{Content: s} }

// ToolCall is an answer with one tool call.
func ToolCall(id, name, args string) Reply {
	return ToolCalls(llm.ToolCall{ID: id, Name: name, Arguments: args})
}

// ToolCalls is an answer with several tool calls.
func ToolCalls(calls ...llm.ToolCall) Reply { return Reply{ToolCalls: calls} }

// JSON is an answer whose content is v encoded as JSON.
func JSON(v any) Reply { return Reply{Content: JSONText(v)} }

// Status is an error answer with the given status and message.
func Status(code int, message string) Reply {
	return Reply{Status: code, ErrorMessage: message}
}

// RateLimited is a 429 asking the client to wait retryAfter (sent as
// Retry-After-Ms, and as whole seconds in Retry-After).
func RateLimited(retryAfter time.Duration) Reply {
	secs := int((retryAfter + time.Second - 1) / time.Second)
	return Reply{
		Status:       http.StatusTooManyRequests,
		ErrorMessage: "rate limit reached",
		Header: map[string]string{
			"Retry-After-Ms": strconv.FormatInt(retryAfter.Milliseconds(), 10),
			"Retry-After":    strconv.Itoa(secs),
		},
	}
}

// ServerError is a 500.
func ServerError() Reply { return Status(http.StatusInternalServerError, "internal server error") }

// Slow is r answered after d.
func Slow(d time.Duration, r Reply) Reply { r.Delay = d; return r }

// Stalled is r with its body stopping halfway for d.
func Stalled(d time.Duration, r Reply) Reply { r.BodyStall = d; return r }

// Malformed is a 200 whose body is not valid JSON.
func Malformed() Reply { return Reply{Raw: `{"id":"chatcmpl-x","choices":[{"message":`} }

// ConnectionReset is no answer at all: the connection is reset after the
// server has read the whole request.
func ConnectionReset() Reply { return Reply{Reset: true} }

// WithUsage sets the reported token counts.
func (r Reply) WithUsage(prompt, completion int64) Reply {
	r.PromptTokens, r.CompletionTokens = prompt, completion
	return r
}

// WithCachedTokens reports cached prompt tokens.
func (r Reply) WithCachedTokens(n int64) Reply { r.CachedTokens = n; return r }

// WithoutUsage leaves usage out of the answer.
func (r Reply) WithoutUsage() Reply { r.OmitUsage = true; return r }

// WithCost reports usage.cost.
func (r Reply) WithCost(usd float64) Reply { r.Cost = &usd; return r }

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	// Raw is the body as sent; Body is it decoded generically, Chat typed.
	Raw  []byte
	Body map[string]any
	Chat ChatRequest
}

// ChatRequest is the decoded chat-completions request body.
type ChatRequest struct {
	Model               string          `json:"model"`
	Messages            []WireMessage   `json:"messages"`
	Tools               []WireTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Seed                *int64          `json:"seed"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
}

// WireMessage is one message of a request.
type WireMessage struct {
	Role       string         `json:"role"`
	Content    WireContent    `json:"content"`
	ToolCalls  []WireToolCall `json:"tool_calls"`
	ToolCallID string         `json:"tool_call_id"`
}

// WireContent is message content, sent either as a string or as a list of
// text parts; it decodes to the joined text.
type WireContent string

// UnmarshalJSON accepts a string, null, or a list of {"type":"text","text":...}.
func (c *WireContent) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*c = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*c = WireContent(s)
		return nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return fmt.Errorf("message content is neither a string nor a list of parts: %w", err)
	}
	var all string
	for _, p := range parts {
		all += p.Text
	}
	*c = WireContent(all)
	return nil
}

// WireToolCall is a tool call inside an assistant message of a request.
type WireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// WireTool is one offered tool.
type WireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

// Server is the fake endpoint.
type Server struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	replies  []Reply
	handler  func(Request) Reply
	requests []Request
	// cache, when not nil, holds the serialized messages of the last
	// request per model (see CachePrefixes).
	cache map[string][]byte
	// modelLists counts GET /v1/models requests; noModelList answers them
	// 404, as endpoints without a models list do.
	modelLists  int
	noModelList bool
}

// WithoutModelList makes GET /v1/models answer 404, as some endpoints do,
// so a caller must find another way to check the endpoint.
func (s *Server) WithoutModelList() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noModelList = true
}

// ModelLists is the number of GET /v1/models requests received so far.
// They are not chat requests: Requests and Count leave them out.
func (s *Server) ModelLists() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modelLists
}

// serveModels answers GET /v1/models with an empty list, or 404.
func (s *Server) serveModels(w http.ResponseWriter) {
	s.mu.Lock()
	s.modelLists++
	missing := s.noModelList
	s.mu.Unlock()
	if missing {
		writeError(w, http.StatusNotFound, "no such endpoint")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"object":"list","data":[]}`)
}

// CachePrefixes makes the server report cached prompt tokens as a prefix
// cache would: the bytes of a request's serialized messages that repeat,
// as a prefix, those of the previous request to the same model, over 4
// (the server's rough token size), at most the prompt's tokens.
func (s *Server) CachePrefixes() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cache = map[string][]byte{}
}

// cachedTokens is what the prefix cache holds of req, and remembers req.
// The caller holds s.mu.
func (s *Server) cachedTokens(req ChatRequest) int64 {
	if s.cache == nil {
		return 0
	}
	cur, _ := json.Marshal(req.Messages)
	prev := s.cache[req.Model]
	s.cache[req.Model] = cur
	return int64(commonPrefix(prev, cur)) / 4
}

// commonPrefix is how many leading bytes of a and b agree.
func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// RepeatedPrefix measures what a provider-side prefix cache could reuse
// from request a for request b: how many leading bytes of b's serialized
// messages repeat a's, and their share of b's. It is what CachePrefixes
// reports (over 4) for consecutive requests to one model.
func RepeatedPrefix(a, b Request) (n int, share float64, err error) {
	sa, err := json.Marshal(a.Chat.Messages)
	if err != nil {
		return 0, 0, fmt.Errorf("serialize messages: %w", err)
	}
	sb, err := json.Marshal(b.Chat.Messages)
	if err != nil {
		return 0, 0, fmt.Errorf("serialize messages: %w", err)
	}
	n = commonPrefix(sa, sb)
	return n, float64(n) / float64(len(sb)), nil
}

// NewServer starts a server on 127.0.0.1 that stops when the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the API root to configure as base_url (ends in /v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Push queues replies, answered in order one per request.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Handle answers requests with fn once the queued replies run out.
func (s *Server) Handle(fn func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = fn
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count is the number of requests received so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Pending is the number of queued replies not yet used.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		s.serveModels(w)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	_ = json.Unmarshal(raw, &req.Body)
	if err := json.Unmarshal(raw, &req.Chat); err != nil {
		s.t.Errorf("llmtest: request body does not decode as a chat request: %v\n%s", err, raw)
	}

	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.t.Errorf("llmtest: unexpected %s %s", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, "no such endpoint")
		return
	}

	n, reply, ok := s.next(req)
	if !ok {
		s.t.Errorf("llmtest: request %d has no scripted reply", n)
		writeError(w, http.StatusBadRequest, fmt.Sprintf("llmtest: no scripted reply for request %d", n))
		return
	}
	if reply.Reset {
		s.reset(w)
		return
	}
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	switch {
	case reply.Raw != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(orDefault(reply.Status, http.StatusOK))
		io.WriteString(w, reply.Raw)
	case reply.Status >= 400:
		writeError(w, reply.Status, reply.ErrorMessage)
	case reply.BodyStall > 0:
		body, _ := json.Marshal(completion(n, req.Chat, reply))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(orDefault(reply.Status, http.StatusOK))
		w.Write(body[:len(body)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		t := time.NewTimer(reply.BodyStall)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		w.Write(body[len(body)/2:])
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(orDefault(reply.Status, http.StatusOK))
		json.NewEncoder(w).Encode(completion(n, req.Chat, reply))
	}
}

// next records req and returns its number and reply: the next scripted
// one, else the handler's; ok is false when there is neither.
func (s *Server) next(req Request) (n int, reply Reply, ok bool) {
	s.mu.Lock()
	n = len(s.requests) + 1
	s.requests = append(s.requests, req)
	cached := s.cachedTokens(req.Chat)
	switch {
	case len(s.replies) > 0:
		reply, s.replies, ok = s.replies[0], s.replies[1:], true
	case s.handler != nil:
		h := s.handler
		s.mu.Unlock()
		reply, ok = h(req), true
		s.mu.Lock()
	}
	s.mu.Unlock()
	if reply.CachedTokens == 0 {
		reply.CachedTokens = cached
	}
	return n, reply, ok
}

// reset drops the connection under w with a TCP RST instead of an answer.
func (s *Server) reset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.t.Errorf("llmtest: take over the connection to reset it: %v", err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		// No linger: closing sends RST rather than an orderly FIN.
		tc.SetLinger(0)
	}
	conn.Close()
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	typ := "server_error"
	if status < 500 {
		typ = "invalid_request_error"
	}
	json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil},
	})
}

// completion renders a reply as a chat.completion object.
func completion(n int, req ChatRequest, r Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if r.Content != "" || len(r.ToolCalls) == 0 {
		msg["content"] = r.Content
	}
	finish := r.FinishReason
	if len(r.ToolCalls) > 0 {
		var calls []map[string]any
		for _, tc := range r.ToolCalls {
			c := map[string]any{
				"id":       tc.ID,
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			}
			if !r.OmitToolType {
				c["type"] = "function"
			}
			calls = append(calls, c)
		}
		msg["tool_calls"] = calls
		if finish == "" {
			finish = "tool_calls"
		}
	}
	if finish == "" {
		finish = "stop"
	}
	prompt, compl := r.PromptTokens, r.CompletionTokens
	if prompt == 0 && compl == 0 {
		// Rough counts like a real server's, so usage is never absent.
		prompt = int64(len(fmt.Sprint(req.Messages)))/4 + 1
		compl = int64(len(r.Content))/4 + int64(len(r.ToolCalls))*10 + 1
	}
	usage := map[string]any{
		"prompt_tokens":     prompt,
		"completion_tokens": compl,
		"total_tokens":      prompt + compl,
	}
	if r.CachedTokens > 0 {
		usage["prompt_tokens_details"] = map[string]any{"cached_tokens": min(r.CachedTokens, prompt)}
	}
	if r.Cost != nil {
		usage["cost"] = *r.Cost
	}
	model := req.Model
	if model == "" {
		model = "test-model"
	}
	out := map[string]any{
		"id":      fmt.Sprintf("chatcmpl-%d", n),
		"object":  "chat.completion",
		"created": 1700000000 + n,
		"model":   model,
		"choices": []map[string]any{{
			"index": 0, "finish_reason": finish, "logprobs": nil, "message": msg,
		}},
		"usage": usage,
	}
	if r.OmitUsage {
		delete(out, "usage")
	}
	return out
}
