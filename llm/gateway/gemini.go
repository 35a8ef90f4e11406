package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/mediated-coevo/harness/llm"
)

// geminiRequest is the part of a Gemini API generateContent request the
// gateway reads. The REST API accepts both spellings of the system
// instruction.
type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	SystemSnake       *geminiContent  `json:"system_instruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
			// JSONSchema is the plain JSON Schema form newer clients send.
			JSONSchema map[string]any `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig *struct {
		FunctionCallingConfig struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text    string `json:"text"`
	Thought bool   `json:"thought"`
	Call    *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	Result *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

func (in geminiRequest) request() llm.Request {
	var req llm.Request
	sys := in.SystemInstruction
	if sys == nil {
		sys = in.SystemSnake
	}
	if sys != nil {
		if s := geminiText(sys.Parts); s != "" {
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: s})
		}
	}
	ids := callIDs{pending: map[string][]string{}}
	for i, c := range in.Contents {
		req.Messages = append(req.Messages, ids.messages(i, c)...)
	}
	for _, t := range in.Tools {
		for _, f := range t.FunctionDeclarations {
			params := f.JSONSchema
			if params == nil {
				params, _ = lowerTypes(f.Parameters).(map[string]any)
			}
			req.Tools = append(req.Tools, llm.Tool{Name: f.Name, Description: f.Description, Parameters: params})
		}
	}
	if tc := in.ToolConfig; tc != nil {
		fc := tc.FunctionCallingConfig
		switch strings.ToUpper(fc.Mode) {
		case "ANY":
			req.ToolChoice = "required"
			if len(fc.AllowedFunctionNames) == 1 {
				req.ToolChoice = fc.AllowedFunctionNames[0]
			}
		case "NONE":
			req.ToolChoice = "none"
		}
	}
	return req
}

// callIDs pairs function calls with their responses. Gemini's calls may
// come without ids (a response is matched to its call by name), while the
// providers need one on both sides: a call without one gets an id from its
// place in the conversation, which the agent resends whole with every
// call, so the same call keeps the same id from one call to the next.
type callIDs struct {
	pending map[string][]string // function name -> ids of calls not yet answered
}

// messages maps one content: function responses become tool messages
// (before the user's text of the same turn), function calls the
// assistant's tool calls. Thoughts are dropped, like reasoning elsewhere.
func (ids callIDs) messages(i int, c geminiContent) []llm.Message {
	role := llm.RoleUser
	if c.Role == "model" {
		role = llm.RoleAssistant
	}
	var out []llm.Message
	main := llm.Message{Role: role}
	for j, p := range c.Parts {
		switch {
		case p.Call != nil:
			id := p.Call.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", i, j)
			}
			ids.pending[p.Call.Name] = append(ids.pending[p.Call.Name], id)
			args := string(p.Call.Args)
			if args == "" || args == "null" {
				args = "{}"
			}
			main.ToolCalls = append(main.ToolCalls, llm.ToolCall{ID: id, Name: p.Call.Name, Arguments: args})
		case p.Result != nil:
			id := ids.answer(p.Result.Name, p.Result.ID)
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", i, j)
			}
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: p.Result.Name, Content: resultText(p.Result.Response)})
		case p.Text != "" && !p.Thought:
			if main.Content != "" {
				main.Content += "\n"
			}
			main.Content += p.Text
		}
	}
	if main.Content != "" || len(main.ToolCalls) > 0 {
		out = append(out, main)
	}
	return out
}

// answer takes the call a response answers: the one of its id, else the
// first unanswered call of its name.
func (ids callIDs) answer(name, id string) string {
	q := ids.pending[name]
	for k, p := range q {
		if id == "" || p == id {
			ids.pending[name] = append(q[:k:k], q[k+1:]...)
			return p
		}
	}
	return id
}

