// Package providers chooses the model provider a configuration names: the
// offline player or an OpenAI-compatible endpoint. It is the one place that
// builds llm/openaiapi, so the composition root and the tests that stand in
// for it share the same choice.
package providers

import (
	"context"
	"fmt"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/openaiapi"
)

// New builds the provider a model configuration names. seed feeds the
// offline provider; an endpoint takes its seed from the model or the
// request.
func New(m config.Model, seed int64) (llm.Provider, error) {
	switch m.Provider {
	case config.ProviderOpenAI:
		return openaiapi.New(m)
	case config.ProviderOffline:
		return llm.NewOffline(seed), nil
	case "":
		return nil, fmt.Errorf("model %q has no provider; set provider = %q or %q", m.Model, config.ProviderOpenAI, config.ProviderOffline)
	default:
		return nil, fmt.Errorf("model %q: unknown provider %q; use %q (any OpenAI-compatible endpoint) or %q",
			m.Model, m.Provider, config.ProviderOpenAI, config.ProviderOffline)
	}
}

// Preflight checks once that the endpoint of model m answers and accepts
// its key (see openaiapi.Provider.Preflight). The offline provider needs
// no check.
func Preflight(ctx context.Context, m config.Model) error {
	if m.Provider != config.ProviderOpenAI {
		return nil
	}
	p, err := openaiapi.New(m)
	if err != nil {
		return err
	}
	return p.Preflight(ctx)
}
