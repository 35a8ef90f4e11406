package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/config"
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
			f := &Factory{}
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

// fakeCollector stands in for an engine's garbage collector.
type fakeCollector struct {
	got     GCRequest
	removed GCRemoved
	err     error
	closed  bool
}

func (c *fakeCollector) Host() string { return "unix:///fake.sock" }

func (c *fakeCollector) Collect(_ context.Context, req GCRequest) (GCRemoved, error) {
	c.got = req
	return c.removed, c.err
}

func (c *fakeCollector) Close() error { c.closed = true; return nil }

func gcFactory(c *fakeCollector, openErr error) *Factory {
	f := testFactory()
	f.Collector = func(context.Context, config.ExecutorRuntime) (Collector, error) {
		if openErr != nil {
			return nil, openErr
		}
		return c, nil
	}
	return f
}

func TestGCWithAFakeCollector(t *testing.T) {
	t.Run("passes the flags and prints what went", func(t *testing.T) {
		c := &fakeCollector{removed: GCRemoved{Containers: []string{"harness-x (abc123)"}, Kept: []string{"harness-y (def456): still running"}}}
		r := runCLI(t, gcFactory(c, nil), "gc", "--run", "r1", "--task", "t1", "--force", "--dry-run")
		if r.code != ExitOK {
			t.Fatalf("exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		if want := (GCRequest{RunID: "r1", Task: "t1", Force: true, DryRun: true}); c.got != want || !c.closed {
			t.Errorf("request %+v (closed %v), want %+v", c.got, c.closed, want)
		}
		for _, want := range []string{"would remove 1 container(s) of run r1:", "harness-x (abc123)", "kept 1 container(s)", "still running"} {
			if !strings.Contains(r.out, want) {
				t.Errorf("output lacks %q:\n%s", want, r.out)
			}
		}
	})
	t.Run("json lists are never null", func(t *testing.T) {
		r := runCLI(t, gcFactory(&fakeCollector{}, nil), "gc", "--json")
		var res map[string]any
		if err := json.Unmarshal([]byte(r.out), &res); err != nil || r.code != ExitOK {
			t.Fatalf("exit %d: %v\n%s", r.code, err, r.out)
		}
		for _, k := range []string{"containers", "images", "kept"} {
			if _, ok := res[k].([]any); !ok {
				t.Errorf("%s = %v, want a list", k, res[k])
			}
		}
		if res["engine"] != "unix:///fake.sock" {
			t.Errorf("engine = %v", res["engine"])
		}
	})
	t.Run("failures are reported and exit 1", func(t *testing.T) {
		c := &fakeCollector{err: errors.Join(errors.New("remove a: busy"), errors.New("remove b: gone"))}
		r := runCLI(t, gcFactory(c, nil), "gc", "--json")
		if r.code != ExitFailed || !strings.Contains(r.out, "remove a: busy") || !strings.Contains(r.errOut, "remove b: gone") {
			t.Errorf("exit %d\n%s%s", r.code, r.out, r.errOut)
		}
	})
	t.Run("no engine", func(t *testing.T) {
		r := runCLI(t, gcFactory(nil, errors.New("cannot reach the engine")), "gc")
		if r.code != ExitFailed || !strings.Contains(r.errOut, "cannot reach the engine; nothing was removed") {
			t.Errorf("exit %d, stderr %q", r.code, r.errOut)
		}
	})
}
