package docker

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/volume"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/internal/dockertest"
)

// Engines against the host's engine and a second one the test starts.
func TestEngines(t *testing.T) {
	local := newTestDocker(t) // skips without an engine or the base image
	second := dockertest.StartEngine(t)
	t.Run("no engine has the base image", func(t *testing.T) { testNoBaseImage(t, second) })
	t.Run("leftovers are removed on every engine", func(t *testing.T) { testLeftovers(t, local.Host(), second) })
}

// When no engine of docker_hosts has a task's base image (here: a fresh
// engine alone), the trial fails as an environment failure that names the
// engine and says how to fix it.
func testNoBaseImage(t *testing.T, second string) {
	rt := testRuntime()
	rt.DockerHosts = []config.DockerHost{{Host: second, Capacity: 1}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := NewEngines(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	task := writeTask(t, "nobase-"+randomID(t), greetConfig(), greetFiles, nil)
	sb, err := p.StartSandbox(ctx, executor.ContainerSpec{Task: task, RunID: "engines-" + randomID(t)})
	if err == nil {
		sb.Close(ctx)
		t.Fatal("a sandbox started on an engine without the base image")
	}
	var envErr *executor.EnvError
	if !errors.As(err, &envErr) {
		t.Errorf("error %v is not an environment failure", err)
	}
	for _, want := range []string{"on engine " + second, baseImage + " is present on none of the engines of docker_hosts", "build or load it on one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
}

// A resumed run removes what earlier processes of it left on every engine.
func testLeftovers(t *testing.T, hosts ...string) {
	rt := testRuntime()
	for _, h := range hosts {
		rt.DockerHosts = append(rt.DockerHosts, config.DockerHost{Host: h, Capacity: 1})
	}
	ctx := context.Background()
	p, err := NewEngines(ctx, rt)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	runID := "engines-" + randomID(t)
	host, _ := os.Hostname()
	// A volume whose process is dead is a leftover; one whose process
	// lives (another run that shares the id) is kept.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{runID: ownerLabel(host, dead.Process.Pid), runID + "-live": ownerLabel(host, os.Getppid())}
	for _, e := range p.engines {
		for name, owner := range owners {
			labels := map[string]string{LabelManaged: "1", LabelRun: runID, LabelOwner: owner}
			if _, err := e.b.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: labels}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.b.cli.VolumeRemove(context.Background(), name, true) })
		}
	}
	n, err := p.RemoveLeftovers(ctx, runID, "")
	if err != nil || n.Volumes != len(hosts) {
		t.Fatalf("removed %+v (error %v), want %d volumes", n, err, len(hosts))
	}
	for _, e := range p.engines {
		if _, err := e.b.cli.VolumeInspect(ctx, runID); !cerrdefs.IsNotFound(err) {
			t.Errorf("the volume of run %s is still on engine %s (inspect error %v)", runID, e.host, err)
		}
		if _, err := e.b.cli.VolumeInspect(ctx, runID+"-live"); err != nil {
			t.Errorf("the volume of a live process was removed from engine %s (inspect error %v)", e.host, err)
		}
	}
}
