package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/executor"
)

// A command that exits while a child it put in the background still holds
// its output ends when it exits, not when the child lets go of the output:
// an agent whose shell starts a server is not charged the server's life.
func TestDockerExecEndsWhenItsProcessExits(t *testing.T) {
	d := newTestDocker(t)
	c := startTestContainer(t, d, writeTask(t, "greet", greetConfig(), greetFiles, nil), "exec-exit")
	res, err := c.Exec(context.Background(), executor.ExecRequest{
		Cmd:     []string{"sh", "-c", "sleep 40 & echo started; echo warn >&2; exit 3"},
		Timeout: 60 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Duration > 15*time.Second || res.TimedOut {
		t.Errorf("exec took %s (timed out %v): it waited for the background child", res.Duration, res.TimedOut)
	}
	if res.ExitCode != 3 || strings.TrimSpace(res.Stdout) != "started" || strings.TrimSpace(res.Stderr) != "warn" {
		t.Errorf("exit %d stdout %q stderr %q, want 3, started, warn", res.ExitCode, res.Stdout, res.Stderr)
	}
}
