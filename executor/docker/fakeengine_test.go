package docker

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/executor"
)

// fakeEngine answers the calls of StopProcesses as an engine would: kill
// answers killStatus and killMessage, and the container's exit reaches the
// waiting client exitAfter after the kill.
type fakeEngine struct {
	killStatus  int
	killMessage string
	exitAfter   time.Duration
	killed      chan struct{}
	starts      atomic.Int32
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/wait"):
		// The engine answers at once and sends the exit when it comes.
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-f.killed:
		case <-r.Context().Done():
			return
		}
		time.Sleep(f.exitAfter)
		w.Write([]byte(`{"StatusCode":137}`))
	case strings.HasSuffix(p, "/kill"):
		close(f.killed)
		w.WriteHeader(f.killStatus)
		if f.killMessage != "" {
			w.Write([]byte(`{"message":"` + f.killMessage + `"}`))
		}
	case strings.HasSuffix(p, "/start"):
		f.starts.Add(1)
		w.WriteHeader(http.StatusNoContent)
	case strings.HasSuffix(p, "/json"):
		w.Write([]byte(`{"Id":"c0ffee","State":{"Running":true}}`))
	default:
		http.Error(w, `{"message":"unexpected call"}`, http.StatusNotImplemented)
	}
}

func fakeContainer(t *testing.T, h http.Handler) *Container {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cli, err := client.NewClientWithOpts(client.WithHost("tcp://"+srv.Listener.Addr().String()), client.WithVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return &Container{d: &Backend{cli: cli}, id: "c0ffee", release: func() {}}
}

// A kill that the engine sent but whose exit it did not see within its own
// short wait (a loaded machine) is waited out, not taken for a failure.
func TestStopProcessesWaitsOutALateExit(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		message  string
		wantErr  string
		restarts int32
	}{
		{"exit seen by the engine", http.StatusNoContent, "", "", 1},
		{"exit after the engine gave up", http.StatusInternalServerError,
			"Cannot kill container: c0ffee: tried to kill container, but did not receive an exit event", "", 1},
		{"kill refused", http.StatusInternalServerError, "permission denied", "kill container c0ffee", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeEngine{killStatus: tt.status, killMessage: tt.message, exitAfter: 300 * time.Millisecond, killed: make(chan struct{})}
			err := fakeContainer(t, f).StopProcesses(context.Background())
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("StopProcesses: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("StopProcesses = %v, want an error with %q", err, tt.wantErr)
			}
			if got := f.starts.Load(); got != tt.restarts {
				t.Errorf("container started again %d times, want %d", got, tt.restarts)
			}
		})
	}
}

// heldExecEngine answers an exec whose process exits (with exit code 3)
// after exitAfter while what it left in the background holds its output
// open for as long as the test runs.
type heldExecEngine struct {
	exitAfter time.Duration
	started   time.Time
	mu        sync.Mutex
	conns     []net.Conn
}

func (f *heldExecEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/exec"):
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"Id":"e1"}`))
	case strings.HasSuffix(p, "/start"):
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.started = time.Now()
		f.conns = append(f.conns, conn)
		f.mu.Unlock()
		buf.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		frame := []byte{1, 0, 0, 0, 0, 0, 0, 8}
		buf.Write(append(frame, "started\n"...))
		buf.Flush()
	case strings.HasSuffix(p, "/json"):
		f.mu.Lock()
		exited := !f.started.IsZero() && time.Since(f.started) >= f.exitAfter
		f.mu.Unlock()
		w.Write([]byte(fmt.Sprintf(`{"ID":"e1","Running":%v,"ExitCode":3}`, !exited)))
	default:
		http.Error(w, `{"message":"unexpected call"}`, http.StatusNotImplemented)
	}
}

func (f *heldExecEngine) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
}

// An exec ends when its process exits, even where the engine keeps its
// output open for as long as a child the command left behind holds it.
func TestExecEndsWhenItsProcessExitsWhileOutputIsHeld(t *testing.T) {
	f := &heldExecEngine{exitAfter: 300 * time.Millisecond}
	c := fakeContainer(t, f)
	t.Cleanup(f.close)
	res, err := c.Exec(context.Background(), executor.ExecRequest{Cmd: []string{"sh", "-c", "server & echo started"}, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Duration > 10*time.Second || res.TimedOut {
		t.Errorf("exec took %s (timed out %v), want it to end soon after its process exited", res.Duration, res.TimedOut)
	}
	if res.ExitCode != 3 || res.Stdout != "started\n" {
		t.Errorf("exit code %d stdout %q, want 3 and %q", res.ExitCode, res.Stdout, "started\n")
	}
}
