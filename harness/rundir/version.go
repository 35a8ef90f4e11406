package rundir

import (
	"runtime/debug"
	"strings"
)

// Version is the harness release. Release builds set it with
//
//	-ldflags "-X github.com/mediated-coevo/harness/harness/rundir.Version=v1.2.3"
//
// and everything else reports "dev".
var Version = "dev"

// gitCommit may be set the same way (-X ...rundir.gitCommit=<sha>[-dirty]);
// when empty, GitCommit falls back to what the Go toolchain stamped into
// the binary.
var gitCommit = ""

// GitCommit is the commit the binary was built from, with "-dirty" when the
// working tree had uncommitted changes, or "unknown" when neither the linker
// flags nor the build information say (go test binaries, for example).
func GitCommit() string {
	if c := strings.TrimSpace(gitCommit); c != "" {
		return c
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return CommitUnknown
	}
	return commitFromSettings(info.Settings)
}

// commitFromSettings reads vcs.revision and vcs.modified from the build
// settings the toolchain records.
func commitFromSettings(settings []debug.BuildSetting) string {
	var rev string
	var dirty bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return CommitUnknown
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// VersionString is the one-line version shown by `harness --version`.
func VersionString() string {
	return Version + " (commit " + GitCommit() + ")"
}

// CommitUnknown is GitCommit of a binary that does not know its commit.
const CommitUnknown = "unknown"

// BuildWarning says what is lost when a run's binary does not know the
// commit it was built from ("" when it does): results that cannot be
// traced to their source. `make build` stamps the commit.
func BuildWarning(commit string) string {
	if commit != "" && commit != CommitUnknown {
		return ""
	}
	return "this harness binary does not know the git commit it was built from (git_commit = \"unknown\"), so the run's results cannot be traced to the code that made them; build it with `make build` in a git checkout"
}
