package llm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/config"
)

// Client is a provider bound to a role and a ledger: every call is checked
// against the budget first and charged afterwards.
type Client struct {
	Provider Provider
	// Ledger may be nil: calls are then neither checked nor charged.
	Ledger *Ledger
	// Role is the model role (one of conditions.ModelRoles()); it is the ledger
	// caller when a request names none.
	Role string
	// player answers the client's calls when its provider is offline (see
	// WithPlayer).
	player Player
}

// Complete refuses with an error wrapping ErrBudgetExhausted when the
// budget is spent, otherwise calls the provider and charges the ledger
// under req.Caller (or the client's role).
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	if c == nil || c.Provider == nil {
		return Response{}, fmt.Errorf("model client has no provider")
	}
	if req.Caller == "" {
		req.Caller = c.Role
	}
	if c.player != nil {
		req.player = c.player
	}
	if c.Ledger != nil {
		if err := c.Ledger.Check(); err != nil {
			return Response{}, fmt.Errorf("call for %s refused: %w", req.Caller, err)
		}
	}
	resp, err := c.Provider.Complete(ctx, req)
	if err != nil {
		return Response{}, fmt.Errorf("model call for %s: %w", req.Caller, err)
	}
	if resp.Usage.Calls == 0 {
		resp.Usage.Calls = 1
	}
	if resp.Attempts > 1 {
		resp.Usage.Retries = int64(resp.Attempts - 1)
	}
	if c.Ledger != nil {
		c.Ledger.Charge(req.Caller, resp.Usage)
	}
	return resp, nil
}

// Offline reports whether the client's provider answers synthetically.
func (c *Client) Offline() bool { return c.Provider != nil && c.Provider.Offline() }

// HasPrice reports whether both token prices of a model are configured.
func HasPrice(m config.Model) bool {
	return m.PriceInputPerMTok != nil && m.PriceOutputPerMTok != nil
}

// ValidatePrices refuses a dollar budget when some non-offline model has no
// price, since its spending could not be counted. models maps role to model.
func ValidatePrices(models map[string]config.Model, maxUSD float64) error {
	if maxUSD <= 0 {
		return nil
	}
	roles := slices.Sorted(maps.Keys(models))
	var missing []string
	for _, role := range roles {
		m := models[role]
		if m.Provider == ProviderOffline || HasPrice(m) {
			continue
		}
		missing = append(missing, fmt.Sprintf("model %s for role %s has no price", m.Model, role))
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s; a dollar budget needs prices for every model (set price_input_per_mtok and price_output_per_mtok, or drop the dollar budget)",
			strings.Join(missing, "; "))
	}
	return nil
}
