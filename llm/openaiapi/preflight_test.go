package openaiapi_test

import (
	"net"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm/llmtest"
	"github.com/mediated-coevo/harness/llm/openaiapi"
)

func TestPreflight(t *testing.T) {
	t.Run("models list answers", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		p, err := openaiapi.New(testModel(srv.URL()))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Preflight(t.Context()); err != nil {
			t.Fatalf("preflight against a live endpoint: %v", err)
		}
		if srv.ModelLists() != 1 || srv.Count() != 0 {
			t.Errorf("%d model lists and %d chat calls, want 1 and 0", srv.ModelLists(), srv.Count())
		}
	})
	t.Run("no models list: one token", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		srv.WithoutModelList()
		srv.Push(llmtest.Text("ok"))
		p, err := openaiapi.New(testModel(srv.URL()))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Preflight(t.Context()); err != nil {
			t.Fatalf("preflight: %v", err)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 || reqs[0].Chat.Model != "test-model" || !strings.Contains(string(reqs[0].Raw), `"max_tokens":1`) {
			t.Errorf("chat requests %+v, want one one-token call of test-model", reqs)
		}
	})
	t.Run("key refused", func(t *testing.T) {
		srv := llmtest.NewServer(t)
		srv.WithoutModelList()
		srv.Push(llmtest.Status(401, "invalid api key"))
		p, err := openaiapi.New(testModel(srv.URL()))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Preflight(t.Context()); err == nil || !strings.Contains(err.Error(), "invalid api key") {
			t.Errorf("preflight with a refused key: %v", err)
		}
	})
	t.Run("nothing listens", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + l.Addr().String() + "/v1"
		l.Close()
		p, err := openaiapi.New(testModel(url))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Preflight(t.Context()); err == nil || !strings.Contains(err.Error(), url) {
			t.Errorf("preflight against a closed port: %v", err)
		}
	})
}
