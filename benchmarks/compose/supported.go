package compose

import (
	"strings"

	"github.com/compose-spec/compose-go/v2/schema"
	"github.com/compose-spec/compose-go/v2/tree"
)

// honoured are the compose attributes the harness acts on, with everything
// below each. Any other attribute of the specification is named in a
// warning: an allowlist, so that one the specification gains later is
// reported until the harness handles it.
var honoured = []string{
	"name", "version",
	"services.*.build.context", "services.*.build.dockerfile", "services.*.build.args", "services.*.build.target",
	"services.*.image", "services.*.command", "services.*.entrypoint",
	"services.*.environment", "services.*.env_file",
	"services.*.working_dir", "services.*.user",
	"services.*.volumes", "services.*.tmpfs",
	"services.*.healthcheck", "services.*.depends_on",
	"services.*.networks", "services.*.restart",
	"services.*.cpus", "services.*.mem_limit", "services.*.pids_limit",
	"services.*.deploy.resources.limits.cpus", "services.*.deploy.resources.limits.memory",
	"services.*.deploy.resources.limits.pids",
	// Accepted and without effect on a trial: names and labels the
	// harness sets itself, ports only reachable on the trial's network
	// anyway, terminal and shutdown details.
	"services.*.expose", "services.*.container_name", "services.*.hostname", "services.*.labels",
	"services.*.init", "services.*.tty", "services.*.stdin_open",
	"services.*.stop_grace_period", "services.*.stop_signal",
	"networks", "volumes",
}

// parents are the paths above the honoured ones: they must be declared
// for the walk to reach their children, and declaring them honours none of
// their other children.
var parents = []string{"services", "services.*", "services.*.build", "services.*.deploy",
	"services.*.deploy.resources", "services.*.deploy.resources.limits"}

// supportedPaths are the specification's attribute paths the harness
// honours, for the loader's allowlist check.
func supportedPaths() []tree.Path {
	var out []tree.Path
	for _, p := range parents {
		out = append(out, tree.Path(p))
	}
	for _, p := range schema.AttributePaths() {
		s := string(p)
		for _, h := range honoured {
			if s == h || strings.HasPrefix(s, h+".") {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
