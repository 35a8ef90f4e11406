package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/llm"
)

// chatRequest is the part of a chat-completions request the gateway reads.
type chatRequest struct {
	Messages   []chatMessage   `json:"messages"`
	Tools      []chatTool      `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	Stream     bool            `json:"stream"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Name       string          `json:"name,omitempty"`
}

type chatToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

// text reads a content that is a string, or a list of parts whose text
// parts are joined (images and other parts are dropped).
func text(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Text != "" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// toolChoice maps a chat or responses tool_choice to llm's.
func toolChoice(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "auto" {
			return ""
		}
		return s
	}
	var obj struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		if obj.Function.Name != "" {
			return obj.Function.Name
		}
		return obj.Name
	}
	return ""
}

func (c chatRequest) request() llm.Request {
	var req llm.Request
	for _, m := range c.Messages {
		role := m.Role
		if role == "developer" {
			role = llm.RoleSystem
		}
		msg := llm.Message{Role: role, Content: text(m.Content), ToolCallID: m.ToolCallID, Name: m.Name}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range c.Tools {
		req.Tools = append(req.Tools, llm.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	req.ToolChoice = toolChoice(c.ToolChoice)
	return req
}

func chatFinish(resp llm.Response) string {
	if len(resp.Message.ToolCalls) > 0 {
		return "tool_calls"
	}
	if resp.FinishReason == "length" || resp.FinishReason == "max_tokens" {
		return "length"
	}
	return "stop"
}

func chatToolCalls(calls []llm.ToolCall, withIndex bool) []map[string]any {
	var out []map[string]any
	for i, tc := range calls {
		m := map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}}
		if withIndex {
			m["index"] = i
		}
		out = append(out, m)
	}
	return out
}

func chatUsage(u llm.Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.Tokens(),
		"prompt_tokens_details": map[string]any{"cached_tokens": u.CachedInputTokens}}
}

func (g *Gateway) chat(w http.ResponseWriter, r *http.Request) {
	var in chatRequest
	if !g.decode(w, r, &in) {
		return
	}
	id := g.callID("chatcmpl")
	resp, ok := g.complete(w, r, in.request(), in.Stream)
	if !ok {
		return
	}
	created := time.Now().Unix()
	msg := map[string]any{"role": "assistant", "content": resp.Message.Content}
	if len(resp.Message.ToolCalls) > 0 {
		msg["tool_calls"] = chatToolCalls(resp.Message.ToolCalls, false)
	}
	if !in.Stream {
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": g.Client.Model,
			"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": chatFinish(resp)}}, "usage": chatUsage(resp.Usage)})
		return
	}
	s := startSSE(w)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": g.Client.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if resp.Message.Content != "" {
		s.event("", chunk(map[string]any{"content": resp.Message.Content}, nil))
	}
	if len(resp.Message.ToolCalls) > 0 {
		s.event("", chunk(map[string]any{"tool_calls": chatToolCalls(resp.Message.ToolCalls, true)}, nil))
	}
	s.event("", chunk(map[string]any{}, chatFinish(resp)))
	s.event("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": g.Client.Model,
		"choices": []any{}, "usage": chatUsage(resp.Usage)})
	s.done()
}
