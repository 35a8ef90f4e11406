package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// Two students with their own skills, one task they take turns at: what
// inspect --routing reports follows the run's routing, and run.json and
// the dry run record it; the report shows routing only when there was some.
func TestInspectRoutingFollowsTheRunsRouting(t *testing.T) {
	const lab = "[labs.default]\nassignment = \"rotate\"\n[labs.default.students.strong]\nown_skill = true\n" +
		"[labs.default.students.weak]\nmodel = \"cheap\"\nown_skill = true\n"
	tests := []struct {
		routing string
		// form is the form every item must have; "" wants no item.
		form string
	}{
		{"isolated", ""},
		{"pooled", "pooled"},
		{"mediated", "note"},
	}
	for _, tt := range tests {
		t.Run(tt.routing, func(t *testing.T) {
			_, cfgDir, f := studentsSetup(t, lab)
			args := []string{"run", "--tasks", "leak-marker", "--iterations", "2", "--condition", "learned_mediator", "--skill-updates", "all",
				"--routing", tt.routing, "--config-dir", cfgDir}
			dry := runCLI(t, f, append(args, "--dry-run")...)
			if dry.code != ExitOK || !strings.Contains(dry.out, "ROUTING") || !strings.Contains(dry.out, " "+tt.routing+" ") {
				t.Fatalf("dry run: exit %d, want the routing %s in its rows:\n%s%s", dry.code, tt.routing, dry.out, dry.errOut)
			}
			out := t.TempDir()
			r := runCLI(t, f, append(args, "--out", out)...)
			if r.code != ExitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
			}
			runs, _ := filepath.Glob(filepath.Join(out, "*"))
			if len(runs) != 1 {
				t.Fatalf("want one run directory under %s, got %v", out, runs)
			}
			var m rundir.Manifest
			data, err := os.ReadFile(filepath.Join(runs[0], rundir.ManifestFile))
			if err != nil || json.Unmarshal(data, &m) != nil || m.Routing != tt.routing {
				t.Errorf("run.json records routing %q (%v), want %q", m.Routing, err, tt.routing)
			}
			ins := runCLI(t, nil, "inspect", runs[0], "--routing", "--json")
			if ins.code != ExitOK {
				t.Fatalf("inspect --routing: exit %d\n%s%s", ins.code, ins.out, ins.errOut)
			}
			// The report has a Routing section exactly when items were routed.
			repDir := filepath.Join(t.TempDir(), "report")
			if rep := runCLI(t, nil, "report", runs[0], "--out", repDir); rep.code != ExitOK {
				t.Fatalf("report: exit %d\n%s%s", rep.code, rep.out, rep.errOut)
			}
			md, err := os.ReadFile(filepath.Join(repDir, "summary.md"))
			if err != nil || strings.Contains(string(md), "## Routing") != (tt.form != "") {
				t.Errorf("report under %s routing (%v), want a Routing section %v:\n%s", tt.routing, err, tt.form != "", md)
			}
			if tt.form == "" {
				if strings.TrimSpace(ins.out) != "[]" {
					t.Errorf("isolated routing lists %s, want an empty list", ins.out)
				}
				return
			}
			var items []inspect.RoutedItem
			if err := json.Unmarshal([]byte(ins.out), &items); err != nil {
				t.Fatalf("inspect --routing JSON: %v\n%s", err, ins.out)
			}
			if len(items) == 0 {
				t.Fatalf("%s routing lists no routed item", tt.routing)
			}
			for _, it := range items {
				if it.From == "" || it.To == "" || it.From == it.To || it.Iteration < 1 || it.Task != "leak-marker" || it.Trial == "" || it.Form != tt.form {
					t.Errorf("routed item %+v lacks its provenance or has the wrong form (want %s)", it, tt.form)
				}
			}
			text := runCLI(t, nil, "inspect", runs[0], "--routing")
			if text.code != ExitOK || !strings.Contains(text.out, "FROM") || !strings.Contains(text.out, items[0].From) {
				t.Errorf("inspect --routing text: exit %d\n%s", text.code, text.out)
			}
		})
	}
}

func TestRoutingFlagErrors(t *testing.T) {
	_, cfgDir, f := studentsSetup(t, "[labs.default.students.solo]\nmodel = \"cheap\"\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--routing", "shared"}, "unknown routing \"shared\""},
		{[]string{"run", "--routing", "mediated"}, "own_skill = true"},
		{[]string{"matrix", "--preset", "full_coevolution", "--routing", "isolated,isolated"}, "lists isolated twice"},
	}
	for _, tt := range tests {
		args := append(tt.args, "--tasks", "leak-marker", "--config-dir", cfgDir, "--dry-run")
		r := runCLI(t, f, args...)
		if r.code != ExitUsage || !strings.Contains(r.errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want a usage error that says %q", tt.args, r.code, r.errOut, tt.want)
		}
	}
}
