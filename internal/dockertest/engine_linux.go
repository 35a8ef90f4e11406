package dockertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// engineStartTimeout bounds how long a started dockerd may take to answer.
const engineStartTimeout = 60 * time.Second

// StartEngine starts a Docker engine of the test's own beside the host's,
// for tests that spread trials over several engines: a dockerd with its
// socket, data root, exec root and pidfile in a temporary directory, in a
// network namespace of its own, with no bridge and no iptables rules, so it
// leaves the host's networking alone.
// It tries the fuse-overlayfs storage driver (what works inside a
// container), then vfs. It returns the engine's address (unix://...). When
// the test ends the engine is stopped and its directory, mounts included,
// removed. Where no dockerd can start the test ends through Unavailable.
func StartEngine(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Docker engine")
	}
	dockerd, err := exec.LookPath("dockerd")
	if err != nil {
		Unavailable(t, "no dockerd to start a second engine with: %v", err)
	}
	if os.Geteuid() != 0 {
		Unavailable(t, "starting a second dockerd needs root")
	}
	// The host engine's bridge must outlive this engine.
	if _, err := net.InterfaceByName("docker0"); err == nil {
		t.Cleanup(func() {
			if _, err := net.InterfaceByName("docker0"); err != nil {
				t.Errorf("the host's docker0 bridge is gone after the second engine ran: %v", err)
			}
		})
	}
	var failures []string
	for _, driver := range storageDrivers() {
		addr, why := startEngine(t, dockerd, driver)
		if why == "" {
			return addr
		}
		failures = append(failures, driver+": "+why)
	}
	Unavailable(t, "a second dockerd did not start:\n%s", strings.Join(failures, "\n"))
	return ""
}

// storageDrivers are the drivers to try, best first.
func storageDrivers() []string {
	if _, err := exec.LookPath("fuse-overlayfs"); err == nil {
		return []string{"fuse-overlayfs", "vfs"}
	}
	return []string{"vfs"}
}

// startEngine starts one dockerd with the storage driver and waits until
// it answers. It returns its address, or why it did not start; a started
// engine is stopped in t's cleanup.
func startEngine(t testing.TB, dockerd, driver string) (addr, why string) {
	// Short: a socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "hdk")
	if err != nil {
		t.Fatal(err)
	}
	// An empty configuration file: the host's daemon.json names the host
	// engine's data root, which this engine must not share.
	conf := filepath.Join(dir, "daemon.json")
	if err := os.WriteFile(conf, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr = "unix://" + filepath.Join(dir, "docker.sock")
	logPath := filepath.Join(dir, "dockerd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(dockerd, "--config-file", conf, "--host", addr,
		"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "docker.pid"), "--storage-driver", driver,
		"--bridge=none", "--iptables=false", "--ip-masq=false")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, so the containerd it starts can be stopped
	// with it; and its own network namespace: an engine without a bridge
	// deletes any interface named docker0 when it starts, which would
	// take the host engine's bridge away.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWNET}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Sprintf("start %s: %v", dockerd, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() { stopEngine(t, cmd.Process.Pid, exited, dir) }
	if err := waitForEngine(addr, exited); err != nil {
		stop()
		return "", fmt.Sprintf("%v\n%s", err, tail(logPath))
	}
	t.Cleanup(stop)
	return addr, ""
}

// waitForEngine pings the engine at addr until it answers, it exits or
// engineStartTimeout passes.
func waitForEngine(addr string, exited <-chan struct{}) error {
	c, err := client.NewClientWithOpts(client.WithHost(addr), client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(engineStartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := c.Ping(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("dockerd exited")
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dockerd did not answer within %s: %w", engineStartTimeout, err)
		}
	}
}

// stopEngine stops the dockerd (its process group, if it does not stop by
// itself) and removes its directory after unmounting what is mounted below.
func stopEngine(t testing.TB, pid int, exited <-chan struct{}, dir string) {
	select {
	case <-exited: // its pid may already belong to another process
	default:
		syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			syscall.Kill(-pid, syscall.SIGKILL)
			<-exited
		}
	}
	for _, m := range mountsBelow(dir) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Logf("unmount %s: %v", m, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("remove the second engine's directory: %v", err)
	}
}

// mountsBelow lists the mount points under dir, deepest first.
func mountsBelow(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// The fifth field is the mount point, with spaces escaped as \040.
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			out = append(out, strings.ReplaceAll(fields[4], `\040`, " "))
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// tail is the end of a log file, for a failure message.
func tail(path string) string {
	data, _ := os.ReadFile(path)
	const max = 2000
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(data)
}
