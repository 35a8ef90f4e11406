package slurmtest

import (
	"bufio"
	"bytes"
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

const clusterHelperEnv = "SLURMTEST_CLUSTER_HELPER"

// TestHelperRunsAJob is the test process the test below kills: it starts a
// cluster, has it run a job that sleeps, and says the cluster's directory
// once the job's script runs.
func TestHelperRunsAJob(t *testing.T) {
	if os.Getenv(clusterHelperEnv) != "1" {
		t.Skip("helper process for TestNothingOfTheClusterOutlivesTheTestProcess")
	}
	c := Start(t)
	started := filepath.Join(c.Dir, "job-started")
	if _, err := c.Command(t.Context(), "sbatch", "--output=/dev/null", "--wrap=touch "+started+" && sleep 300"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			os.Stdout.WriteString("dir " + c.Dir + "\n")
			time.Sleep(5 * time.Minute)
		}
	}
	t.Fatal("the job did not start within 60s")
}

// A test process that dies without its cleanup leaves nothing of its
// cluster running: neither the daemons nor the job steps slurmd started
// and their jobs.
func TestNothingOfTheClusterOutlivesTheTestProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Slurm daemons")
	}
	for _, c := range commands {
		if _, err := exec.LookPath(c); err != nil {
			Unavailable(t, "Slurm is not installed (%s: %v)", c, err)
		}
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperRunsAJob$", "-test.count=1")
	helper.Env = append(os.Environ(), clusterHelperEnv+"=1")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { helper.Process.Kill(); helper.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "dir ")
	if err != nil || !ok {
		t.Fatalf("the helper did not say its cluster's directory: %q %v", line, err)
	}
	helper.Process.Signal(syscall.SIGKILL)
	helper.Wait()
	var left map[int]string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if left = clusterProcesses(dir); len(left) == 0 {
			return
		}
	}
	for pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	t.Errorf("20s after the test process died, %d processes of its cluster still ran: %v", len(left), left)
}

// clusterProcesses are the processes, by pid, whose environment names the
// slurm.conf of the cluster in dir or that hold a file under dir open,
// with their command lines.
func clusterProcesses(dir string) map[int]string {
	conf := []byte("\x00SLURM_CONF=" + filepath.Join(dir, "slurm.conf") + "\x00")
	found := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		p := filepath.Join("/proc", e.Name())
		env, _ := os.ReadFile(filepath.Join(p, "environ"))
		ours := bytes.Contains(append([]byte{0}, env...), conf)
		fds, _ := os.ReadDir(filepath.Join(p, "fd"))
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(p, "fd", fd.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
				ours = true
			}
		}
		if ours {
			cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
			found[pid] = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return found
}
