package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/docker"
)

// These tests run real trials on the Docker engine; they skip only when no
// engine answers or the base image is missing.

// containersLabelled lists the containers (in any state) carrying all labels.
func containersLabelled(t *testing.T, cli *client.Client, labels ...string) []container.Summary {
	t.Helper()
	f := filters.NewArgs()
	for _, l := range labels {
		f.Add("label", l)
	}
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// readTrace decodes the only trace.json under out.
func readTrace(t *testing.T, out string) (*executor.Trace, string) {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(out, "*", "trace.json"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("want one trace.json under %s, found %v (%v)", out, matches, err)
	}
	data, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	var tr executor.Trace
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatalf("%s: %v", matches[0], err)
	}
	return &tr, filepath.Dir(matches[0])
}

func TestTasksTrySmokeTask(t *testing.T) {
	cli := dockerForTest(t)
	env := newTaskEnv(t, "")

	t.Run("oracle scores 1", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "try")
		r := runCLI(t, engineFactory(), "tasks", "try", "config-repair", "--agent", "oracle", "--config-dir", env.configDir, "--out", out, "--json")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
		}
		var tr executor.Trace
		if err := json.Unmarshal([]byte(r.out), &tr); err != nil {
			t.Fatalf("stdout is not a trace: %v\n%s", err, r.out)
		}
		if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 1 || tr.Agent != "oracle" || tr.TaskID != "config-repair" {
			t.Errorf("trace = status %s, reward %v, agent %s, errors %q", tr.Status, tr.Reward, tr.Agent, tr.Errors)
		}
		saved, jobDir := readTrace(t, out)
		if tr.JobDir != jobDir || !strings.HasSuffix(filepath.Base(jobDir), "Z-config-repair") || saved.Status != tr.Status {
			t.Errorf("job dir %q (trace says %q), saved status %s", jobDir, tr.JobDir, saved.Status)
		}
		if _, err := os.Stat(filepath.Join(jobDir, "verifier")); err != nil {
			t.Errorf("verifier logs not kept: %v", err)
		}
		run := "tasks-try-" + filepath.Base(jobDir)
		if left := containersLabelled(t, cli, docker.LabelRun+"="+run); len(left) != 0 {
			t.Errorf("%d container(s) of %s left behind", len(left), run)
		}
	})

	t.Run("nop scores below 1", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "try")
		r := runCLI(t, engineFactory(), "tasks", "try", "config-repair", "--agent", "nop", "--config-dir", env.configDir, "--out", out)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s%s", r.code, r.out, r.errOut)
		}
		tr, jobDir := readTrace(t, out)
		if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward >= 1 {
			t.Errorf("nop trace: status %s, reward %v", tr.Status, tr.Reward)
		}
		for _, want := range []string{"status     scored", "agent      nop", "job dir    " + jobDir} {
			if !strings.Contains(r.out, want) {
				t.Errorf("summary lacks %q:\n%s", want, r.out)
			}
		}
	})
}

// goTool finds the go command that builds the harness binary.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	t.Skip("no go command on PATH to build the harness binary")
	return ""
}

func TestTasksTryInterruptRemovesContainer(t *testing.T) {
	cli := dockerForTest(t)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "harness")
	build := exec.Command(goTool(t), "build", "-o", bin, "github.com/mediated-coevo/harness/cmd/harness")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build harness: %v\n%s", err, out)
	}

	// A task whose solution takes a minute, well within its agent timeout,
	// so the trial is surely running when the signal arrives.
	id := fmt.Sprintf("try-sigint-%d", time.Now().UnixNano())
	env := newTaskEnv(t, "agent_timeout = \"20m\"\n")
	files := taskFiles("signals")
	files["solution/solve.sh"] = "#!/bin/bash\nsleep 60\necho ok > /app/out.txt\n"
	files["task.toml"] = strings.Replace(files["task.toml"], "timeout_sec = 60", "timeout_sec = 900", 1)
	writeTask(t, env.tasksDir, id, files)
	t.Cleanup(func() { removeTaskImages(cli, id) })

	out := filepath.Join(tmp, "try")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "tasks", "try", id, "--agent", "oracle", "--config-dir", env.configDir, "--out", out)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waited := false
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill()
			<-exited
		}
	})

	labels := []string{docker.LabelManaged + "=1", docker.LabelTask + "=" + id}
	// The image build's intermediate containers inherit the image's labels;
	// only the trial's own container carries a run label.
	trial := append([]string{docker.LabelRun}, labels...)
	deadline := time.Now().Add(3 * time.Minute)
	for len(containersLabelled(t, cli, trial...)) == 0 {
		select {
		case err := <-exited:
			waited = true
			t.Fatalf("harness exited before its container appeared (%v)\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no container labelled %v appeared\nstderr:\n%s", labels, stderr.String())
		}
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
		waited = true
	case <-time.After(3 * time.Minute):
		t.Fatalf("harness did not exit after SIGINT\nstderr:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
		t.Errorf("exit = %v, want code 130\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if left := containersLabelled(t, cli, labels...); len(left) != 0 {
		t.Errorf("%d container(s) labelled %v remain after the interrupt: %s %s %v\nstderr:\n%s\nstdout:\n%s", len(left), labels, left[0].ID, left[0].State, left[0].Labels, stderr.String(), stdout.String())
	}
	tr, _ := readTrace(t, out)
	if !tr.Cancelled || tr.Reward != nil {
		t.Errorf("saved trace: cancelled %v, reward %v, status %s", tr.Cancelled, tr.Reward, tr.Status)
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say it was interrupted:\n%s", stderr.String())
	}
}

// removeTaskImages removes the images built for a test's own task.
func removeTaskImages(cli *client.Client, taskID string) {
	ctx := context.Background()
	imgs, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", docker.LabelTask+"="+taskID))})
	if err != nil {
		return
	}
	for _, img := range imgs {
		cli.ImageRemove(ctx, img.ID, image.RemoveOptions{Force: true, PruneChildren: true})
	}
}
