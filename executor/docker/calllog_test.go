package docker

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/config"
)

// With HARNESS_DOCKER_CALL_LOG set, every engine call the backend makes is
// a line of the log: start, duration, status and the call, ids shortened;
// unset, nothing is written.
func TestCallLogRecordsEveryCall(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/_ping"):
			w.Write([]byte("OK"))
		case strings.HasSuffix(r.URL.Path, "/info"):
			time.Sleep(20 * time.Millisecond)
			w.Write([]byte(`{"NCPU":2,"Driver":"overlay2"}`))
		case strings.HasSuffix(r.URL.Path, "/containers/"+id+"/json"):
			w.Write([]byte(`{"Id":"` + id + `","State":{"Running":true}}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message":"no such image"}`))
		}
	}))
	defer engine.Close()
	host := "tcp://" + strings.TrimPrefix(engine.URL, "http://")

	logPath := filepath.Join(t.TempDir(), "calls.txt")
	t.Setenv(CallLogEnv, logPath)
	before := time.Now()
	d, err := New(context.Background(), config.ExecutorRuntime{DockerHost: host})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.cli.ContainerInspect(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.imageExists(context.Background(), "absent:1"); ok || err != nil {
		t.Fatalf("imageExists = %v, %v", ok, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := []string{"200 HEAD /_ping", "200 GET /info", "200 GET /containers/{id}/json", "404 GET /images/absent:1/json"}
	if len(lines) != len(want) {
		t.Fatalf("log has %d lines, want %d:\n%s", len(lines), len(want), data)
	}
	for i, line := range lines {
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 || f[2] != want[i] {
			t.Errorf("line %d = %q, want the call %q", i+1, line, want[i])
			continue
		}
		start, err1 := strconv.ParseFloat(f[0], 64)
		dur, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil || start < float64(before.UnixMilli())-1 || dur < 0 {
			t.Errorf("line %d = %q: start or duration unreadable or wrong", i+1, line)
		}
		if want[i] == "200 GET /info" && dur < 20 {
			t.Errorf("info took %v ms in the log, but the engine took at least 20", dur)
		}
	}

	t.Setenv(CallLogEnv, "")
	d, err = New(context.Background(), config.ExecutorRuntime{DockerHost: host})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if data2, _ := os.ReadFile(logPath); string(data2) != string(data) {
		t.Errorf("with %s unset the log still grew:\n%s", CallLogEnv, data2)
	}
}

// A call log that cannot be opened is refused with its variable named.
func TestCallLogUnwritable(t *testing.T) {
	t.Setenv(CallLogEnv, filepath.Join(t.TempDir(), "missing", "calls.txt"))
	_, err := New(context.Background(), config.ExecutorRuntime{DockerHost: "tcp://127.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), CallLogEnv) {
		t.Fatalf("err = %v, want one naming %s", err, CallLogEnv)
	}
}
