package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// Two runs of one plan started together into two --out directories get
// their own ids, and resuming one (killed mid-trial) while the other is
// live leaves the live one's containers alone: it finishes with every
// trial scored.
func TestResumeBesideALiveRunStartedTogether(t *testing.T) {
	requireEngine(t)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	host, _ := os.Hostname()
	outs := []string{t.TempDir(), t.TempDir()}
	var cmds []*exec.Cmd
	for _, out := range outs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLeftoverHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), leftoverOutEnv+"="+out, leftoverKindEnv+"=run")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		cmds = append(cmds, cmd)
	}
	killed, live := cmds[0], cmds[1]
	ownedBy := func(cmd *exec.Cmd) filters.Args {
		return filters.NewArgs(filters.Arg("label", docker.LabelOwner+"="+host+"/"+strconv.Itoa(cmd.Process.Pid)))
	}
	for _, cmd := range cmds {
		waitForContainer(t, cli, ownedBy(cmd))
	}
	killed.Process.Signal(syscall.SIGKILL)
	killed.Wait()
	t.Cleanup(func() {
		list, _ := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: ownedBy(killed)})
		for _, c := range list {
			cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
		}
	})
	var dirs []string
	for _, out := range outs {
		d, _ := filepath.Glob(filepath.Join(out, "*"))
		if len(d) != 1 {
			t.Fatalf("directories under %s: %v", out, d)
		}
		dirs = append(dirs, d[0])
	}
	if filepath.Base(dirs[0]) == filepath.Base(dirs[1]) {
		t.Fatalf("two runs share the id %s", filepath.Base(dirs[0]))
	}

	res, err := ExecutePlan(context.Background(), onEngine(t, ExecOptions{Plan: leftoverPlan(t, "run", "", dirs[0])}))
	if err != nil || res.Status != rundir.StatusCompleted {
		t.Fatalf("resume: %v, %+v", err, res)
	}
	done := make(chan error, 1)
	go func() { done <- live.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the live run failed: %v", err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("the live run did not finish within 5 minutes")
	}
	got := outcomes(t, dirs[1])
	if len(got) != len(leftoverTasks)*2 {
		t.Fatalf("the live run measured %d trials, want %d:\n%s", len(got), len(leftoverTasks)*2, strings.Join(got, "\n"))
	}
	for _, o := range got {
		if f := strings.Fields(o); f[3] != "scored" {
			t.Errorf("a trial of the live run was not scored: %s", o)
		}
	}
}

// waitForContainer waits up to three minutes for a container f selects.
func waitForContainer(t *testing.T, cli *client.Client, f filters.Args) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("a helper started no container within 3 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
