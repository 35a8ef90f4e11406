package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/network"

	"github.com/mediated-coevo/harness/benchmarks/compose"
	"github.com/mediated-coevo/harness/executor"
)

// AgentLayerTag names the image of an installed agent on top of a task's
// image: one per agent, base image and install (version and script), so a
// new release or a rebuilt task gets a layer of its own and every other
// trial reuses the one built.
func AgentLayerTag(imageID string, in executor.AgentInstall) string {
	h := sha256.New()
	for _, part := range []string{imageID, in.Name, in.Version, in.Script} {
		fmt.Fprintf(h, "%d:%s\n", len(part), part)
	}
	return "harness-agent-" + repoComponent(in.Name) + ":" + hex.EncodeToString(h.Sum(nil))[:16]
}

// EnsureAgentLayer returns the image of image with the agent installed,
// building it once.
func (d *Backend) EnsureAgentLayer(ctx context.Context, image string, in executor.AgentInstall) (string, error) {
	ins, err := d.cli.ImageInspect(ctx, image)
	if err != nil {
		return "", fmt.Errorf("inspect image %s: %w", image, err)
	}
	tag := AgentLayerTag(ins.ID, in)
	if ok, err := d.imageExists(ctx, tag); err != nil || ok {
		return tag, err
	}
	unlock, err := d.builds.lock(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("wait for another build of %s: %w", tag, err)
	}
	defer unlock()
	if ok, err := d.imageExists(ctx, tag); err != nil || ok {
		return tag, err
	}
	dir, err := os.MkdirTemp("", "harness-agent-layer-")
	if err != nil {
		return "", fmt.Errorf("make the agent layer's build context: %w", err)
	}
	defer os.RemoveAll(dir)
	user := ""
	if ins.Config != nil {
		user = ins.Config.User
	}
	if err := os.WriteFile(filepath.Join(dir, "install.sh"), []byte(in.Script), 0o755); err != nil {
		return "", fmt.Errorf("write the install script: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(agentDockerfile(ins.ID, user)), 0o644); err != nil {
		return "", fmt.Errorf("write the agent layer's Dockerfile: %w", err)
	}
	logTail, err := d.build(ctx, "agent-"+in.Name, buildSpec{Context: dir, Dockerfile: "Dockerfile"}, tag)
	if err != nil {
		return "", &executor.EnvError{Op: fmt.Sprintf("install agent %s (its install script failed or could not run)", in.Name), Err: err, Log: logTail}
	}
	return tag, nil
}

// agentDockerfile runs the install script as root and gives the image its
// user back, so the agent runs as the task's agent user.
func agentDockerfile(base, user string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "FROM %s\nUSER root\nCOPY install.sh /tmp/harness-agent-install.sh\n", base)
	b.WriteString("RUN bash /tmp/harness-agent-install.sh && rm -f /tmp/harness-agent-install.sh\n")
	if user != "" {
		fmt.Fprintf(&b, "USER %s\n", user)
	}
	return b.String()
}

// GatewayHost is the host's address on the trial's own network, where a
// model gateway can listen for this container alone; a trial started
// without one has none.
func (c *Container) GatewayHost(ctx context.Context) (string, error) {
	if c.stack == nil || c.stack.network == "" {
		return "", fmt.Errorf("container %s has no network of its own: start it with ModelGateway set", executor.ShortID(c.id))
	}
	n, err := c.d.cli.NetworkInspect(ctx, c.stack.network, network.InspectOptions{})
	if err != nil {
		return "", fmt.Errorf("inspect the trial's network: %w", err)
	}
	for _, cfg := range n.IPAM.Config {
		if cfg.Gateway != "" {
			return cfg.Gateway, nil
		}
	}
	return "", fmt.Errorf("the trial's network %s has no gateway address", n.Name)
}

// gatewayStack is the network of a trial that serves a model gateway and
// has no compose file: a stack with nothing but its network.
func (d *Backend) gatewayStack(ctx context.Context, spec executor.ContainerSpec) (*stack, error) {
	return d.startStack(ctx, spec, &compose.Project{})
}
