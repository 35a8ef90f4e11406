package dirlock

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

const helperEnv = "DIRLOCK_TEST_HOLD"

// TestHelperHold is the child process of the tests below: it takes the
// lock named by the environment, says so on stdout and waits to be killed.
func TestHelperHold(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process for the lock tests")
	}
	if _, err := Acquire(path, Self()); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("held\n")
	time.Sleep(time.Minute)
}

func startHolder(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHold$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "held" {
		t.Fatalf("holder did not take the lock: %q %v", line, err)
	}
	return cmd
}

func TestSecondAcquireIsRefusedNamingTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	first, err := Acquire(path, Holder{PID: 4242, Host: "lab-host", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(path, Self())
	var held *HeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrHeld) {
		t.Fatalf("second Acquire = %v, want a HeldError", err)
	}
	for _, want := range []string{"pid 4242", "lab-host", "2026-01-02T03:04:05Z"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %s", err, want)
		}
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(path, Self())
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	defer again.Release()
	if again.Previous.PID != 4242 {
		t.Errorf("Previous = %+v, want the released holder", again.Previous)
	}
}

func TestLiveHolderInAnotherProcessRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	cmd := startHolder(t, path)
	_, err := Acquire(path, Self())
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid)) {
		t.Fatalf("Acquire while pid %d holds it = %v", cmd.Process.Pid, err)
	}
}

func TestLockOfAKilledProcessIsTakenOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	cmd := startHolder(t, path)
	pid := cmd.Process.Pid
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	l, err := Acquire(path, Self())
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	defer l.Release()
	if l.Previous.PID != pid {
		t.Errorf("Previous = %+v, want the killed pid %d", l.Previous, pid)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"pid":`+strconv.Itoa(os.Getpid())) {
		t.Errorf("lock file does not record the new holder: %s", data)
	}
}

func TestReleaseOfNilIsANoOp(t *testing.T) {
	var l *Lock
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestProbeTellsALiveHolderFromADeadOne(t *testing.T) {
	dir := t.TempDir()
	if _, held, err := Probe(filepath.Join(dir, "missing")); err != nil || held {
		t.Fatalf("Probe of a missing file = held %v, %v; want not held", held, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Error("Probe created the lock file")
	}

	path := filepath.Join(dir, "lock")
	cmd := startHolder(t, path)
	h, held, err := Probe(path)
	if err != nil || !held || h.PID != cmd.Process.Pid {
		t.Fatalf("Probe while pid %d holds it = %+v, held %v, %v", cmd.Process.Pid, h, held, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	h, held, err = Probe(path)
	if err != nil || held {
		t.Fatalf("Probe after the holder was killed = held %v, %v; want not held", held, err)
	}
	if h.PID != cmd.Process.Pid {
		t.Errorf("Probe names %+v, want the last holder %d", h, cmd.Process.Pid)
	}
	// A probe leaves the lock free for a writer.
	l, err := Acquire(path, Self())
	if err != nil {
		t.Fatalf("Acquire after a probe: %v", err)
	}
	l.Release()
}

func TestProbeInTheHoldingProcessSeesItsLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	l, err := Acquire(path, Self())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, held, err := Probe(path); err != nil || !held {
		t.Fatalf("Probe of a lock this process holds = held %v, %v; want held", held, err)
	}
}
