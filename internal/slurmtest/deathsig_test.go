package slurmtest

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const daemonHelperEnv = "SLURMTEST_DAEMON_HELPER_DIR"

// TestHelperStartsADaemon is the test process the test below kills: it
// starts a long-lived daemon the way Start does and says its pid.
func TestHelperStartsADaemon(t *testing.T) {
	dir := os.Getenv(daemonHelperEnv)
	if dir == "" {
		t.Skip("helper process for TestDaemonsDieWithTheTestProcess")
	}
	c := &Cluster{Dir: dir}
	cmd := c.daemon(t, "sleeper", "sleep", "120")
	os.Stdout.WriteString("pid " + strconv.Itoa(cmd.Process.Pid) + "\n")
	time.Sleep(2 * time.Minute)
}

// A test process that dies without its cleanup (a timeout's panic, kill
// -9) takes the daemons it started with it.
func TestDaemonsDieWithTheTestProcess(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "log"), 0o755); err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperStartsADaemon$", "-test.count=1")
	helper.Env = append(os.Environ(), daemonHelperEnv+"="+dir)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { helper.Process.Kill(); helper.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "pid "))
	if err != nil || perr != nil {
		t.Fatalf("the helper did not say its daemon's pid: %q %v", line, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	helper.Process.Signal(syscall.SIGKILL)
	helper.Wait()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		// The daemon is not our child: once dead it is reaped by init, and
		// signal 0 then fails with ESRCH.
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
	}
	t.Errorf("the daemon (pid %d) outlived the test process that started it", pid)
}
