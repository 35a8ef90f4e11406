package cli

import (
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

	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/internal/dockertest"
)

// baseImage is the locally built image every smoke task starts from.
const baseImage = "harness-base:bookworm"

// dockerForTest returns a client of the engine the commands use, skipping
// the test when no engine answers or the base image is missing (CI builds
// it first with benchmarks/baseimage/build.sh).
func dockerForTest(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		dockertest.Unavailable(t, "no Docker client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		dockertest.Unavailable(t, "no Docker engine answers: %v", err)
	}
	if _, err := cli.ImageInspect(ctx, baseImage); err != nil {
		if cerrdefs.IsNotFound(err) {
			dockertest.Unavailable(t, "%s is absent: build it with benchmarks/baseimage/build.sh", baseImage)
		}
		t.Fatal(err)
	}
	return cli
}

func TestGCWithoutEngineSaysSo(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(t.TempDir(), "no-engine.sock")
	text := fmt.Sprintf("[executor_runtime]\ndocker_host = %q\n", "unix://"+sock)
	if err := os.WriteFile(filepath.Join(dir, "default.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "gc", "--config-dir", dir)
	if r.code != ExitFailed {
		t.Errorf("exit code = %d, want 1", r.code)
	}
	for _, want := range []string{"cannot reach the Docker engine", sock, "nothing was removed"} {
		if !strings.Contains(r.errOut, want) {
			t.Errorf("stderr %q does not mention %q", r.errOut, want)
		}
	}
}

func TestGCRemovesLeftoverContainer(t *testing.T) {
	cli := dockerForTest(t)
	ctx := context.Background()
	runID := fmt.Sprintf("gc-test-%d", time.Now().UnixNano())
	created, err := cli.ContainerCreate(ctx, &container.Config{
		Image:  baseImage,
		Cmd:    []string{"sleep", "600"},
		Labels: map[string]string{docker.LabelManaged: "1", docker.LabelRun: runID, docker.LabelTask: "gc-test"},
	}, &container.HostConfig{NetworkMode: network.NetworkNone}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	})
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	short := created.ID[:12]

	// --run keeps the test away from containers of other runs on this engine.
	r := runCLI(t, nil, "gc", "--run", runID, "--dry-run", "--json")
	var res GCResult
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatalf("exit %d: %v\n%s%s", r.code, err, r.out, r.errOut)
	}
	if r.code != 0 || !res.DryRun || len(res.Containers) != 1 || !strings.Contains(res.Containers[0], short) {
		t.Errorf("dry run: exit %d, result %+v", r.code, res)
	}
	if _, err := cli.ContainerInspect(ctx, created.ID); err != nil {
		t.Fatalf("the dry run removed the container: %v", err)
	}

	r = runCLI(t, nil, "gc", "--run", runID)
	if r.code != 0 || !strings.Contains(r.out, "removed 1 container(s) of run "+runID) || !strings.Contains(r.out, short) {
		t.Errorf("gc: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if _, err := cli.ContainerInspect(ctx, created.ID); !cerrdefs.IsNotFound(err) {
		t.Errorf("container %s still exists after gc (inspect error %v)", short, err)
	}

	r = runCLI(t, nil, "gc", "--run", runID)
	if r.code != 0 || !strings.Contains(r.out, "no harness containers of run "+runID) {
		t.Errorf("second gc: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
}

func TestGCImageFlagsAreChecked(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"both image modes", []string{"gc", "--images", "--stale-images"}, "not both"},
		{"empty task", []string{"gc", "--images", "--task", " "}, "--task needs a task id"},
		{"empty task without images", []string{"gc", "--task", ""}, "--task needs a task id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran := false
			f := NewFactory(IOStreams{})
			cmd := NewCmdGC(f, func(context.Context, *GCOptions) error { ran = true; return nil })
			cmd.SetArgs(tt.args[1:])
			cmd.SetOut(new(strings.Builder))
			cmd.SetErr(new(strings.Builder))
			err := cmd.Execute()
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) || ran {
				t.Errorf("err %v (exit %d), ran %v; want a usage error containing %q", err, ExitCode(err), ran, tt.want)
			}
		})
	}
}

// A container whose harness process still runs (here: this test process) is
// kept and listed with the reason; --force removes it.
func TestGCKeepsContainersOfLiveRuns(t *testing.T) {
	cli := dockerForTest(t)
	ctx := context.Background()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	runID := fmt.Sprintf("gc-live-%d", time.Now().UnixNano())
	created, err := cli.ContainerCreate(ctx, &container.Config{
		Image: baseImage,
		Cmd:   []string{"sleep", "600"},
		Labels: map[string]string{docker.LabelManaged: "1", docker.LabelRun: runID,
			docker.LabelOwner: fmt.Sprintf("%s/%d", host, os.Getpid())},
	}, &container.HostConfig{NetworkMode: network.NetworkNone}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
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
		r := runCLI(t, nil, tt.args...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", tt.name, r.code, r.out, r.errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(r.out, w) {
				t.Errorf("%s: output does not mention %q:\n%s", tt.name, w, r.out)
			}
		}
		_, err := cli.ContainerInspect(ctx, created.ID)
		if survives := err == nil; survives != tt.survives {
			t.Errorf("%s: container present = %v (inspect error %v), want %v", tt.name, survives, err, tt.survives)
		}
	}
}
