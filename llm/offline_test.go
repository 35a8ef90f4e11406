package llm_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm"
)

func TestOfflineRefusesCallsWithoutPlayer(t *testing.T) {
	_, err := llm.NewOffline(1).Complete(context.Background(), llm.Request{Kind: "poem"})
	if err == nil || !strings.Contains(err.Error(), `kind "poem"`) {
		t.Errorf("err = %v", err)
	}
}

// recorder stands for a provider that wraps the offline one and passes
// requests on.
type recorder struct {
	llm.Provider
	kinds []llm.Kind
}

func (r *recorder) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	r.kinds = append(r.kinds, req.Kind)
	return r.Provider.Complete(ctx, req)
}

func TestOfflinePlayerReachesTheProviderThroughWrappers(t *testing.T) {
	rec := &recorder{Provider: llm.NewOffline(7)}
	var seeds []int64
	c := (&llm.Client{Provider: rec}).WithPlayer(func(seed int64, req llm.Request) (llm.Message, error) {
		seeds = append(seeds, seed)
		return llm.JSONAnswer(map[string]string{"kind": string(req.Kind)})
	})
	resp, err := c.Complete(context.Background(), llm.Request{Kind: "poem", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != `{"kind":"poem"}` || resp.Message.Role != llm.RoleAssistant || !slices.Equal(seeds, []int64{7}) {
		t.Errorf("answer %+v, player seeds %v; want the player's answer with the provider's seed", resp.Message, seeds)
	}
	if len(rec.kinds) != 1 {
		t.Errorf("the wrapper saw %d calls, want 1", len(rec.kinds))
	}
}
