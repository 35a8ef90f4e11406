package docker

import (
	"errors"
	"os"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
)

func TestOwnerMayBeAlive(t *testing.T) {
	alive := func(pid int) (bool, error) {
		switch pid {
		case 10:
			return true, nil
		case 11:
			return false, nil
		}
		return false, errors.New("no permission to look")
	}
	tests := []struct {
		name, owner string
		want        string // substring of the reason; "" means removable
	}{
		{"no label: made before owners were recorded", "", ""},
		{"malformed label", "nohostpid", ""},
		{"non-numeric pid", "here/abc", ""},
		{"zero pid", "here/0", ""},
		{"live process on this host", "here/10", "process 10 is still running"},
		{"dead process on this host", "here/11", ""},
		{"check fails", "here/12", "cannot tell whether its harness process 12 is alive"},
		{"another host", "there/10", "on host there, which cannot be checked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ownerMayBeAlive(tt.owner, "here", alive)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("ownerMayBeAlive(%q) = %q, want %q", tt.owner, got, tt.want)
			}
			if got != "" && !strings.Contains(got, "--force") {
				t.Errorf("reason %q does not say how to override", got)
			}
		})
	}
}

func TestProcessAlive(t *testing.T) {
	tests := []struct {
		name string
		pid  int
		want bool
	}{
		{"this process", os.Getpid(), true},
		{"above any pid_max", 1 << 30, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := processAlive(tt.pid)
			if err != nil || got != tt.want {
				t.Errorf("processAlive(%d) = %v, %v; want %v", tt.pid, got, err, tt.want)
			}
		})
	}
}

func TestRemovalUnderway(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"gone", cerrdefs.ErrNotFound.WithMessage("No such container: abc"), true},
		{"being removed", cerrdefs.ErrConflict.WithMessage("removal of container abc is already in progress"), true},
		{"other conflict", cerrdefs.ErrConflict.WithMessage("container is paused"), false},
		{"engine error", errors.New("connection reset"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := removalUnderway(tt.err); got != tt.want {
				t.Errorf("removalUnderway(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// The leftover sweep of a resume keeps what a live process made, whatever
// run id it carries: only the containers of dead owners are leftovers.
func TestSweepKeepsWhatALiveOwnerMade(t *testing.T) {
	alive := func(pid int) (bool, error) { return pid == 10 || pid == 20, nil }
	tests := []struct {
		name, owner string
		keep        bool
	}{
		{"this process", "here/20", true},
		{"another live process on this host", "here/10", true},
		{"a dead process on this host", "here/11", false},
		{"a process on another host", "there/11", true},
		{"no owner recorded", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sweepKeeps(tt.owner, "here/20", "here", alive); got != tt.keep {
				t.Errorf("sweepKeeps(%q) = %v, want %v", tt.owner, got, tt.keep)
			}
		})
	}
}
