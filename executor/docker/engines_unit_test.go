package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/config"
)

// Tests in this file need no Docker engine.

func TestPick(t *testing.T) {
	eng := func(host string, busy, capacity int, warm ...string) *engine {
		e := &engine{host: host, busy: busy, capacity: capacity, warm: map[string]bool{}}
		for _, w := range warm {
			e.warm[w] = true
		}
		return e
	}
	tests := []struct {
		name    string
		engines []*engine
		want    string // "" for none
	}{
		{"first listed on a tie", []*engine{eng("a", 0, 2), eng("b", 0, 2)}, "a"},
		{"least loaded by share", []*engine{eng("a", 1, 2), eng("b", 1, 4)}, "b"},
		{"a full engine is skipped", []*engine{eng("a", 1, 1), eng("b", 3, 4)}, "b"},
		{"warm beats less loaded", []*engine{eng("a", 0, 4), eng("b", 3, 4, "t")}, "b"},
		{"a full warm engine is skipped", []*engine{eng("a", 2, 4), eng("b", 1, 1, "t")}, "a"},
		{"all full", []*engine{eng("a", 1, 1), eng("b", 2, 2, "t")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if e := pick(tt.engines, "t"); e != nil {
				got = e.host
			}
			if got != tt.want {
				t.Errorf("pick = %q, want %q", got, tt.want)
			}
		})
	}
}

// A trial waits for a place while every engine is full, takes the one a
// finished trial frees, and gives up when its context ends.
func TestPlaceWaitsForAFreePlace(t *testing.T) {
	p := &Engines{freed: make(chan struct{}), engines: []*engine{
		{host: "a", capacity: 1, warm: map[string]bool{}},
		{host: "b", capacity: 1, warm: map[string]bool{}},
	}}
	ctx := context.Background()
	first, _ := p.place(ctx, "t")
	second, _ := p.place(ctx, "t")
	if first.host != "a" || second.host != "b" {
		t.Fatalf("placed on %s and %s, want a and b", first.host, second.host)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := p.place(short, "t"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("place on full engines: %v, want the context's deadline", err)
	}
	got := make(chan *engine)
	go func() {
		e, _ := p.place(ctx, "t")
		got <- e
	}()
	p.unplace(second)
	select {
	case e := <-got:
		if e != second {
			t.Errorf("the waiting trial went to %s, want b", e.host)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting trial was not placed when b freed up")
	}
}

// A place is freed once however often its container is closed.
func TestPlacedContainerFreesItsPlaceOnce(t *testing.T) {
	released := 0
	c := &placedContainer{Container: &Container{keep: true, release: func() {}}, release: func() { released++ }}
	for range 3 {
		c.Close(context.Background())
	}
	if released != 1 {
		t.Errorf("place freed %d times, want 1", released)
	}
}

// An engine of docker_hosts that does not answer is named in the error.
func TestNewEnginesNamesTheEngineThatDoesNotAnswer(t *testing.T) {
	sock := "unix://" + filepath.Join(t.TempDir(), "none.sock")
	rt := config.ExecutorRuntime{DockerHosts: []config.DockerHost{{Host: sock, Capacity: 1}}}
	_, err := NewEngines(context.Background(), rt)
	if err == nil || !strings.Contains(err.Error(), "engine 1 of docker_hosts ("+sock+")") {
		t.Errorf("error %v does not name engine 1 and its address", err)
	}
}

// An ssh:// engine is reached through ssh (as the docker command reaches
// it), and errors name the address as configured.
func TestNewReachesSSHEnginesThroughSSH(t *testing.T) {
	// A stand-in ssh on PATH records that it was run, then fails as an
	// unreachable host would: the test sees the connection go through ssh
	// whatever ssh's exit races with.
	bin := t.TempDir()
	ran := filepath.Join(bin, "ran")
	script := "#!/bin/sh\necho \"$@\" >> " + ran + "\necho 'ssh: connect to host 127.0.0.1 port 1: Connection refused' >&2\nexit 255\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	addr := "ssh://nobody@127.0.0.1:1"
	rt := config.ExecutorRuntime{DockerHost: addr}
	_, err := New(context.Background(), rt)
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Docker engine at "+addr) {
		t.Errorf("error %v does not name %s", err, addr)
	}
	args, rerr := os.ReadFile(ran)
	if rerr != nil {
		t.Fatalf("ssh was never run: %v", rerr)
	}
	for _, want := range []string{"-l nobody", "-p 1", "127.0.0.1", "docker system dial-stdio"} {
		if !strings.Contains(string(args), want) {
			t.Errorf("ssh ran with %q; want %q (the engine's user, port, host and the dial command)", args, want)
		}
	}
}
