package cli

import (
	"context"
	"fmt"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/openaiapi"
)

// newProvider builds the providers the program does (the factory's
// NewProvider): tests of this package cannot import the factory, which
// imports this package.
func newProvider(m config.Model, seed int64) (llm.Provider, error) {
	switch m.Provider {
	case config.ProviderOpenAI:
		return openaiapi.New(m)
	case config.ProviderOffline:
		return llm.NewOffline(seed), nil
	}
	return nil, fmt.Errorf("model %q: unknown provider %q", m.Model, m.Provider)
}

// preflightEndpoint checks an endpoint as the factory's Preflight does.
func preflightEndpoint(ctx context.Context, m config.Model) error {
	if m.Provider != config.ProviderOpenAI {
		return nil
	}
	p, err := openaiapi.New(m)
	if err != nil {
		return err
	}
	return p.Preflight(ctx)
}
