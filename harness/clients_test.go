package harness

import (
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
)

// Clients built for two rows from one registry share each model's
// connection cap; a model without max_connections gets none.
func TestNewClientsShareModelConnections(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		for role, m := range c.Models {
			m.Provider, m.BaseURL, m.Model, m.MaxConnections = config.ProviderOpenAI, "http://127.0.0.1:1/v1", "shared", 3
			if role == conditions.RoleCompactor {
				m.Model, m.MaxConnections = "uncapped", 0
			}
			c.Models[role] = m
		}
	})
	conns := llm.NewConnections()
	var rows []*Clients
	for range 2 {
		c, err := NewClients(cfg, llm.NewLedger(llm.Limits{}), 1, providers.New, nil, conns)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, c)
	}
	shared := rows[0].Get(conditions.RolePlanner).Gate
	if shared == nil || shared.Limit() != 3 {
		t.Fatalf("planner gate %v; want a cap of 3", shared)
	}
	for i, c := range rows {
		for _, role := range conditions.ModelRoles() {
			g := c.Get(role).Gate
			switch {
			case role == conditions.RoleCompactor && g != nil:
				t.Errorf("row %d: compactor without max_connections has a gate", i)
			case role != conditions.RoleCompactor && g != shared:
				t.Errorf("row %d: %s does not share the model's gate", i, role)
			}
		}
	}

	// Roles on one model that disagree on its cap are refused.
	bad := cfg.Clone()
	m := bad.Models[conditions.RoleMediator]
	m.MaxConnections = 5
	bad.Models[conditions.RoleMediator] = m
	if _, err := NewClients(bad, llm.NewLedger(llm.Limits{}), 1, providers.New, nil, llm.NewConnections()); err == nil ||
		!strings.Contains(err.Error(), "max_connections") {
		t.Errorf("err = %v; want the conflicting caps refused", err)
	}
}

// A role the offline provider plays is named "offline/<role>" by its
// client, which the call log and the trajectories take their model from;
// a role on an endpoint keeps its configured model.
func TestNewClientsNameTheOfflinePlayerAsTheModel(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		m := c.Models[conditions.RoleMediator]
		m.Provider, m.BaseURL, m.Model = config.ProviderOpenAI, "http://127.0.0.1:1/v1", "real/mediator"
		c.Models[conditions.RoleMediator] = m
	})
	c, err := NewClients(cfg, llm.NewLedger(llm.Limits{}), 1, providers.New, nil, llm.NewConnections())
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range conditions.ModelRoles() {
		want := "offline/" + string(role)
		if role == conditions.RoleMediator {
			want = "real/mediator"
		}
		if got := c.Get(role).Model; got != want {
			t.Errorf("%s client names model %q, want %q", role, got, want)
		}
	}
}
