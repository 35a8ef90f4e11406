package factory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/cmd/harness/cli"
	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/internal/dockertest"
)

// These tests run `harness gc` as the program wires it, against the Docker
// engine; they skip when no engine answers or the base image is missing.

// baseImage is the locally built image every smoke task starts from.
const baseImage = "harness-base:bookworm"

// result is one command line's outcome.
type result struct {
	code        int
	out, errOut string
}

// runCLI executes args with the program's factory and captured streams.
func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	f := New()
	f.IO = cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := cli.Run(context.Background(), f, args)
	return result{code, out.String(), errOut.String()}
}

// dockerForTest returns a client of the engine the commands use, skipping
// the test when no engine answers or the base image is missing.
func dockerForTest(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		dockertest.Unavailable(t, "no Docker client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := c.Ping(ctx); err != nil {
		dockertest.Unavailable(t, "no Docker engine answers: %v", err)
	}
	if _, err := c.ImageInspect(ctx, baseImage); err != nil {
		if cerrdefs.IsNotFound(err) {
			dockertest.Unavailable(t, "%s is absent: build it with benchmarks/baseimage/build.sh", baseImage)
		}
		t.Fatal(err)
	}
	return c
}

func TestGCWithoutEngineSaysSo(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(t.TempDir(), "no-engine.sock")
	text := fmt.Sprintf("[executor_runtime]\ndocker_host = %q\n", "unix://"+sock)
	if err := os.WriteFile(filepath.Join(dir, "default.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "gc", "--config-dir", dir)
	if r.code != cli.ExitFailed {
		t.Errorf("exit code = %d, want 1", r.code)
	}
	for _, want := range []string{"cannot reach the Docker engine", sock, "nothing was removed"} {
		if !strings.Contains(r.errOut, want) {
			t.Errorf("stderr %q does not mention %q", r.errOut, want)
		}
	}
}

func TestGCRemovesLeftoverContainer(t *testing.T) {
	dc := dockerForTest(t)
	ctx := context.Background()
	runID := fmt.Sprintf("gc-test-%d", time.Now().UnixNano())
	created, err := dc.ContainerCreate(ctx, &container.Config{
		Image:  baseImage,
		Cmd:    []string{"sleep", "600"},
		Labels: map[string]string{docker.LabelManaged: "1", docker.LabelRun: runID, docker.LabelTask: "gc-test"},
	}, &container.HostConfig{NetworkMode: network.NetworkNone}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dc.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	})
	if err := dc.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	short := created.ID[:12]

	// --run keeps the test away from containers of other runs on this engine.
	r := runCLI(t, "gc", "--run", runID, "--dry-run", "--json")
	var res cli.GCResult
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatalf("exit %d: %v\n%s%s", r.code, err, r.out, r.errOut)
	}
	if r.code != 0 || !res.DryRun || len(res.Containers) != 1 || !strings.Contains(res.Containers[0], short) {
		t.Errorf("dry run: exit %d, result %+v", r.code, res)
	}
	if _, err := dc.ContainerInspect(ctx, created.ID); err != nil {
		t.Fatalf("the dry run removed the container: %v", err)
	}

	r = runCLI(t, "gc", "--run", runID)
	if r.code != 0 || !strings.Contains(r.out, "removed 1 container(s) of run "+runID) || !strings.Contains(r.out, short) {
		t.Errorf("gc: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if _, err := dc.ContainerInspect(ctx, created.ID); !cerrdefs.IsNotFound(err) {
		t.Errorf("container %s still exists after gc (inspect error %v)", short, err)
	}

	r = runCLI(t, "gc", "--run", runID)
	if r.code != 0 || !strings.Contains(r.out, "no harness containers of run "+runID) {
		t.Errorf("second gc: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
}

// A container whose harness process still runs (here: this test process) is
// kept and listed with the reason; --force removes it.
func TestGCKeepsContainersOfLiveRuns(t *testing.T) {
	dc := dockerForTest(t)
	ctx := context.Background()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	runID := fmt.Sprintf("gc-live-%d", time.Now().UnixNano())
	created, err := dc.ContainerCreate(ctx, &container.Config{
		Image: baseImage,
		Cmd:   []string{"sleep", "600"},
		Labels: map[string]string{docker.LabelManaged: "1", docker.LabelRun: runID,
			docker.LabelOwner: fmt.Sprintf("%s/%d", host, os.Getpid())},
	}, &container.HostConfig{NetworkMode: network.NetworkNone}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dc.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	})
	short := created.ID[:12]

	tests := []struct {
		name     string
		args     []string
		want     []string
		survives bool
	}{
		{"kept without --force", []string{"gc", "--run", runID},
			[]string{"removed no container of run " + runID, "kept 1 container(s) whose run may still be going",
				short, fmt.Sprintf("process %d is still running (--force removes it)", os.Getpid())}, true},
		{"dry run with --force", []string{"gc", "--run", runID, "--force", "--dry-run"},
			[]string{"would remove 1 container(s) of run " + runID, short}, true},
		{"removed with --force", []string{"gc", "--run", runID, "--force"},
			[]string{"removed 1 container(s) of run " + runID, short}, false},
	}
	for _, tt := range tests {
		r := runCLI(t, tt.args...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", tt.name, r.code, r.out, r.errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(r.out, w) {
				t.Errorf("%s: output does not mention %q:\n%s", tt.name, w, r.out)
			}
		}
		_, err := dc.ContainerInspect(ctx, created.ID)
		if survives := err == nil; survives != tt.survives {
			t.Errorf("%s: container present = %v (inspect error %v), want %v", tt.name, survives, err, tt.survives)
		}
	}
}
