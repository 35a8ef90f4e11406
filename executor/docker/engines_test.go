package docker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/internal/dockertest"
)

// When no engine of docker_hosts has a task's base image (here: a fresh
// engine alone), the trial fails as an environment failure that names the
// engine and says how to fix it.
func TestEnginesWithoutTheBaseImageSayHowToFixIt(t *testing.T) {
	newTestDocker(t) // skips without an engine or the base image
	second := dockertest.StartEngine(t)
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
