package executor

import (
	"context"
	"strings"
	"testing"
)

// layerBackend records the agent layer asked for and the spec it starts.
type layerBackend struct {
	fakeBackend
	asked AgentInstall
	spec  ContainerSpec
}

func (b *layerBackend) EnsureAgentLayer(_ context.Context, image string, in AgentInstall) (string, error) {
	b.asked = in
	return image + "+" + in.Name, nil
}

func (b *layerBackend) StartSandbox(ctx context.Context, spec ContainerSpec) (ClosableSandbox, error) {
	b.spec = spec
	return b.fakeBackend.StartSandbox(ctx, spec)
}

type installedAgent struct{ funcAgent }

func (installedAgent) Install() AgentInstall {
	return AgentInstall{Name: "mycli", Version: "2", Script: "true"}
}

func TestRunnerInstallsAnAgentInItsLayer(t *testing.T) {
	ran := installedAgent{funcAgent(func(context.Context, AgentInput) (AgentResult, error) { return AgentResult{}, nil })}
	b := &layerBackend{fakeBackend: fakeBackend{sb: &fakeSandbox{}}}
	r := &Runner{Backend: b}
	tr := r.Run(context.Background(), TrialSpec{Task: fakeTask(t), Agent: ran, TrialID: "t1"})
	if b.asked.Name != "mycli" || b.asked.Version != "2" || b.spec.Image != "img:1+mycli" || !b.spec.ModelGateway {
		t.Errorf("layer asked %+v, sandbox spec %+v: want the agent's layer and a gateway network", b.asked, b.spec)
	}
	if tr.Image != "img:1+mycli" {
		t.Errorf("trace image %q, want the agent's layer", tr.Image)
	}

	plain := &layerBackend{fakeBackend: fakeBackend{sb: &fakeSandbox{}}}
	(&Runner{Backend: plain}).Run(context.Background(), TrialSpec{Task: fakeTask(t), Agent: ran.funcAgent, TrialID: "t2"})
	if plain.asked.Name != "" || plain.spec.ModelGateway || plain.spec.Image != "img:1" {
		t.Errorf("an agent that installs nothing got layer %+v and spec %+v", plain.asked, plain.spec)
	}
}

func TestRunnerRefusesAnInstalledAgentOnABackendWithoutLayers(t *testing.T) {
	ran := installedAgent{funcAgent(func(context.Context, AgentInput) (AgentResult, error) { return AgentResult{}, nil })}
	b := &fakeBackend{sb: &fakeSandbox{}}
	tr := (&Runner{Backend: b}).Run(context.Background(), TrialSpec{Task: fakeTask(t), Agent: ran, TrialID: "t1"})
	if tr.Status != StatusEnvFailure || b.started != 0 || !strings.Contains(strings.Join(tr.Errors, " "), "cannot install agents") {
		t.Errorf("trace %s errors %q, started %d: want an env failure before any sandbox", tr.Status, tr.Errors, b.started)
	}
}
