// Package llm is how every agent of the lab talks to a model: the message and
// tool types, the Provider interface and the offline provider that needs no
// network, the budget ledger every call is charged to, and the tool-calling
// loop all agents share. The provider for an OpenAI-compatible endpoint is in
// llm/openaiapi, apart, so that only the program that chooses it carries its
// SDK.
package llm

import (
	"context"
	"encoding/json"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of a transcript.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool-result message.
	Name string `json:"name,omitempty"`
}

// ToolCall is a model's request to call one tool.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text as the model wrote it
}

// Tool describes one tool offered to the model.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"` // JSON Schema of the arguments
}

// Kind labels what a call is for. It is the caller's label: this package
// never interprets it beyond the tool loop's own KindAgentStep, and each
// caller defines the kinds of the calls it makes.
type Kind string

// KindAgentStep labels a tool-calling agent turn, the tool loop's default.
const KindAgentStep Kind = "agent_step"

// Request is one model call.
type Request struct {
	// Caller is the ledger path the call is charged to, e.g. "executor/student-1/code".
	Caller   string    `json:"caller"`
	Kind     Kind      `json:"kind"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
	// ToolChoice is "" (auto), "required", "none", or a tool name to force.
	ToolChoice string `json:"tool_choice,omitempty"`
	// Schema, when set, asks for a JSON object matching it (structured output).
	Schema     map[string]any `json:"schema,omitempty"`
	SchemaName string         `json:"schema_name,omitempty"`
	// Seed is the call's seed; providers that support seeds pass it on.
	Seed int64 `json:"seed"`
	// player is the client's offline player. It travels with the request so
	// that a provider wrapping the offline one (a recorder, a fault
	// injector) still reaches it; real providers ignore it.
	player Player
}

// Usage is what one call consumed.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	// CachedInputTokens is the part of InputTokens the endpoint reported
	// as read from its prompt cache (prompt_tokens_details.cached_tokens).
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	// CostKnown is false when no price is configured and the provider reported none.
	CostKnown bool `json:"cost_known"`
	// Calls is how many model calls this usage covers (1 for one response).
	Calls int64 `json:"calls,omitempty"`
	// Retries counts the extra attempts transient failures cost (429, 5xx,
	// timeouts). What an attempt that failed was charged is in the tokens
	// (see Response.Unreported).
	Retries int64 `json:"retries,omitempty"`
	// Failures counts the calls among Calls that failed for good (retries
	// exhausted, or an error not worth retrying).
	Failures int64 `json:"failures,omitempty"`
	// EstimatedTokens is the part of the tokens that was estimated from the
	// text (a quarter of its characters) because the endpoint reported no usage for it.
	EstimatedTokens int64 `json:"estimated_tokens,omitempty"`
}

// Add returns the sum of two usages. The sum's cost is known only when both
// costs are; an empty usage (no calls, no tokens) does not make it unknown.
func (u Usage) Add(v Usage) Usage {
	switch {
	case u.empty():
		return v
	case v.empty():
		return u
	}
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CostUSD:           u.CostUSD + v.CostUSD,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		CostKnown:         u.CostKnown && v.CostKnown,
		Calls:             u.Calls + v.Calls,
		Retries:           u.Retries + v.Retries,
		Failures:          u.Failures + v.Failures,
		EstimatedTokens:   u.EstimatedTokens + v.EstimatedTokens,
	}
}

// Tokens is input plus output tokens.
func (u Usage) Tokens() int64 { return u.InputTokens + u.OutputTokens }

func (u Usage) empty() bool {
	return u.InputTokens == 0 && u.OutputTokens == 0 && u.CostUSD == 0 && u.Calls == 0 && u.Retries == 0 &&
		u.Failures == 0 && u.EstimatedTokens == 0 && u.CachedInputTokens == 0
}

// Response is a model's answer.
type Response struct {
	Message      Message `json:"message"`
	Usage        Usage   `json:"usage"`
	FinishReason string  `json:"finish_reason,omitempty"`
	Model        string  `json:"model,omitempty"`
	// Attempts is how many HTTP attempts the call took (1 with no retry).
	Attempts int `json:"attempts,omitempty"`
	// Unreported is the estimated cost of attempts the endpoint received
	// but answered without usage: failed attempts (an error status, a
	// timeout, a malformed body, a connection lost after the request was
	// written). It is charged only under ChargeSent (see
	// Limits); what an endpoint did report for a failed attempt is in
	// Usage, and always charged. On a failed call it is all there is.
	Unreported Usage `json:"unreported,omitzero"`
}

// Provider answers model calls. Implementations retry transient failures
// themselves; an error means the call failed for good, and the Response
// returned with it may still say how many Attempts were made.
type Provider interface {
	Complete(ctx context.Context, req Request) (Response, error)
	// Offline reports whether answers are synthetic (offline runs are labelled).
	Offline() bool
}

// DecodeJSON decodes a structured answer, tolerating a fenced code block
// around the JSON object.
func DecodeJSON(content string, v any) error {
	return json.Unmarshal([]byte(stripFence(content)), v)
}
