package rundir

import (
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/config"
)

// A run made by a binary that does not know its commit says so in
// run.json, with how to build one that does; a known commit adds nothing.
func TestCreateWarnsOfABuildWithoutCommit(t *testing.T) {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		commit string
		warn   bool
	}{
		{CommitUnknown, true},
		{"0123456789abcdef0123456789abcdef01234567", false},
		{"0123456789abcdef0123456789abcdef01234567-dirty", false},
	}
	for _, tt := range tests {
		t.Run(tt.commit, func(t *testing.T) {
			spec := rundirTestSpec(cfg)
			spec.Meta.GitCommit = tt.commit
			d, err := Create(t.TempDir(), spec)
			if err != nil {
				t.Fatal(err)
			}
			reread, err := Open(d.Path)
			if err != nil {
				t.Fatal(err)
			}
			m := reread.Manifest()
			got := strings.Join(m.Warnings, "\n")
			if tt.warn != strings.Contains(got, "make build") || tt.warn != strings.Contains(got, `git_commit = "unknown"`) {
				t.Errorf("git_commit %q: warnings %q", m.GitCommit, m.Warnings)
			}
		})
	}
}
