package rundir

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestCommitFromSettings(t *testing.T) {
	tests := []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"no vcs information", nil, "unknown"},
		{"clean tree", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}, "abc123"},
		{"modified tree is dirty", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}, "abc123-dirty"},
		{"modified without revision", []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := commitFromSettings(tt.settings); got != tt.want {
				t.Errorf("commitFromSettings = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGitCommitPrefersLinkerValue(t *testing.T) {
	old := gitCommit
	t.Cleanup(func() { gitCommit = old })
	gitCommit = "feedface-dirty"
	if got := GitCommit(); got != "feedface-dirty" {
		t.Errorf("GitCommit = %q, want the -ldflags value", got)
	}
	if got := VersionString(); !strings.Contains(got, Version) || !strings.Contains(got, "feedface-dirty") {
		t.Errorf("VersionString = %q, want version and commit", got)
	}
}
