package llm_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
)

// inFlight is a provider that counts its calls in flight and remembers the
// most it saw at once.
type inFlight struct {
	now, most atomic.Int32
	hold      time.Duration
}

func (p *inFlight) Complete(ctx context.Context, _ llm.Request) (llm.Response, error) {
	n := p.now.Add(1)
	defer p.now.Add(-1)
	for {
		m := p.most.Load()
		if n <= m || p.most.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-time.After(p.hold):
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok"}, Attempts: 1}, nil
}

func (p *inFlight) Offline() bool { return false }

func TestMaxConnectionsCapsCallsAcrossClients(t *testing.T) {
	model := func(max int) config.Model {
		return config.Model{Provider: config.ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1", Model: "m", MaxConnections: max}
	}
	tests := []struct {
		name     string
		max      int
		wantMost int32
	}{
		{"cap of 2 over two roles", 2, 2},
		{"cap of 1", 1, 1},
		// Without a cap more calls overlap than any cap above allows.
		{"no cap", 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conns := llm.NewConnections()
			p := &inFlight{hold: 50 * time.Millisecond}
			var clients []*llm.Client
			for _, role := range []string{"planner", "mediator"} {
				g, err := conns.For(role, model(tt.max))
				if err != nil {
					t.Fatal(err)
				}
				clients = append(clients, &llm.Client{Provider: p, Role: role, Gate: g})
			}
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					if _, err := clients[i%2].Complete(context.Background(), llm.Request{}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			got := p.most.Load()
			if (tt.max > 0 && got != tt.wantMost) || got < tt.wantMost {
				t.Errorf("at most %d calls in flight; want %d", got, tt.wantMost)
			}
		})
	}
}

func TestMaxConnectionsWaitEndsWithContext(t *testing.T) {
	conns := llm.NewConnections()
	m := config.Model{Provider: config.ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1", Model: "m", MaxConnections: 1}
	g, err := conns.For("planner", m)
	if err != nil {
		t.Fatal(err)
	}
	p := &inFlight{hold: time.Minute}
	c := &llm.Client{Provider: p, Role: "planner", Gate: g}
	busy, stop := context.WithCancel(context.Background())
	defer stop()
	go c.Complete(busy, llm.Request{})
	for p.now.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = c.Complete(ctx, llm.Request{})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "max_connections 1") {
		t.Errorf("err = %v; want the wait for a connection to end with the context", err)
	}
}

func TestMaxConnectionsMustAgreePerModel(t *testing.T) {
	conns := llm.NewConnections()
	m := config.Model{Provider: config.ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1", Model: "m", MaxConnections: 2}
	if _, err := conns.For("planner", m); err != nil {
		t.Fatal(err)
	}
	other := m
	other.Model = "n"
	other.MaxConnections = 5
	if g, err := conns.For("executor", other); err != nil || g.Limit() != 5 {
		t.Errorf("another model: gate %v, err %v; want its own cap of 5", g, err)
	}
	m.MaxConnections = 3
	_, err := conns.For("mediator", m)
	if err == nil || !strings.Contains(err.Error(), "models.planner and models.mediator") {
		t.Errorf("err = %v; want a conflict naming both roles", err)
	}
}
