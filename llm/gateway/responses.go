package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/mediated-coevo/harness/llm"
)

// responsesRequest is the part of a Responses API request the gateway reads.
type responsesRequest struct {
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []struct {
		Type        string         `json:"type"`
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	Stream     bool            `json:"stream"`
}

type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

func (in responsesRequest) request() llm.Request {
	var req llm.Request
	if in.Instructions != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: in.Instructions})
	}
	var s string
	if json.Unmarshal(in.Input, &s) == nil {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: s})
	} else {
		var items []responsesItem
		_ = json.Unmarshal(in.Input, &items)
		for _, it := range items {
			req.Messages = appendItem(req.Messages, it)
		}
	}
	for _, t := range in.Tools {
		if t.Type == "function" {
			req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
		}
	}
	req.ToolChoice = toolChoice(in.ToolChoice)
	return req
}

// appendItem adds one input item: a function call joins the assistant
// message before it, so a turn of parallel calls stays one message.
func appendItem(msgs []llm.Message, it responsesItem) []llm.Message {
	switch it.Type {
	case "function_call":
		tc := llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}
		if n := len(msgs); n > 0 && msgs[n-1].Role == llm.RoleAssistant {
			msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, tc)
			return msgs
		}
		return append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{tc}})
	case "function_call_output":
		return append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: it.CallID, Content: text(it.Output)})
	case "message", "":
		role := it.Role
		if role == "developer" {
			role = llm.RoleSystem
		}
		return append(msgs, llm.Message{Role: role, Content: text(it.Content)})
	}
	return msgs // reasoning and other items carry nothing the provider takes
}

// responsesOutput is the answer as output items.
func responsesOutput(id string, m llm.Message) []map[string]any {
	var out []map[string]any
	if m.Content != "" {
		out = append(out, map[string]any{"type": "message", "id": id + "_msg", "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": m.Content, "annotations": []any{}}}})
	}
	for _, tc := range m.ToolCalls {
		out = append(out, map[string]any{"type": "function_call", "id": id + "_" + tc.ID, "call_id": tc.ID, "name": tc.Name,
			"arguments": tc.Arguments, "status": "completed"})
	}
	return out
}

func (g *Gateway) responses(w http.ResponseWriter, r *http.Request) {
	var in responsesRequest
	if !g.decode(w, r, &in) {
		return
	}
	id := g.callID("resp")
	resp, ok := g.complete(w, r, in.request(), in.Stream)
	if !ok {
		return
	}
	output := responsesOutput(id, resp.Message)
	body := map[string]any{"id": id, "object": "response", "created_at": time.Now().Unix(), "model": g.Client.Model,
		"status": "completed", "output": output, "usage": map[string]any{"input_tokens": resp.Usage.InputTokens,
			"output_tokens": resp.Usage.OutputTokens, "total_tokens": resp.Usage.Tokens(),
			"input_tokens_details": map[string]any{"cached_tokens": resp.Usage.CachedInputTokens}}}
	if !in.Stream {
		writeJSON(w, body)
		return
	}
	s := startSSE(w)
	seq := 0
	emit := func(kind string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = kind, seq
		seq++
		s.event(kind, fields)
	}
	emit("response.created", map[string]any{"response": map[string]any{"id": id, "object": "response", "status": "in_progress", "model": g.Client.Model, "output": []any{}}})
	for i, item := range output {
		emit("response.output_item.added", map[string]any{"output_index": i, "item": item})
		if item["type"] == "message" {
			emit("response.output_text.delta", map[string]any{"output_index": i, "item_id": item["id"], "content_index": 0, "delta": resp.Message.Content})
			emit("response.output_text.done", map[string]any{"output_index": i, "item_id": item["id"], "content_index": 0, "text": resp.Message.Content})
		} else {
			emit("response.function_call_arguments.done", map[string]any{"output_index": i, "item_id": item["id"], "arguments": item["arguments"]})
		}
		emit("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	emit("response.completed", map[string]any{"response": body})
}
