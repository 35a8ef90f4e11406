package llm

import (
	"context"
	"fmt"
	"sync"

	"github.com/mediated-coevo/harness/config"
)

// Connections hands out one gate per model endpoint (provider, base URL
// and model id) whose configuration caps its concurrent calls
// (max_connections). Every client built from one Connections shares its
// gates, so a cap holds across roles and matrix rows that call the same
// model. It is safe for concurrent use.
type Connections struct {
	mu    sync.Mutex
	gates map[string]*Gate
}

// NewConnections returns a registry with no gates yet.
func NewConnections() *Connections { return &Connections{gates: map[string]*Gate{}} }

// Gate caps the calls in flight to one model endpoint.
type Gate struct {
	slots chan struct{}
	// owner names the configuration that set the cap, for errors.
	owner string
}

// For returns the gate of the model role uses, creating it on first use;
// nil when m sets no cap. Two roles on one endpoint must give the same cap.
func (c *Connections) For(role string, m config.Model) (*Gate, error) {
	if c == nil || m.MaxConnections <= 0 || m.Provider == ProviderOffline {
		return nil, nil
	}
	key := m.Provider + " " + m.BaseURL + " " + m.Model
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.gates[key]
	if !ok {
		g = &Gate{slots: make(chan struct{}, m.MaxConnections), owner: role}
		c.gates[key] = g
		return g, nil
	}
	if cap(g.slots) != m.MaxConnections {
		return nil, fmt.Errorf("models.%s and models.%s both call %s at %s but set max_connections %d and %d; "+
			"the cap is shared by every role on that model, so give them the same value", g.owner, role, m.Model, m.BaseURL,
			cap(g.slots), m.MaxConnections)
	}
	return g, nil
}

// Limit is the gate's cap on calls in flight.
func (g *Gate) Limit() int { return cap(g.slots) }

// acquire waits for a free connection and returns its release; a nil
// gate never waits.
func (g *Gate) acquire(ctx context.Context) (release func(), err error) {
	if g == nil {
		return func() {}, nil
	}
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
