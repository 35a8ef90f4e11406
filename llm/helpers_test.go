package llm_test

import (
	"context"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/openaiapi"
)

func ptr[T any](v T) *T { return &v }

var listTool = llm.Tool{
	Name:        "list_dir",
	Description: "List a directory.",
	Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}},
		"required":   []string{"path"},
	},
}

var submitTool = llm.Tool{
	Name:        "submit",
	Description: "Finish.",
	Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"summary": map[string]any{"type": "string"}},
		"required":   []string{"summary"},
	},
}

// serverProvider is a provider for the fake endpoint at url (llmtest's
// server), with up to two retries that do not wait: the loop and the call
// records are tested on what a real endpoint sends.
func serverProvider(t *testing.T, url string) llm.Provider {
	t.Helper()
	m := config.Model{Provider: config.ProviderOpenAI, BaseURL: url, Model: "test-model", MaxRetries: 2,
		Timeout: config.Duration{Duration: 5 * time.Second}}
	noWait := func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	p, err := openaiapi.New(m, openaiapi.WithBackoff(openaiapi.Backoff{Sleep: noWait}))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
