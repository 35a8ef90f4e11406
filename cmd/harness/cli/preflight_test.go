package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// preflightConfig writes a configuration whose every role calls the
// endpoint at url with no key, and returns its folder.
func preflightConfig(t *testing.T, url string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "[executor_runtime]\ntask_cache_dir = %q\n", t.TempDir())
	for _, role := range conditions.ModelRoles() {
		fmt.Fprintf(&b, "[models.%s]\nbase_url = %q\napi_key_env = \"\"\nmodel = \"test/%s\"\nmax_retries = 0\ncontext_tokens = 65536\n", role, url, role)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "default.toml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// closedURL is an API root on a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/v1"
	l.Close()
	return url
}

// The run checks its endpoints before anything is created: an unreachable
// one exits 2 naming the roles, the model and the URL, and the run never
// starts; a live one passes; --no-preflight skips the check.
func TestRunPreflightChecksEndpointsBeforeCreatingAnything(t *testing.T) {
	live := llmtest.NewServer(t)
	tests := []struct {
		name      string
		url       string
		extra     []string
		wantCode  int
		wantStart bool
		wantLists int
	}{
		{"unreachable", closedURL(t), nil, ExitUsage, false, 0},
		{"fake server", live.URL(), nil, ExitOK, true, 3}, // planner, executor, mediator
		{"unreachable, --no-preflight", closedURL(t), []string{"--no-preflight"}, ExitOK, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := live.ModelLists()
			started := false
			f := testFactory()
			f.Preflight = providers.Preflight
			f.Execute = func(context.Context, *ValidatedPlan) error { started = true; return nil }
			out := filepath.Join(t.TempDir(), "runs")
			args := append([]string{"run", "--tasks", "orbital-period", "--iterations", "1", "--condition", "static_mediator",
				"--skill-updates", "none", "--config-dir", preflightConfig(t, tt.url), "--out", out}, tt.extra...)
			r := runCLI(t, f, args...)
			if r.code != tt.wantCode || started != tt.wantStart {
				t.Fatalf("exit %d, started %v; want %d, %v\n%s", r.code, started, tt.wantCode, tt.wantStart, r.errOut)
			}
			if got := live.ModelLists() - before; got != tt.wantLists {
				t.Errorf("%d model lists, want %d", got, tt.wantLists)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("the output folder exists (%v)", err)
			}
			if tt.wantCode == ExitUsage {
				for _, want := range []string{"preflight", "planner", "executor", "mediator", "test/planner", tt.url, "--no-preflight"} {
					if !strings.Contains(r.errOut, want) {
						t.Errorf("error lacks %q:\n%s", want, r.errOut)
					}
				}
			}
		})
	}
	if live.Count() != 0 {
		t.Errorf("the preflight made %d chat calls against an endpoint with a models list", live.Count())
	}
}

// The command prints the prices a switched endpoint dropped.
func TestRunSaysWhenPricesAreDropped(t *testing.T) {
	dir := t.TempDir()
	layer := "[models.planner]\nbase_url = \"http://localhost:8000/v1\"\n"
	if err := os.WriteFile(filepath.Join(dir, "default.toml"), []byte(layer), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "run", "--tasks", "orbital-period", "--offline", "--dry-run", "--config-dir", dir)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	if !strings.Contains(r.errOut, "warning: ") || !strings.Contains(r.errOut, "[models.planner]") || !strings.Contains(r.errOut, "price_output_per_mtok") {
		t.Errorf("stderr does not warn of the dropped prices:\n%s", r.errOut)
	}
}
