package cli

import (
	"context"
	"os"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/llm"
)

// testFactory has no sandbox engine and no model providers: the commands
// that read (tasks, skills, inspect, report, plans) work as in the program,
// and run and matrix stop after validation.
func testFactory() *Factory {
	return &Factory{Now: time.Now, Getenv: os.Getenv, Resolver: benchmarks.NewResolver}
}

// engineFactory adds the Docker engine and the configured model providers,
// as the program wires them (cmd/harness/factory).
func engineFactory() *Factory {
	f := testFactory()
	f.Sandbox = func(ctx context.Context, rt config.ExecutorRuntime) (SandboxBackend, error) {
		d, err := docker.New(ctx, rt)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	f.Providers = llm.NewProvider
	return f
}