func geminiText(parts []geminiPart) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Text != "" && !p.Thought {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// resultText is a function response as the model reads it: the one string
// it holds (its output), else its JSON.
func resultText(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && len(obj) == 1 {
		for k, v := range obj {
			var s string
			if json.Unmarshal(v, &s) == nil {
				if k == "error" {
					return "error: " + s
				}
				return s
			}
		}
	}
	return string(raw)
}

// lowerTypes rewrites a Gemini schema's type names (OBJECT, STRING, ...)
// as JSON Schema's, which the providers expect.
func lowerTypes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if s, ok := e.(string); ok && k == "type" {
				out[k] = strings.ToLower(s)
				continue
			}
			out[k] = lowerTypes(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = lowerTypes(e)
		}
		return out
	}
	return v
}

// geminiParts is the answer as content parts; a call's arguments that are
// not a JSON object are passed as an empty one, which the format requires.
func geminiParts(m llm.Message) []map[string]any {
	var out []map[string]any
	if m.Content != "" {
		out = append(out, map[string]any{"text": m.Content})
	}
	for _, tc := range m.ToolCalls {
		var args map[string]any
		if json.Unmarshal([]byte(tc.Arguments), &args) != nil || args == nil {
			args = map[string]any{}
		}
		out = append(out, map[string]any{"functionCall": map[string]any{"id": tc.ID, "name": tc.Name, "args": args}})
	}
	if len(out) == 0 {
		out = append(out, map[string]any{"text": ""})
	}
	return out
}

func geminiFinish(resp llm.Response) string {
	if resp.FinishReason == "length" || resp.FinishReason == "max_tokens" {
		return "MAX_TOKENS"
	}
	return "STOP" // also after function calls: Gemini has no reason of its own for them
}

func (g *Gateway) geminiBody(id string, resp llm.Response) map[string]any {
	return map[string]any{
		"candidates": []map[string]any{{"index": 0, "finishReason": geminiFinish(resp),
			"content": map[string]any{"role": "model", "parts": geminiParts(resp.Message)}}},
		"usageMetadata": map[string]any{"promptTokenCount": resp.Usage.InputTokens, "candidatesTokenCount": resp.Usage.OutputTokens,
			"totalTokenCount": resp.Usage.Tokens(), "cachedContentTokenCount": resp.Usage.CachedInputTokens},
		"modelVersion": g.Client.Model, "responseId": id,
	}
}

// gemini serves POST /v1beta/models/{model}:{method}: generateContent,
// streamGenerateContent (server-sent events with alt=sse, else one JSON
// array) and countTokens. The model in the path is the agent's choice;
// the call goes to the role's model whatever it names.
func (g *Gateway) gemini(w http.ResponseWriter, r *http.Request) {
	_, method, _ := strings.Cut(r.PathValue("call"), ":")
	var stream bool
	switch method {
	case "generateContent":
	case "streamGenerateContent":
		stream = true
	case "countTokens":
		g.geminiCountTokens(w, r)
		return
	default:
		g.fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("method %q is not served: use generateContent, streamGenerateContent or countTokens", method))
		return
	}
	var in geminiRequest
	if !g.decode(w, r, &in) {
		return
	}
	id := g.callID("resp")
	resp, ok := g.complete(w, r, in.request(), stream)
	if !ok {
		return
	}
	body := g.geminiBody(id, resp)
	switch {
	case !stream:
		writeJSON(w, body)
	case r.URL.Query().Get("alt") == "sse":
		startSSE(w).event("", body)
	default:
		writeJSON(w, []any{body})
	}
}

// geminiCountTokens estimates a request's input tokens without a model
// call (a quarter of its characters). The body is the contents, or a
// whole generateContent request under generateContentRequest.
func (g *Gateway) geminiCountTokens(w http.ResponseWriter, r *http.Request) {
	var in struct {
		geminiRequest
		Wrapped *geminiRequest `json:"generateContentRequest"`
	}
	if !g.decode(w, r, &in) {
		return
	}
	req := in.geminiRequest
	if in.Wrapped != nil {
		req = *in.Wrapped
	}
	n := 0
	for _, m := range req.request().Messages {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Arguments)
		}
	}
	writeJSON(w, map[string]any{"totalTokens": max(n/4, 1)})
}

func (g *Gateway) geminiModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"models": []map[string]any{{"name": "models/" + g.Client.Model, "displayName": g.Client.Model,
		"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"}}}})
}

// googleStatus is the status name Google's error bodies carry with a code.
func googleStatus(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	}
	return "UNAVAILABLE"
}
