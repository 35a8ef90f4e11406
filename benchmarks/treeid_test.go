package benchmarks

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitOut runs git in dir with a fixed identity and no user configuration.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TreeID agrees with git on a folder with the cases git's tree format
// distinguishes: executable and plain files, a symbolic link, nested
// folders, an empty folder (not recorded), and names whose order changes
// when a folder is compared as "name/".
func TestTreeIDMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	files := map[string]string{
		"tasks/demo/task.toml":              "version = \"1.0\"\n",
		"tasks/demo/instruction.md":         "Do the thing.\n",
		"tasks/demo/a.b":                    "sorts before the folder a\n",
		"tasks/demo/a/inner.txt":            "inside a\n",
		"tasks/demo/a-c":                    "dash sorts before slash\n",
		"tasks/demo/tests/test.sh":          "#!/bin/sh\nexit 0\n",
		"tasks/demo/environment/Dockerfile": "FROM scratch\n",
		"tasks/demo/empty.txt":              "",
	}
	for name, body := range files {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	task := filepath.Join(repo, "tasks", "demo")
	if err := os.Chmod(filepath.Join(task, "tests", "test.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("instruction.md", filepath.Join(task, "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(task, "nothing", "here"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitOut(t, repo, "init", "-q")
	gitOut(t, repo, "add", "-A")
	gitOut(t, repo, "commit", "-q", "-m", "tasks")

	for _, sub := range []string{"tasks/demo", "tasks/demo/a", "tasks"} {
		want := gitOut(t, repo, "rev-parse", "HEAD:"+sub)
		got, err := TreeID(filepath.Join(repo, filepath.FromSlash(sub)))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("TreeID(%s) = %s, git says %s", sub, got, want)
		}
	}

	// A changed byte or a lost execute bit changes the id.
	before, _ := TreeID(task)
	if err := os.Chmod(filepath.Join(task, "tests", "test.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	if after, _ := TreeID(task); after == before {
		t.Error("dropping the execute bit left the tree id unchanged")
	}
}

func TestTreeIDRefusesAnEmptyFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := TreeID(dir); err == nil || !strings.Contains(err.Error(), "holds no files") {
		t.Errorf("TreeID of an empty folder: %v", err)
	}
}

// Sync installs a task whose content matches its pin and refuses one whose
// content differs, naming it and installing nothing, not even the tasks
// that passed.
func TestSyncChecksContentPins(t *testing.T) {
	work := t.TempDir()
	// The pinned content: the test task as an archive installs it.
	probe := &Resolver{CacheDir: filepath.Join(work, "probe"), ArchiveURL: writeArchive(t, work, "probe.zip", zipBytes(t, taskMembers("", "alpha")))}
	dirs, err := probe.Sync(t.Context(), []string{"alpha"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := TreeID(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	ms := append(taskMembers("tasks/", "pinned-task"), taskMembers("tasks/", "free-task")...)
	archive := writeArchive(t, work, "tasks.zip", zipBytes(t, ms))
	pins := func(pin string) func(string) (string, TaskSet, bool) {
		return func(id string) (string, TaskSet, bool) {
			return pin, TaskSet{Name: "test-set"}, id == "pinned-task"
		}
	}

	r := &Resolver{CacheDir: filepath.Join(work, "good"), ArchiveURL: archive, contentPin: pins(want)}
	if _, err := r.Sync(t.Context(), []string{"pinned-task", "free-task"}); err != nil {
		t.Fatalf("content matching its pin was refused: %v", err)
	}

	other := strings.Repeat("0", 40)
	r = &Resolver{CacheDir: filepath.Join(work, "bad"), ArchiveURL: archive, contentPin: pins(other)}
	_, err = r.Sync(t.Context(), []string{"pinned-task", "free-task"})
	var mismatch *ContentMismatchError
	if !errors.As(err, &mismatch) || mismatch.ID != "pinned-task" || mismatch.Got != want || mismatch.Pin != other {
		t.Fatalf("error = %v, want the pinned task's mismatch", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "task pinned-task") || !strings.Contains(msg, "test-set") {
		t.Errorf("message %q does not name the task and its set", msg)
	}
	if files := regularFiles(t, r.CacheDir); len(files) != 0 {
		t.Errorf("sync installed %v although a task differs from its pin", files)
	}
}

// The shipped pins apply without configuration: a task named like one of
// skillsbench-10 but with other content is refused.
func TestSyncRefusesAnImpostorOfAPinnedTask(t *testing.T) {
	work := t.TempDir()
	archive := writeArchive(t, work, "tasks.zip", zipBytes(t, taskMembers("tasks/", "dialogue-parser")))
	r := &Resolver{CacheDir: filepath.Join(work, "cache"), ArchiveURL: archive}
	_, err := r.Sync(t.Context(), []string{"dialogue-parser"})
	if err == nil || !strings.Contains(err.Error(), "task dialogue-parser") || !strings.Contains(err.Error(), "f9d318c956cded6154cf90f77072057c455df222") {
		t.Fatalf("error = %v, want dialogue-parser refused against its pin", err)
	}
}

// skillsbench-10 pins the content of every task its upstream commit holds,
// as full git tree ids, and names the one it cannot pin.
func TestSkillsBench10PinsContent(t *testing.T) {
	set, err := LookupTaskSet(SetSkillsBench10)
	if err != nil {
		t.Fatal(err)
	}
	if set.Upstream == nil || set.Upstream.Commit != "f9f89fadc42150d0b3de9dfa8ff31da31607ca89" ||
		!strings.Contains(set.Upstream.Archive, set.Upstream.Commit) || set.Upstream.TasksPath != "tasks" {
		t.Errorf("upstream = %+v", set.Upstream)
	}
	if got := strings.Join(set.Unverified(), ","); got != "bike-rebalance" {
		t.Errorf("unverified = %q, want bike-rebalance", got)
	}
	for id, tree := range set.Content {
		if len(tree) != 40 || strings.Trim(tree, "0123456789abcdef") != "" {
			t.Errorf("%s: pin %q is not a git object id", id, tree)
		}
		if pin, _, ok := ContentPin(id); !ok || pin != tree {
			t.Errorf("ContentPin(%s) = %q, %v", id, pin, ok)
		}
	}
	if len(set.Content) != 9 {
		t.Errorf("%d content pins, want 9", len(set.Content))
	}
}
