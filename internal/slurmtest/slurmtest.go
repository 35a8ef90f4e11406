// Package slurmtest starts a real Slurm cluster of two nodes on this
// machine for a test: one slurmctld and two slurmd, all in a temporary
// directory, with authentication off. A test that needs it skips where
// Slurm is not installed, and fails where it is required (CI sets CI=true,
// or HARNESS_REQUIRE_SLURM=1), so it can never pass there by not running.
package slurmtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RequireEnv names the variable that turns skips into failures.
const RequireEnv = "HARNESS_REQUIRE_SLURM"

// Nodes are the cluster's node names; each has one CPU, so at most two
// jobs (array elements) run at once.
var Nodes = []string{"n1", "n2"}

// commands are the daemons and clients a cluster needs.
var commands = []string{"slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"}

// Cluster is a running test cluster.
type Cluster struct {
	// Dir holds its configuration, state, spool and logs.
	Dir string
	// Conf is its slurm.conf; Start sets SLURM_CONF to it for the test.
	Conf string
	// KillWait is how long the cluster waits after the SIGTERM of a
	// plain scancel (or a time limit) before it kills what is left of a
	// job.
	KillWait time.Duration
}

// killWait is the cluster's KillWait: a tenth of Slurm's default, so that
// a test sees a job that does not end on SIGTERM killed, as a real cluster
// would, without waiting half a minute for it.
const killWait = 3 * time.Second

// Unavailable ends t: a failure where Slurm is required, else a skip.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" || os.Getenv("CI") == "true" {
		t.Fatalf("%s (%s=1 or CI=true: the Slurm tests must run here)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// Start starts a cluster, waits until both nodes are idle, points the
// test's Slurm commands at it (SLURM_CONF) and stops it when the test
// ends, cancelling what it still runs first. It cannot be used by
// parallel tests (it sets an environment variable).
func Start(t *testing.T) *Cluster {
	t.Helper()
	for _, c := range commands {
		if _, err := exec.LookPath(c); err != nil {
			Unavailable(t, "Slurm is not installed (%s: %v); Debian: apt-get install slurmctld slurmd slurm-client", c, err)
		}
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatalf("host name: %v", err)
	}
	host, _, _ = strings.Cut(host, ".")
	c := &Cluster{Dir: t.TempDir(), KillWait: killWait}
	c.Conf = filepath.Join(c.Dir, "slurm.conf")
	for _, sub := range []string{"state", "log", "spool/" + Nodes[0], "spool/" + Nodes[1]} {
		if err := os.MkdirAll(filepath.Join(c.Dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ports := freePorts(t, 1+len(Nodes))
	if err := os.WriteFile(c.Conf, []byte(c.config(host, ports)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLURM_CONF", c.Conf)
	var procs []*exec.Cmd
	dog := c.watchdog(t)
	t.Cleanup(func() { c.stop(t, procs, dog) })
	procs = append(procs, c.daemon(t, "slurmctld", "slurmctld", "-D", "-f", c.Conf))
	for _, n := range Nodes {
		procs = append(procs, c.daemon(t, "slurmd-"+n, "slurmd", "-D", "-N", n, "-f", c.Conf))
	}
	c.waitIdle(t)
	return c
}

// config is a slurm.conf for this host: the controller and one node per
// name of Nodes on the given ports, no accounting, no cgroups, no auth.
func (c *Cluster) config(host string, ports []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `ClusterName=harnesstest
SlurmctldHost=%s
SlurmctldPort=%d
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation=%[3]s/state
SlurmdSpoolDir=%[3]s/spool/%%n
SlurmctldPidFile=%[3]s/slurmctld.pid
SlurmdPidFile=%[3]s/slurmd.%%n.pid
SlurmctldLogFile=%[3]s/log/slurmctld.log
SlurmdLogFile=%[3]s/log/slurmd.%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
KillWait=%[4]d
`, host, ports[0], c.Dir, int(c.KillWait.Seconds()))
	for i, n := range Nodes {
		fmt.Fprintf(&b, "NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 Port=%d CPUs=1 RealMemory=100 State=UNKNOWN\n", n, host, ports[i+1])
	}
	b.WriteString("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n")
	return b.String()
}

// freePorts finds n TCP ports nothing listens on now.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// daemon starts one daemon in its own process group, its output in log/.
// It dies with the test process, so a test that times out leaves no
// daemon behind; the watchdog ends the jobs it started.
func (c *Cluster) daemon(t *testing.T, name, bin string, args ...string) *exec.Cmd {
	t.Helper()
	out, err := os.Create(filepath.Join(c.Dir, "log", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	whenParentDies(cmd.SysProcAttr, syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	out.Close()
	return cmd
}

// waitIdle waits until every node reports idle.
func (c *Cluster) waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		out, _ := c.Command(context.Background(), "sinfo", "--noheader", "--Node", "--format=%N %T")
		last = strings.TrimSpace(string(out))
		if strings.Count(last, " idle") == len(Nodes) {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("the Slurm nodes did not become idle within 60s (sinfo: %q); logs in %s:\n%s", last, c.Dir, c.logs())
}

// Command runs a Slurm client command against the cluster.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// stop cancels every job still queued, waits for them to leave the
// queue, then stops the daemons and the watchdog.
func (c *Cluster) stop(t *testing.T, procs []*exec.Cmd, dog *exec.Cmd) {
	defer func() {
		// SIGKILL: its SIGTERM handler is for a test process that died.
		_ = syscall.Kill(-dog.Process.Pid, syscall.SIGKILL)
		_ = dog.Wait()
	}()
	ctx := context.Background()
	if out, err := c.Command(ctx, "squeue", "--noheader", "--format=%A"); err == nil && len(bytes.TrimSpace(out)) > 0 {
		for _, id := range strings.Fields(string(out)) {
			_, _ = c.Command(ctx, "scancel", id)
		}
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			out, err := c.Command(ctx, "squeue", "--noheader", "--format=%A")
			if err != nil || len(bytes.TrimSpace(out)) == 0 {
				break
			}
		}
	}
	for _, p := range procs {
		if p == nil || p.Process == nil {
			continue
		}
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if t.Failed() {
		t.Logf("Slurm logs in %s:\n%s", c.Dir, c.logs())
	}
}

// logs is the tail of every log of the cluster, for a failure message.
func (c *Cluster) logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(c.Dir, "log", "*"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if len(data) > 2000 {
			data = data[len(data)-2000:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(f), data)
	}
	return b.String()
}
