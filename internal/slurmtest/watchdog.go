package slurmtest

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// watchdogScript ends what is left of a cluster once the test process has
// died without its cleanup (a timeout's panic, a kill -9). The daemons die
// with the test process, but not what slurmd started: each job's
// slurmstepd is the init process's child, and it and the job's processes
// (array elements with containers of their own) would run on. On SIGTERM,
// which the kernel sends it when the test process dies, the script
// signals every process whose environment names the cluster's slurm.conf
// or that holds a file of the cluster open: SIGTERM, so that an element
// can remove its containers, then SIGKILL.
const watchdogScript = `conf=$1 dir=$2
ours() {
	tr '\0' '\n' < /proc/$1/environ 2>/dev/null | grep -qxF "SLURM_CONF=$conf" && return 0
	ls -l /proc/$1/fd 2>/dev/null | grep -qF " $dir/"
}
stop() {
	for sig in TERM KILL; do
		for p in /proc/[0-9]*; do
			pid=${p#/proc/}
			[ "$pid" != $$ ] && ours "$pid" && kill -s $sig "$pid" 2>/dev/null
		done
		[ $sig = TERM ] && sleep 3
	done
	exit 0
}
trap stop TERM
while :; do sleep 1 & wait $!; done
`

// watchdog starts watchdogScript for the cluster. Its environment lacks
// SLURM_CONF and its output goes nowhere, so that neither it nor the
// commands it runs look like the cluster's.
func (c *Cluster) watchdog(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "watchdog", c.Conf, c.Dir)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SLURM_CONF=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	whenParentDies(cmd.SysProcAttr, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the cluster's watchdog: %v", err)
	}
	return cmd
}
