package llm

import (
	"context"
	"encoding/json"
	"fmt"
)

// Offline answers calls deterministically, without network or key. It does
// not know what any call is for: the code that makes a call attaches the
// Player that answers it (Client.WithPlayer), so each agent owns its offline
// behaviour and no request carries inputs meant only for this provider.
// Offline answers exercise the machinery and are never evidence.
type Offline struct {
	seed int64
}

// A Player answers one call in place of a model, deterministically from the
// provider's seed and the request. It must return a message of the shape the
// call asks for (a JSON object for a schema, tool calls for a tool turn).
type Player func(seed int64, req Request) (Message, error)

// NewOffline returns an offline provider.
func NewOffline(seed int64) *Offline { return &Offline{seed: seed} }

// WithPlayer returns a copy of c whose calls an offline provider answers
// through p. A provider backed by a real model ignores p, so callers attach
// their player on every call without asking which provider they have.
func (c *Client) WithPlayer(p Player) *Client {
	if c == nil {
		return nil
	}
	cp := *c
	cp.player = p
	return &cp
}

// Offline reports true.
func (o *Offline) Offline() bool { return true }

// Complete answers req through the player its client attached. The same
// request and seed always give the same response; a call with no player is
// refused, since the provider cannot know what shape of answer it wants.
func (o *Offline) Complete(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	if req.player == nil {
		return Response{}, fmt.Errorf("offline provider: no player answers calls of kind %q; attach one with Client.WithPlayer", req.Kind)
	}
	msg, err := req.player(o.seed, req)
	if err != nil {
		return Response{}, fmt.Errorf("offline answer for %s: %w", req.Caller, err)
	}
	if msg.Role == "" {
		msg.Role = RoleAssistant
	}
	finish := "stop"
	if len(msg.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	u := Usage{
		InputTokens:  int64(EstimateTokens(req.Messages)),
		OutputTokens: int64(estimateTokens(msg)),
		CostKnown:    true,
		Calls:        1,
	}
	return Response{Message: msg, Usage: u, FinishReason: finish, Model: "offline", Attempts: 1}, nil
}

// JSONAnswer is a Player's answer to a structured call: v as a JSON object.
func JSONAnswer(v any) (Message, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Message{}, fmt.Errorf("encode offline answer: %w", err)
	}
	return Message{Role: RoleAssistant, Content: string(b)}, nil
}
