package cli

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor/docker"
)

// testFactory has no sandbox engine and no model providers: the commands
// that read (tasks, skills, inspect, report, plans) work as in the program,
// and run and matrix stop after validation.
// Its environment has a placeholder for every unset *_API_KEY, so plans
// that name a model key pass the key check; TestDryRunRefusesMissingAPIKeys
// takes them away.
func testFactory() *Factory {
	return &Factory{Now: time.Now, Getenv: withPlaceholderKeys(os.Getenv), Resolver: benchmarks.NewResolver}
}

func withPlaceholderKeys(getenv func(string) string) func(string) string {
	return func(name string) string {
		if v := getenv(name); v != "" || !strings.HasSuffix(name, "_API_KEY") {
			return v
		}
		return "placeholder"
	}
}

// engineFactory adds the Docker engine and the configured model providers,
// as the program wires them (cmd/harness/factory).
func engineFactory() *Factory {
	f := testFactory()
	f.Getenv = os.Getenv // real model calls need real keys
	f.Sandbox = func(ctx context.Context, rt config.ExecutorRuntime) (SandboxBackend, error) {
		d, err := docker.New(ctx, rt)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	f.Providers = providers.New
	f.Preflight = providers.Preflight
	return f
}
