package llm

import (
	"context"
	"fmt"
	"slices"
)

// Structured asks for a structured answer of type T (req.Schema should
// describe it), decodes it and validates it with validate, or with T's own
// Validate method when validate is nil. A malformed or invalid answer is
// asked for once more with the problem explained; if that fails too,
// fallback is returned with fellBack set, for the caller to count. Model
// and budget errors are returned as errors (with T's zero value), never
// fallen back. Each call is recorded as Complete records it, with why an
// answer was unusable and, on the last, that the fallback replaced it.
func Structured[T any](ctx context.Context, c *Client, req Request, validate func(T) error, fallback T) (v T, fellBack bool, err error) {
	name := req.SchemaName
	if name == "" {
		name = "requested"
	}
	for attempt := 0; attempt < 2; attempt++ {
		resp, rec, err := c.call(ctx, req)
		if err != nil {
			c.record(rec)
			var zero T
			return zero, false, err
		}
		var got T
		problem := DecodeJSON(resp.Message.Content, &got)
		if problem == nil {
			problem = check(got, validate)
		}
		if problem == nil {
			c.record(rec)
			return got, false, nil
		}
		rec.Unusable = problem.Error()
		rec.Fallback = attempt == 1
		c.record(rec)
		req.Messages = append(slices.Clip(req.Messages),
			Message{Role: RoleAssistant, Content: resp.Message.Content},
			Message{Role: RoleUser, Content: fmt.Sprintf(
				"Your answer could not be used: %v. Answer again with only a JSON object that matches the %s schema.", problem, name)})
	}
	return fallback, true, nil
}

func check[T any](v T, validate func(T) error) error {
	if validate != nil {
		return validate(v)
	}
	if val, ok := any(v).(interface{ Validate() error }); ok {
		return val.Validate()
	}
	return nil
}
