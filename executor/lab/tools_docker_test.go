package lab

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/internal/dockertest"
)

// The file tools act as [agent] user, like run_command: what they create
// belongs to that user and what it may not read stays unread; write_file
// keeps the mode of a file it replaces.
func TestDockerToolsFilesAsAgent(t *testing.T) {
	ctx := context.Background()
	c := startToolsContainer(t)
	sh := func(script string) string {
		t.Helper()
		res, err := c.Exec(ctx, executor.ExecRequest{Cmd: []string{"sh", "-c", script}, Timeout: 10 * time.Second})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: %+v %v", script, res, err)
		}
		return strings.TrimSpace(res.Stdout)
	}
	sh(`printf '#!/bin/sh\necho old\n' > /app/run.sh && chmod 750 /app/run.sh
mkdir -p /opt/skills/s && echo secret > /opt/skills/s/SKILL.md && chmod 600 /opt/skills/s/SKILL.md
cp /opt/skills/s/SKILL.md /app/secret.txt && chmod 600 /app/secret.txt`)

	root := &ContainerTools{Sandbox: c, Workdir: "/app", OutputCap: 1 << 10}
	if _, err := runLabTool(t, root, ToolWriteFile, map[string]string{"path": "run.sh", "content": "#!/bin/sh\necho new\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := runLabTool(t, root, ToolWriteFile, map[string]string{"path": "fresh.txt", "content": "x"}); err != nil {
		t.Fatal(err)
	}
	if got := sh("stat -c %a /app/run.sh /app/fresh.txt; /app/run.sh"); got != "750\n644\nnew" {
		t.Errorf("modes and output after write_file = %q, want 750, 644 and the new script's output", got)
	}

	agent := &ContainerTools{Sandbox: c, Workdir: "/app", OutputCap: 1 << 10, User: "nobody",
		Skills: []TaskSkill{{Name: "s", Path: "/opt/skills/s/SKILL.md"}}}
	if _, err := runLabTool(t, agent, ToolWriteFile, map[string]string{"path": "/tmp/mine/a.txt", "content": "x"}); err != nil {
		t.Fatal(err)
	}
	if got := sh("stat -c %U /tmp/mine /tmp/mine/a.txt"); got != "nobody\nnobody" {
		t.Errorf("owners of what write_file created = %q, want nobody", got)
	}
	for _, call := range []struct {
		tool string
		args map[string]string
	}{
		{ToolReadFile, map[string]string{"path": "secret.txt"}},
		{ToolReadSkill, map[string]string{"name": "s"}},
		{ToolWriteFile, map[string]string{"path": "run.sh", "content": "overwritten"}},
	} {
		if out, err := runLabTool(t, agent, call.tool, call.args); err == nil || !strings.Contains(err.Error(), "Permission denied") {
			t.Errorf("%s %v as nobody = %q, %v; want permission denied", call.tool, call.args, out, err)
		}
	}
	if got := sh("cat /app/run.sh"); !strings.Contains(got, "echo new") {
		t.Errorf("run.sh was changed by a user who may not write it: %q", got)
	}
	// Discovery offers only the skills the agent can read.
	sh(`mkdir -p /opt/skills/open && printf -- '---\nname: open\ndescription: readable\n---\n\nbody\n' > /opt/skills/open/SKILL.md`)
	for _, tt := range []struct{ user, want string }{{"", "open,s"}, {"nobody", "open"}} {
		env, err := DiscoverEnvironment(ctx, c, "/app", tt.user, []string{"/opt/skills"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range env.Skills {
			names = append(names, s.Name)
		}
		slices.Sort(names)
		if got := strings.Join(names, ","); got != tt.want {
			t.Errorf("skills discovered as %q = %q (warnings %q), want %q", tt.user, got, env.Warnings, tt.want)
		}
	}
}

// startToolsContainer starts a container with /app as its working
// directory, from the image of the Docker tests' greeting task.
func startToolsContainer(t *testing.T) *docker.Container {
	t.Helper()
	ctx := context.Background()
	rt := config.ExecutorRuntime{Network: docker.NetworkTask, PidsLimit: 256, MemoryMB: 512, CPUs: 1,
		BuildTimeout: config.Duration{Duration: 5 * time.Minute}}
	d := labDocker(t, rt)
	dir := filepath.Join(t.TempDir(), "greet")
	dockerfile := "FROM " + dockertest.BaseImage + "\nWORKDIR /app\nRUN printf 'world\\n' > /app/name.txt\n"
	if err := os.MkdirAll(filepath.Join(dir, "environment"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "environment", "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	task := &benchmarks.Task{ID: "greet", Dir: dir, Config: benchmarks.TaskConfig{Environment: benchmarks.EnvConfig{Workdir: "/app"}}}
	img, _, err := d.EnsureImage(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Start(ctx, executor.ContainerSpec{Image: img, Task: task, RunID: "tool-files", TrialID: "t-tool-files"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}
