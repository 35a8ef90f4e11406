package executor

import (
	"context"
	"errors"
	"fmt"
)

// Installer is an agent program installed into the task's image before its
// trials (an agent CLI), whose model calls go through a gateway the harness
// serves to the trial's container.
type Installer interface {
	Install() AgentInstall
}

// AgentInstall is what to add to a task's image for an installed agent.
type AgentInstall struct {
	// Name is the agent's name; with Version it names the cached layer.
	Name    string
	Version string
	// Script is shell run as root in a layer of its own.
	Script string
}

// LayerBuilder is a backend that can add an installed agent's layer on
// top of a task's image, keeping it for every later trial of that image.
type LayerBuilder interface {
	EnsureAgentLayer(ctx context.Context, image string, in AgentInstall) (string, error)
}

// GatewayHost is a sandbox with a network of its own whose host side a
// model gateway can listen on: an address only the sandbox reaches.
type GatewayHost interface {
	GatewayHost(ctx context.Context) (string, error)
}

// installAgent puts an installed agent's layer on the task's image.
func (r *Runner) installAgent(ctx context.Context, image string, agent Agent) (string, bool, error) {
	in, ok := agent.(Installer)
	if !ok {
		return image, false, nil
	}
	lb, ok := r.Backend.(LayerBuilder)
	if !ok {
		return "", true, &EnvError{Op: "install agent " + in.Install().Name,
			Err: errors.New("this sandbox backend cannot install agents: run installed agents on one Docker engine (no docker_hosts)")}
	}
	out, err := lb.EnsureAgentLayer(ctx, image, in.Install())
	if err != nil {
		var envErr *EnvError
		if errors.As(err, &envErr) {
			return "", true, err
		}
		return "", true, &EnvError{Op: fmt.Sprintf("install agent %s on %s", in.Install().Name, image), Err: err}
	}
	return out, true, nil
}
