package harness

import (
	"fmt"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
)

// Clients holds one model client per role, all charging one ledger.
type Clients struct {
	byRole map[conditions.Role]*llm.Client
	// byModel holds a client for each model only students name
	// ([models.<key>] with a key that is no role), charged as the Executor.
	byModel map[string]*llm.Client
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
		if _, ok := cfg.Models[role]; !ok && role == conditions.RoleJudge && !cfg.Tournament.Active() {
			continue // a run written before the judge existed calls none
		}
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
	return c, c.addStudentModels(cfg, ledger, seed, providers, calls, conns)
}

// addStudentModels builds a client for every model only a student names:
// each student's Executor calls its own model, on its own provider.
func (c *Clients) addStudentModels(cfg *config.Config, ledger *llm.Ledger, seed int64, providers ProviderFunc, calls llm.CallRecorder, conns *llm.Connections) error {
	c.byModel = map[string]*llm.Client{}
	for key, m := range cfg.Models {
		if key.IsModel() {
			continue
		}
		p, err := providers(m, seed)
		if err != nil {
			return fmt.Errorf("model %s of a student: %w", key, err)
		}
		if !p.Offline() {
			c.offline = false
		}
		gate, err := conns.For(string(key), m)
		if err != nil {
			return err
		}
		c.byModel[string(key)] = &llm.Client{Provider: p, Ledger: ledger, Role: string(conditions.RoleExecutor), Model: m.RecordedName(conditions.Role(key)),
			Recorder: calls, Redactor: cfg.Redactor(), Gate: gate}
	}
	return nil
}

// ForModel returns the client of a [models.<key>] entry: a role's, or a
// model only students name; nil when there is none.
func (c *Clients) ForModel(key string) *llm.Client {
	if cl, ok := c.byModel[key]; ok {
		return cl
	}
	return c.byRole[conditions.Role(key)]
}

// Get returns the client of a role; every configured role has one.
func (c *Clients) Get(role conditions.Role) *llm.Client { return c.byRole[role] }

// Offline reports whether every role is played by the offline provider.
func (c *Clients) Offline() bool { return c.offline }
