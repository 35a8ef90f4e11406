package factory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/internal/dockertest"
)

// A run with two engines in docker_hosts, the host's and one the test
// starts (which has no base image until it is copied there), places trials
// on both, records which engine ran each, and leaves nothing behind on
// either; `harness gc` then looks at both.
func TestRunSpreadsTrialsOverTwoEngines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs trials on two Docker engines")
	}
	local := dockerForTest(t)
	second := dockertest.StartEngine(t)
	hosts := []string{local.DaemonHost(), second}

	dir := t.TempDir()
	text := fmt.Sprintf(`[executor_runtime]
task_cache_dir = %q
[[executor_runtime.docker_hosts]]
host = %q
capacity = 1
[[executor_runtime.docker_hosts]]
host = %q
capacity = 1
`, filepath.Join(dir, "cache"), hosts[0], hosts[1])
	if err := os.WriteFile(filepath.Join(dir, "default.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "runs")
	// Four trials, two at a time on engines of one place each: while one
	// engine is busy the next trial goes to the other.
	r := runCLI(t, "run", "--config-dir", dir, "--tasks", "config-repair,csv-parser", "--agent", "oracle", "--offline",
		"--condition", "no_feedback", "--skill-updates", "none", "--iterations", "2", "-j", "2", "--out", out)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	runs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v, want one", runs)
	}
	runID := filepath.Base(runs[0])

	traces, _ := filepath.Glob(filepath.Join(runs[0], "artifacts", "traces", "*", "*.json"))
	if len(traces) != 4 {
		t.Fatalf("%d traces, want 4", len(traces))
	}
	used := map[string]int{}
	for _, p := range traces {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var tr struct {
			Engine string   `json:"engine"`
			Status string   `json:"status"`
			Reward *float64 `json:"reward"`
			Image  string   `json:"image"`
		}
		if err := json.Unmarshal(data, &tr); err != nil {
			t.Fatal(err)
		}
		if tr.Status != "scored" || tr.Reward == nil || *tr.Reward != 1 || tr.Image == "" {
			t.Errorf("%s: status %s, reward %v, image %q; want the oracle scored 1 on a recorded image", p, tr.Status, tr.Reward, tr.Image)
		}
		if !slices.Contains(hosts, tr.Engine) {
			t.Errorf("%s: engine %q is none of %v", p, tr.Engine, hosts)
		}
		used[tr.Engine]++
	}
	t.Logf("trials per engine: %v", used)
	if len(used) != 2 {
		t.Errorf("trials per engine %v: want trials on both engines", used)
	}

	// The second engine got the base image from the first, id and all.
	want, err := local.ImageInspect(context.Background(), baseImage)
	if err != nil {
		t.Fatal(err)
	}
	if got := imageID(t, second, baseImage); got != want.ID {
		t.Errorf("%s on the second engine has id %q, want the first engine's %s", baseImage, got, want.ID)
	}
	for _, host := range hosts {
		assertNothingLeft(t, host, runID)
	}
	r = runCLI(t, "gc", "--config-dir", dir, "--run", runID)
	for _, host := range hosts {
		if r.code != 0 || !strings.Contains(r.out, host) {
			t.Errorf("gc: exit %d, output does not name engine %s:\n%s%s", r.code, host, r.out, r.errOut)
		}
	}
}

// assertNothingLeft fails t when the engine at host still has a container,
// network or volume of the run.
func assertNothingLeft(t *testing.T, host, runID string) {
	t.Helper()
	c, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	f := filters.NewArgs(filters.Arg("label", docker.LabelManaged+"=1"), filters.Arg("label", docker.LabelRun+"="+runID))
	cs, err := c.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := c.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := c.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs)+len(ns)+len(vs.Volumes) > 0 {
		t.Errorf("engine %s keeps %d containers, %d networks and %d volumes of run %s", host, len(cs), len(ns), len(vs.Volumes), runID)
	}
}

// imageID is the id of ref on the engine at host ("" when it has none).
func imageID(t *testing.T, host, ref string) string {
	t.Helper()
	c, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ins, err := c.ImageInspect(context.Background(), ref)
	if err != nil {
		return ""
	}
	return ins.ID
}
