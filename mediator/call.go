package mediator

import (
	"context"
	"fmt"
	"slices"

	"github.com/mediated-coevo/harness/llm"
)

// call is one structured model call of a role: the prompt it shows, the
// answer it wants, what to do with an unusable answer, and how the offline
// provider answers it.
type call[T any] struct {
	// What names the work for errors, e.g. "plan task t iteration 2".
	What   string
	Kind   llm.Kind
	Caller string
	Seed   int64
	System string
	User   string
	// Schema describes T; SchemaName names it to the model.
	Schema     map[string]any
	SchemaName string
	// Validate checks an answer; nil uses T's own Validate.
	Validate func(T) error
	// Fallback is the answer when the model's output is unusable twice.
	Fallback T
	// Offline is the offline provider's answer, from its seed. It closes
	// over the role's inputs, so no request carries them.
	Offline func(seed int64) T
}

// ask makes the call on client: the rendered prompt as a system and a user
// message, the answer decoded and validated, an unusable answer asked for
// once more and then replaced by the fallback with fellBack set, for the
// caller to count. Model and budget errors are returned, wrapped with what
// was being done, and never fallen back on.
func ask[T any](ctx context.Context, client *llm.Client, c call[T]) (ans T, fellBack bool, err error) {
	req := llm.Request{
		Caller: c.Caller,
		Kind:   c.Kind,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: c.System},
			{Role: llm.RoleUser, Content: c.User},
		},
		Schema:     c.Schema,
		SchemaName: c.SchemaName,
		Seed:       c.Seed,
	}
	play := func(seed int64, _ llm.Request) (llm.Message, error) { return llm.JSONAnswer(c.Offline(seed)) }
	ans, fellBack, err = llm.Structured(ctx, client.WithPlayer(play), req, c.Validate, c.Fallback)
	if err != nil {
		var zero T
		return zero, false, fmt.Errorf("%s: %w", c.What, err)
	}
	return ans, fellBack, nil
}

// objectSchema is a strict-mode JSON Schema of an object: every property
// required, no others.
func objectSchema(props map[string]any) map[string]any {
	req := make([]string, 0, len(props))
	for k := range props {
		req = append(req, k)
	}
	slices.Sort(req)
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             req,
		"additionalProperties": false,
	}
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

func boolean() map[string]any { return map[string]any{"type": "boolean"} }
