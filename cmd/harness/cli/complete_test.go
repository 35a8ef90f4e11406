package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/benchmarks"
)

// Task-id flags complete the smoke tasks, the pinned sets' tasks and the
// tasks on disk (task_dirs of --config-dir), one entry of a comma list at a
// time; tasks try completes an id or, when none matches, a directory.
func TestCompletionOffersTaskIDs(t *testing.T) {
	tasks := t.TempDir()
	for _, f := range []string{"task.toml", "instruction.md"} {
		if err := os.MkdirAll(filepath.Join(tasks, "my-local-task"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tasks, "my-local-task", f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfgDir := t.TempDir()
	cfg := fmt.Sprintf("[executor_runtime]\ntask_cache_dir = %q\ntask_dirs = [%q]\n", t.TempDir(), tasks)
	if err := os.WriteFile(filepath.Join(cfgDir, "default.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	pinned, err := benchmarks.LookupTaskSet(benchmarks.SetSkillsBench10)
	if err != nil {
		t.Fatal(err)
	}
	list := fmt.Sprintf(":%d", cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace)
	one := fmt.Sprintf(":%d", cobra.ShellCompDirectiveNoFileComp)
	tests := []struct {
		name      string
		args      []string
		want      []string
		notWanted []string
		directive string
	}{
		{"run --tasks: every known task", []string{"run", "--config-dir", cfgDir, "--tasks", ""},
			[]string{"csv-parser\tsmoke task", pinned.IDs[0] + "\ttask of " + pinned.Name, "my-local-task\ttask on disk"}, nil, list},
		{"the next entry of a list keeps the head and skips what is given", []string{"run", "--tasks", "csv-parser,"},
			[]string{"csv-parser,log-analysis"}, []string{"csv-parser,csv-parser"}, list},
		{"matrix --heldout-tasks", []string{"matrix", "--heldout-tasks", ""}, []string{"orbital-period"}, nil, list},
		{"matrix --validate-tasks", []string{"matrix", "--validate-tasks", "a,"}, []string{"a,csv-parser"}, nil, list},
		{"tasks sync --tasks", []string{"tasks", "sync", "--tasks", ""}, []string{pinned.IDs[0]}, nil, list},
		{"gc --task: one id", []string{"gc", "--config-dir", cfgDir, "--task", ""}, []string{"my-local-task"}, nil, one},
		{"inspect --task: one id, commas are not lists", []string{"inspect", "--task", "x,"}, []string{"csv-parser"}, []string{"x,csv-parser"}, one},
		{"tasks try: an id", []string{"tasks", "try", "csv"}, []string{"csv-parser"}, []string{"log-analysis"}, one},
		{"tasks try: a directory when no id matches", []string{"tasks", "try", "./my"}, nil, []string{"csv-parser"},
			fmt.Sprintf(":%d", cobra.ShellCompDirectiveFilterDirs)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, append([]string{"__complete"}, tt.args...)...)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.errOut)
			}
			lines := strings.Split(strings.TrimSpace(r.out), "\n")
			if last := lines[len(lines)-1]; last != tt.directive {
				t.Errorf("directive %s, want %s", last, tt.directive)
			}
			for _, w := range tt.want {
				if !containsLine(lines, w) {
					t.Errorf("no completion %q in:\n%s", w, r.out)
				}
			}
			for _, n := range tt.notWanted {
				if containsLine(lines, n) {
					t.Errorf("completion %q offered:\n%s", n, r.out)
				}
			}
		})
	}
}

// containsLine reports whether a completion is want, with or without a
// description.
func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want || strings.HasPrefix(l, want+"\t") {
			return true
		}
	}
	return false
}
