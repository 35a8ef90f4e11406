package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/mediated-coevo/harness/llm"
)

// messagesRequest is the part of an Anthropic messages request the gateway reads.
type messagesRequest struct {
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
	Stream bool `json:"stream"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (in messagesRequest) request() llm.Request {
	var req llm.Request
	if sys := text(in.System); sys != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: sys})
	}
	for _, m := range in.Messages {
		req.Messages = append(req.Messages, anthropicMessages(m.Role, m.Content)...)
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	if tc := in.ToolChoice; tc != nil {
		switch tc.Type {
		case "any":
			req.ToolChoice = "required"
		case "tool":
			req.ToolChoice = tc.Name
		case "none":
			req.ToolChoice = "none"
		}
	}
	return req
}

// anthropicMessages maps one message: tool results become tool messages
// (before the user's text of the same turn), tool uses become the
// assistant's tool calls.
func anthropicMessages(role string, raw json.RawMessage) []llm.Message {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []llm.Message{{Role: role, Content: s}}
	}
	var blocks []contentBlock
	_ = json.Unmarshal(raw, &blocks)
	var out []llm.Message
	main := llm.Message{Role: role}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if main.Content != "" {
				main.Content += "\n"
			}
			main.Content += b.Text
		case "tool_use":
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			main.ToolCalls = append(main.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		case "tool_result":
			content := text(b.Content)
			if b.IsError {
				content = "error: " + content
			}
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: b.ToolUseID, Content: content})
		}
	}
	if main.Content != "" || len(main.ToolCalls) > 0 {
		out = append(out, main)
	}
	return out
}

// anthropicContent is the answer as content blocks; a tool's arguments
// that are not a JSON object are passed as an empty one, which the
// format requires.
func anthropicContent(m llm.Message) []map[string]any {
	var out []map[string]any
	if m.Content != "" {
		out = append(out, map[string]any{"type": "text", "text": m.Content})
	}
	for _, tc := range m.ToolCalls {
		var input map[string]any
		if json.Unmarshal([]byte(tc.Arguments), &input) != nil || input == nil {
			input = map[string]any{}
		}
		out = append(out, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": input})
	}
	return out
}

func stopReason(resp llm.Response) string {
	switch {
	case len(resp.Message.ToolCalls) > 0:
		return "tool_use"
	case resp.FinishReason == "length" || resp.FinishReason == "max_tokens":
		return "max_tokens"
	}
	return "end_turn"
}

func (g *Gateway) messages(w http.ResponseWriter, r *http.Request) {
	var in messagesRequest
	if !g.decode(w, r, &in) {
		return
	}
	id := g.callID("msg")
	resp, ok := g.complete(w, r, in.request(), in.Stream)
	if !ok {
		return
	}
	content := anthropicContent(resp.Message)
	usage := map[string]any{"input_tokens": resp.Usage.InputTokens, "output_tokens": resp.Usage.OutputTokens,
		"cache_read_input_tokens": resp.Usage.CachedInputTokens}
	if !in.Stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": g.Client.Model, "content": content,
			"stop_reason": stopReason(resp), "stop_sequence": nil, "usage": usage})
		return
	}
	s := startSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message",
		"role": "assistant", "model": g.Client.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": resp.Usage.InputTokens, "output_tokens": 0}}})
	for i, b := range content {
		start := map[string]any{"type": "text", "text": ""}
		delta := map[string]any{"type": "text_delta", "text": b["text"]}
		if b["type"] == "tool_use" {
			start = map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}
			args, _ := json.Marshal(b["input"])
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(args)}
		}
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": delta})
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stopReason(resp), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": resp.Usage.OutputTokens}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

// countTokens estimates a request's input tokens without a model call
// (a quarter of its characters), for agents that size their context first.
func (g *Gateway) countTokens(w http.ResponseWriter, r *http.Request) {
	var in messagesRequest
	if !g.decode(w, r, &in) {
		return
	}
	n := 0
	for _, m := range in.request().Messages {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Arguments)
		}
	}
	writeJSON(w, map[string]any{"input_tokens": max(n/4, 1)})
}
