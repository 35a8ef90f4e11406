package benchmarks

import (
	"fmt"
	"maps"
	"strings"
)

// TaskSet is a named list of task ids.
type TaskSet struct {
	Name        string
	Description string
	// IDs are the tasks, in a stable order. Empty for a set discovered from
	// where tasks are (skillsbench-all); Resolver.TaskSetIDs lists it.
	IDs []string
	// Pinned sets never change their ids between releases of the harness.
	Pinned bool
	// Upstream is where the content of the set's tasks was pinned from;
	// nil for sets shipped inside the harness or not pinned.
	Upstream *Upstream
	// Content pins each task's content: task id -> git tree id of its
	// folder (see TreeID). A task of a pinned set missing here has its id
	// pinned but not its content.
	Content map[string]string
}

// Upstream is the repository and commit a set's task content is pinned to.
type Upstream struct {
	Repo   string // e.g. github.com/owner/name
	Commit string // the full commit id
	// Archive is a download of that commit; TasksPath is the folder in the
	// repository that holds the tasks.
	Archive   string
	TasksPath string
}

// Short is the repository with the commit's first seven digits.
func (u Upstream) Short() string { return u.Repo + "@" + u.Commit[:min(7, len(u.Commit))] }

// Unverified lists the set's tasks whose content is not pinned, in order.
func (s TaskSet) Unverified() []string {
	if s.Content == nil {
		return nil
	}
	var out []string
	for _, id := range s.IDs {
		if _, ok := s.Content[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// Task set names.
const (
	SetSmoke          = "smoke"
	SetSkillsBench10  = "skillsbench-10"
	SetSkillsBenchAll = "skillsbench-all"
)

// skillsBench10 is a fixed, diverse subset of SkillsBench.
var skillsBench10 = []string{
	"fix-build-google-auto",
	"fix-build-agentops",
	"adaptive-cruise-control",
	"azure-bgp-oscillation-route-leak",
	"bike-rebalance",
	"citation-check",
	"court-form-filling",
	"crystallographic-wyckoff-position-analysis",
	"data-to-d3",
	"dialogue-parser",
}

// skillsBench10Upstream is the commit the skillsbench-10 pins were read
// from. The same tree ids hold for any source whose task folders are
// byte-identical, whatever archive carries them.
var skillsBench10Upstream = Upstream{
	Repo:      "github.com/yujianll/skill-usage",
	Commit:    "f9f89fadc42150d0b3de9dfa8ff31da31607ca89",
	Archive:   "https://github.com/yujianll/skill-usage/archive/f9f89fadc42150d0b3de9dfa8ff31da31607ca89.zip",
	TasksPath: "tasks",
}

// skillsBench10Content are the tree ids of the set's task folders at
// skillsBench10Upstream (`git rev-parse f9f89fa:tasks/ID`). bike-rebalance
// is not in that commit: its id stays in the set, its content unpinned.
var skillsBench10Content = map[string]string{
	"fix-build-google-auto":                      "18fdf8a366465849ad39ad34b4ab4d264db62d72",
	"fix-build-agentops":                         "18d75473dd3cbc2985b83236474d81413e16d91b",
	"adaptive-cruise-control":                    "7fc2bd4ef7991c0c9e66110abcdde0b1022861cb",
	"azure-bgp-oscillation-route-leak":           "cd39cfd67ce5da95864e0fd49afb2819ba8b0b10",
	"citation-check":                             "116c67376afdc73dc0b3d6de1352d0da70fce9cc",
	"court-form-filling":                         "a472a6dd9e420f7d4984f6a2c58d4f928edaf81c",
	"crystallographic-wyckoff-position-analysis": "c6d8263ff4f2da978a3308acddf2824d909e6ecf",
	"data-to-d3":                                 "75301e09cce9501981dba85a406e04428f8195dd",
	"dialogue-parser":                            "f9d318c956cded6154cf90f77072057c455df222",
}

// TaskSets lists every known task set. It returns fresh slices, so callers
// may modify the result.
func TaskSets() []TaskSet {
	return []TaskSet{
		{
			Name:        SetSmoke,
			Description: "small tasks shipped with the harness; build offline from harness-base:bookworm",
			IDs:         SmokeIDs(),
			Pinned:      true,
		},
		{
			Name:        SetSkillsBench10,
			Description: "ten SkillsBench tasks; fetched from the archive (most need network to build)",
			IDs:         append([]string(nil), skillsBench10...),
			Pinned:      true,
			Upstream:    new(skillsBench10Upstream),
			Content:     maps.Clone(skillsBench10Content),
		},
		{
			Name:        SetSkillsBenchAll,
			Description: "every task in the configured archive, under task_dirs and in the cache",
			Pinned:      false,
		},
	}
}

// LookupTaskSet returns the set with this name.
func LookupTaskSet(name string) (TaskSet, error) {
	var names []string
	for _, s := range TaskSets() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return TaskSet{}, fmt.Errorf("unknown task set %q; known sets: %s (or name tasks with --tasks)", name, strings.Join(names, ", "))
}

// ContentPin returns the tree id a pinned set records for task id, and the
// set; ok is false when no set pins the task's content.
func ContentPin(id string) (tree string, set TaskSet, ok bool) {
	for _, s := range TaskSets() {
		if t, found := s.Content[id]; found {
			return t, s, true
		}
	}
	return "", TaskSet{}, false
}

// ContentMismatchError is a task whose content differs from its pin.
type ContentMismatchError struct {
	ID, Set, Pin, Got string
	Upstream          *Upstream
}

func (e *ContentMismatchError) Error() string {
	from := ""
	if e.Upstream != nil {
		from = fmt.Sprintf(" (the folder %s/%s at %s)", e.Upstream.TasksPath, e.ID, e.Upstream.Short())
	}
	return fmt.Sprintf("content differs from its pin in task set %s: tree id %s, pinned %s%s; "+
		"use an archive of the pinned source, or put your own copy under [executor_runtime] task_dirs, where it is used as it is but is not the pinned task",
		e.Set, e.Got, e.Pin, from)
}

// checkContentPin refuses the task folder dir when a pinned set records
// another content for task id. Tasks no set pins pass.
func (r *Resolver) checkContentPin(id, dir string) error {
	lookup := r.contentPin
	if lookup == nil {
		lookup = ContentPin
	}
	pin, set, ok := lookup(id)
	if !ok {
		return nil
	}
	got, err := TreeID(dir)
	if err != nil {
		return fmt.Errorf("check its content against its pin: %w", err)
	}
	if got != pin {
		return &ContentMismatchError{ID: id, Set: set.Name, Pin: pin, Got: got, Upstream: set.Upstream}
	}
	return nil
}
