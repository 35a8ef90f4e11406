package harness

import (
	"fmt"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
)

// Clients holds one model client per role, all charging one ledger.
type Clients struct {
	byRole  map[conditions.Role]*llm.Client
	offline bool
}

// NewClients builds a client for every role of the configuration, each on a
// provider from providers. seed feeds the offline provider. calls, when not
// nil, is given a record of every call of every client (see CallLog).
// conns, when not nil, caps the calls in flight per model (max_connections)
// across every client built with it.
func NewClients(cfg *config.Config, ledger *llm.Ledger, seed int64, providers ProviderFunc, calls llm.CallRecorder, conns *llm.Connections) (*Clients, error) {
	c := &Clients{byRole: map[conditions.Role]*llm.Client{}, offline: true}
	redactor := cfg.Redactor()
	for _, role := range conditions.ModelRoles() {
		m, err := cfg.Model(role)
		if err != nil {
			return nil, err
		}
		p, err := providers(m, seed)
		if err != nil {
			return nil, fmt.Errorf("model for role %s: %w", role, err)
		}
		if !p.Offline() {
			c.offline = false
		}
		gate, err := conns.For(string(role), m)
		if err != nil {
			return nil, err
		}
		c.byRole[role] = &llm.Client{Provider: p, Ledger: ledger, Role: string(role), Model: m.RecordedName(role), Recorder: calls,
			Redactor: redactor, Gate: gate}
	}
	return c, nil
}

// Get returns the client of a role; every configured role has one.
func (c *Clients) Get(role conditions.Role) *llm.Client { return c.byRole[role] }

// Offline reports whether every role is played by the offline provider.
func (c *Clients) Offline() bool { return c.offline }
