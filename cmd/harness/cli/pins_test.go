package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/benchmarks"
)

// Without an archive, syncing skillsbench-10 is bad usage that says which
// archive holds the pinned content (repository, commit, URL) and which keys
// to set in which file.
func TestTasksSyncWithoutArchiveNamesThePinnedSource(t *testing.T) {
	env := newTaskEnv(t, "")
	r := runCLI(t, nil, "tasks", "sync", "--task-set", "skillsbench-10", "--config-dir", env.configDir)
	if r.code != ExitUsage {
		t.Fatalf("exit %d, want %d: %s", r.code, ExitUsage, r.errOut)
	}
	for _, want := range []string{"no task archive is configured", "github.com/yujianll/skill-usage",
		"f9f89fadc42150d0b3de9dfa8ff31da31607ca89", "https://github.com/yujianll/skill-usage/archive/f9f89fadc42150d0b3de9dfa8ff31da31607ca89.zip",
		"archive_url", "archive_sha256", filepath.Join(env.configDir, "default.toml")} {
		if !strings.Contains(r.errOut, want) {
			t.Errorf("error lacks %q:\n%s", want, r.errOut)
		}
	}
	// A task no set pins gets the general advice, without a source it is
	// not from.
	r = runCLI(t, nil, "tasks", "sync", "--tasks", "my-own-task", "--config-dir", env.configDir)
	if r.code != ExitUsage || strings.Contains(r.errOut, "skill-usage") || !strings.Contains(r.errOut, "archive_url") {
		t.Errorf("exit %d: %s", r.code, r.errOut)
	}
}

// tasks list claims no more than is pinned: skillsbench-10 pins its ids and
// the content of nine tasks, and bike-rebalance is named as not verified.
func TestTasksListSaysHowFarContentIsPinned(t *testing.T) {
	env := newTaskEnv(t, "")
	r := runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	if !hasRow(r.out, "skillsbench-10", "ids,", "content", "9/10") || !hasRow(r.out, "smoke", "ids+content", "(shipped)") ||
		!hasRow(r.out, "skillsbench-all", "no") {
		t.Errorf("PINNED column:\n%s", r.out)
	}
	if !strings.Contains(r.out, "content not verified for bike-rebalance") {
		t.Errorf("bike-rebalance not named as unverified:\n%s", r.out)
	}

	r = runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir, "--json")
	var l TasksListing
	if err := json.Unmarshal([]byte(r.out), &l); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.TaskSets {
		if s.Name == benchmarks.SetSkillsBench10 && (s.Content != contentPartial || strings.Join(s.Unverified, ",") != "bike-rebalance" ||
			s.Upstream != "github.com/yujianll/skill-usage@f9f89fa") {
			t.Errorf("skillsbench-10 = %+v", s)
		}
	}
}

// A local copy of a pinned task is shown as differing from its pin; a task
// without a pin as not verified.
func TestTasksListTaskSetChecksLocalCopiesAgainstPins(t *testing.T) {
	env := newTaskEnv(t, "")
	writeTask(t, env.tasksDir, "citation-check", taskFiles("research"))
	writeTask(t, env.tasksDir, "bike-rebalance", taskFiles("ops"))
	r := runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir, "--task-set", "skillsbench-10", "--json")
	var l TasksListing
	if err := json.Unmarshal([]byte(r.out), &l); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	for _, ti := range l.Tasks {
		switch ti.ID {
		case "citation-check":
			if ti.Pin != "116c67376afdc73dc0b3d6de1352d0da70fce9cc" || ti.PinMatch == nil || *ti.PinMatch {
				t.Errorf("citation-check pin %q match %v, want its pin and a mismatch", ti.Pin, ti.PinMatch)
			}
		case "bike-rebalance":
			if ti.Pin != "" || ti.PinMatch != nil {
				t.Errorf("bike-rebalance pin %q match %v, want none", ti.Pin, ti.PinMatch)
			}
		}
	}
	r = runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir, "--task-set", "skillsbench-10")
	if !hasRow(r.out, "citation-check", "yes", "task_dirs", "research", "hard", "DIFFERS-from-pin") ||
		!hasRow(r.out, "bike-rebalance", "yes", "task_dirs", "ops", "hard", "not-verified") ||
		!hasRow(r.out, "dialogue-parser", "no", "-", "-", "-", "pinned") {
		t.Errorf("text listing:\n%s", r.out)
	}
}
