package cli

import (
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
)

func conditionNames() string {
	var s []string
	for _, c := range conditions.All() {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

func taskSetNames() string {
	var s []string
	for _, t := range benchmarks.TaskSets() {
		s = append(s, t.Name)
	}
	return strings.Join(s, ", ")
}

func presetNames() string {
	var s []string
	for _, p := range conditions.Presets() {
		s = append(s, p.Name)
	}
	return strings.Join(s, ", ")
}

func completeConditions(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, c := range conditions.All() {
		out = append(out, string(c))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeRoutings completes a routing value.
func completeRoutings(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, r := range conditions.Routings() {
		out = append(out, string(r))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completePolicies completes one entry of a comma list: the prefix typed
// so far is kept.
func completePolicies(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if !strings.Contains(toComplete, ",") {
		return []cobra.Completion{"none", "all", "executor", "planner", "mediator"}, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	head := toComplete[:strings.LastIndex(toComplete, ",")+1]
	var out []cobra.Completion
	for _, r := range conditions.SkillRoles() {
		if !strings.Contains(head, string(r)) {
			out = append(out, head+string(r))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

func completeAgents(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{
		cobra.CompletionWithDesc(harness.AgentLab, "the lab's LLM Executor"),
		cobra.CompletionWithDesc(harness.AgentOracle, "the task's reference solution"),
		cobra.CompletionWithDesc(harness.AgentNop, "does nothing"),
	}, cobra.ShellCompDirectiveNoFileComp
}

// completeInstalledAgents adds the preset installed agents to the kinds.
func completeInstalledAgents(cmd *cobra.Command, args []string, s string) ([]cobra.Completion, cobra.ShellCompDirective) {
	out, dir := completeAgents(cmd, args, s)
	presets, err := config.AgentPresets()
	if err != nil {
		return out, dir
	}
	for _, name := range slices.Sorted(maps.Keys(presets)) {
		out = append(out, cobra.CompletionWithDesc(name, "installed agent (preset)"))
	}
	return out, dir
}

// completeLabs offers the labs of --config-dir when it is already on the
// command line, else the built-in ones.
func completeLabs(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	dir, _ := cmd.Flags().GetString("config-dir")
	cfg, err := config.Load(dir)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return cfg.LabNames(), cobra.ShellCompDirectiveNoFileComp
}

func completePresets(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	head := ""
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		head = toComplete[:i+1]
	}
	var out []cobra.Completion
	for _, p := range conditions.Presets() {
		if !strings.Contains(head, p.Name) {
			out = append(out, head+p.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func completeTaskSets(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, s := range benchmarks.TaskSets() {
		out = append(out, cobra.CompletionWithDesc(s.Name, s.Description))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// registerTaskCompletion makes the named flags complete task ids: one id
// for a string flag, one entry of a comma list for a list flag.
func registerTaskCompletion(cmd *cobra.Command, f *Factory, flags ...string) {
	for _, name := range flags {
		list := cmd.Flags().Lookup(name).Value.Type() == "stringSlice"
		_ = cmd.RegisterFlagCompletionFunc(name, completeTaskIDs(f, list))
	}
}

// completeTaskIDs completes a task id, or with list one entry of a comma
// list (--tasks a,b): the smoke tasks, the pinned sets' tasks and the tasks on disk under
// task_dirs or in the cache of --config-dir's configuration, each with
// where it comes from. Ids already in the list are not offered again.
// It reads no archive and writes nothing.
func completeTaskIDs(f *Factory, list bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		head := ""
		if i := strings.LastIndex(toComplete, ","); list && i >= 0 {
			head = toComplete[:i+1]
		}
		given := map[string]bool{}
		for _, id := range strings.Split(head, ",") {
			given[id] = true
		}
		var out []cobra.Completion
		for _, t := range knownTaskIDs(cmd, f) {
			if !given[t.id] {
				out = append(out, cobra.CompletionWithDesc(head+t.id, t.from))
			}
		}
		if list {
			// No space after an id, so the list can go on with a comma.
			return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

type knownTask struct{ id, from string }

// knownTaskIDs lists every task id a run could name here, in the order:
// smoke, pinned sets, task_dirs and cache (sorted within each).
func knownTaskIDs(cmd *cobra.Command, f *Factory) []knownTask {
	seen := map[string]bool{}
	var out []knownTask
	add := func(from string, ids []string) {
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				out = append(out, knownTask{id, from})
			}
		}
	}
	add("smoke task", benchmarks.SmokeIDs())
	for _, s := range benchmarks.TaskSets() {
		if s.Pinned && s.Name != benchmarks.SetSmoke {
			add("task of "+s.Name, s.IDs)
		}
	}
	if f != nil && f.Resolver != nil {
		dir, _ := cmd.Flags().GetString("config-dir")
		if cfg, err := config.Load(dir); err == nil {
			if r, err := f.Resolver(cfg.ExecutorRuntime); err == nil {
				add("task on disk", r.LocalIDs())
			}
		}
	}
	return out
}
