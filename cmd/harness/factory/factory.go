// Package factory is the composition root of the harness command: it
// builds the concrete things the commands of package cli work with (the
// sandbox backend on one Docker engine or several, and its garbage collector, the task resolver, the
// model providers, the clock, the environment and the streams).
package factory

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/cmd/harness/cli"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/harness/launch"
	"github.com/mediated-coevo/harness/llm/providers"
)

// New returns the factory of the real program, on the process's streams.
func New() *cli.Factory {
	return &cli.Factory{
		IO:        cli.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		Now:       time.Now,
		Getenv:    os.Getenv,
		Resolver:  benchmarks.NewResolver,
		Sandbox:   openSandbox,
		Collector: openCollector,
		Providers: providers.New,
		Preflight: providers.Preflight,

		// Slurm's own commands and this binary, for matrix --launcher slurm.
		Scheduler:  launch.Exec{},
		Executable: os.Executable,
	}
}

// openSandbox connects to the sandbox backend [executor_runtime] selects:
// the Docker engine docker_host names, or every engine of docker_hosts.
func openSandbox(ctx context.Context, rt config.ExecutorRuntime) (cli.SandboxBackend, error) {
	if err := checkBackend(rt); err != nil {
		return nil, err
	}
	if len(rt.DockerHosts) > 0 {
		e, err := docker.NewEngines(ctx, rt)
		if err != nil {
			return nil, err // never a nil *Engines inside a non-nil interface
		}
		return e, nil
	}
	d, err := docker.New(ctx, rt)
	if err != nil {
		return nil, err // never a nil *Docker inside a non-nil interface
	}
	return d, nil
}

// openCollector connects to the same engines for `harness gc`.
func openCollector(ctx context.Context, rt config.ExecutorRuntime) (cli.Collector, error) {
	if err := checkBackend(rt); err != nil {
		return nil, err
	}
	if len(rt.DockerHosts) > 0 {
		e, err := docker.NewEngines(ctx, rt)
		if err != nil {
			return nil, err
		}
		return dockerCollector{e}, nil
	}
	d, err := docker.New(ctx, rt)
	if err != nil {
		return nil, err
	}
	return dockerCollector{d}, nil
}

// checkBackend refuses a backend this program does not have. The
// configuration is validated before, so this only guards a hand-made one.
func checkBackend(rt config.ExecutorRuntime) error {
	if b := rt.Backend; b != "" && b != config.BackendDocker {
		return fmt.Errorf("[executor_runtime] backend %q is not one this program has: set it to %q", b, config.BackendDocker)
	}
	return nil
}

// garbageCollector is the garbage collection of one Docker engine or of
// several.
type garbageCollector interface {
	GC(ctx context.Context, opts docker.GCOptions) (docker.GCReport, error)
	Host() string
	Close() error
}

// dockerCollector is the Docker backend's garbage collector as gc sees it.
type dockerCollector struct{ garbageCollector }

func (c dockerCollector) Collect(ctx context.Context, req cli.GCRequest) (cli.GCRemoved, error) {
	rep, err := c.GC(ctx, docker.GCOptions{RunID: req.RunID, Images: req.Images, StaleImages: req.StaleImages,
		Task: req.Task, Force: req.Force, DryRun: req.DryRun})
	return cli.GCRemoved{Containers: rep.Containers, Images: rep.Images, Kept: rep.Kept,
		Networks: rep.Networks, Volumes: rep.Volumes}, err
}
