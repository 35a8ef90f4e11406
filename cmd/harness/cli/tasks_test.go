package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness"
)

// taskFiles returns the files of a small valid task whose [metadata] says
// category, difficulty and tags.
func taskFiles(category string) map[string]string {
	return map[string]string{
		"instruction.md": "Write /app/out.txt containing ok.\n",
		"task.toml": fmt.Sprintf(`schema_version = "1.0"
[metadata]
category = %q
difficulty = "hard"
tags = ["unit", "fixture"]
[agent]
timeout_sec = 60
[verifier]
timeout_sec = 30
[environment]
allow_internet = false
`, category),
		"environment/Dockerfile": "FROM harness-base:bookworm\nWORKDIR /app\n",
		"tests/test.sh":          "#!/bin/bash\nmkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\ngrep -qx ok /app/out.txt && echo 1 > /logs/verifier/reward.txt\n",
		"solution/solve.sh":      "#!/bin/bash\necho ok > /app/out.txt\n",
	}
}

// writeTask writes files as the task directory root/id and returns it.
func writeTask(t *testing.T, root, id string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, id)
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// taskEnv is a configuration directory whose task cache and task_dirs are
// temporary directories.
type taskEnv struct {
	configDir, cacheDir, tasksDir string
}

// newTaskEnv writes a default.toml with [executor_runtime] pointing at
// temporary directories, plus extra lines inside that table.
func newTaskEnv(t *testing.T, extra string) taskEnv {
	t.Helper()
	root := t.TempDir()
	e := taskEnv{configDir: filepath.Join(root, "config"), cacheDir: filepath.Join(root, "cache"), tasksDir: filepath.Join(root, "tasks")}
	for _, d := range []string{e.configDir, e.tasksDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	text := fmt.Sprintf("[executor_runtime]\ntask_cache_dir = %q\ntask_dirs = [%q]\n%s", e.cacheDir, e.tasksDir, extra)
	if err := os.WriteFile(filepath.Join(e.configDir, "default.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestTasksCommandsParseFlags(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T) any
		want any
	}{
		{"list defaults", func(t *testing.T) any {
			return parseWith(t, NewCmdTasksList, nil)
		}, TasksListOptions{}},
		{"list with set and json", func(t *testing.T) any {
			return parseWith(t, NewCmdTasksList, []string{"--task-set", "smoke", "--json", "--config-dir", "c"})
		}, TasksListOptions{TaskSet: "smoke", JSON: true, ConfigDir: "c"}},
		{"sync tasks and set", func(t *testing.T) any {
			return parseWith(t, NewCmdTasksSync, []string{"--tasks", "a,b", "--task-set", "smoke", "--json"})
		}, TasksSyncOptions{Tasks: []string{"a", "b"}, TaskSet: "smoke", JSON: true}},
		{"validate paths", func(t *testing.T) any {
			return parseWith(t, NewCmdTasksValidate, []string{".", "..", "--json"})
		}, TasksValidateOptions{Paths: []string{".", ".."}, JSON: true}},
		{"try defaults", func(t *testing.T) any {
			return parseWith(t, NewCmdTasksTry, []string{"csv-parser"})
		}, TasksTryOptions{Task: "csv-parser", Agent: "oracle", Out: DefaultTryOut}},
		{"try explicit", func(t *testing.T) any {
			return parseWith(t, NewCmdTasksTry, []string{"--agent", "nop", "x", "--keep", "--json", "--out", "o"})
		}, TasksTryOptions{Task: "x", Agent: "nop", Out: "o", Keep: true, JSON: true}},
		{"gc defaults", func(t *testing.T) any {
			return parseWith(t, NewCmdGC, nil)
		}, GCOptions{}},
		{"gc explicit", func(t *testing.T) any {
			return parseWith(t, NewCmdGC, []string{"--images", "--run", "r1", "--dry-run", "--json"})
		}, GCOptions{Images: true, RunID: "r1", DryRun: true, JSON: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.run(t)
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tt.want) {
				t.Errorf("options = %+v\nwant      %+v", got, tt.want)
			}
		})
	}
}

// parseWith runs the command built by newCmd on args with a runF that
// records its options, and returns them with the streams cleared.
func parseWith[O any](t *testing.T, newCmd func(*Factory, func(context.Context, *O) error) *cobra.Command, args []string) O {
	t.Helper()
	var got *O
	cmd := newCmd(&Factory{}, func(_ context.Context, o *O) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil {
		t.Fatal("run function not called")
	}
	return *got
}

func TestTasksAndGCUsageErrorsExit2(t *testing.T) {
	env := newTaskEnv(t, "")
	writeTask(t, env.tasksDir, "unsolved", func() map[string]string {
		f := taskFiles("x")
		delete(f, "solution/solve.sh")
		return f
	}())
	badConfig := t.TempDir()
	os.WriteFile(filepath.Join(badConfig, "default.toml"), []byte("[executor_runtime]\ntask_dirz = []\n"), 0o644)
	missing := filepath.Join(t.TempDir(), "nope")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown tasks subcommand", []string{"tasks", "bogus"}, "unknown command"},
		{"list argument", []string{"tasks", "list", "smoke"}, "--task-set"},
		{"list unknown set", []string{"tasks", "list", "--task-set", "nope"}, "unknown task set"},
		{"list bad config", []string{"tasks", "list", "--config-dir", badConfig}, "task_dirz"},
		{"sync nothing", []string{"tasks", "sync"}, "--tasks a,b"},
		{"sync skillsbench-all", []string{"tasks", "sync", "--task-set", "skillsbench-all"}, "name the tasks you want with --tasks"},
		{"sync empty id", []string{"tasks", "sync", "--tasks", "a,,b"}, "empty entry"},
		{"sync unknown set", []string{"tasks", "sync", "--task-set", "nope"}, "unknown task set"},
		{"sync without archive", []string{"tasks", "sync", "--tasks", "dialogue-parser", "--config-dir", env.configDir}, "archive_url"},
		{"validate missing path", []string{"tasks", "validate", missing}, "does not exist"},
		{"validate bad config", []string{"tasks", "validate", "--config-dir", badConfig}, "task_dirz"},
		{"try without task", []string{"tasks", "try"}, "exactly one"},
		{"try two tasks", []string{"tasks", "try", "a", "b"}, "exactly one"},
		{"try lab agent", []string{"tasks", "try", "a", "--agent", "lab"}, "harness run --agent lab"},
		{"try unknown agent", []string{"tasks", "try", "a", "--agent", "human"}, "unknown agent"},
		{"try empty out", []string{"tasks", "try", "a", "--out", " "}, "--out"},
		{"try unknown task", []string{"tasks", "try", "no-such-task", "--config-dir", env.configDir}, "no-such-task"},
		{"try missing task dir", []string{"tasks", "try", missing + "/", "--config-dir", env.configDir}, "does not exist"},
		{"try oracle without solution", []string{"tasks", "try", "unsolved", "--config-dir", env.configDir}, "solution/solve.sh"},
		{"gc argument", []string{"gc", "run-1"}, "--run ID"},
		{"gc empty run", []string{"gc", "--run", ""}, "--run needs a run id"},
		{"gc unknown flag", []string{"gc", "--all"}, "unknown flag"},
		{"gc bad config", []string{"gc", "--config-dir", badConfig}, "task_dirz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, tt.args...)
			if r.code != ExitUsage {
				t.Errorf("exit code = %d, want 2 (stdout %q, stderr %q)", r.code, r.out, r.errOut)
			}
			if !strings.Contains(r.errOut, tt.want) {
				t.Errorf("stderr %q does not mention %q", r.errOut, tt.want)
			}
		})
	}
}

func TestTasksListShowsSetsAndLocalTasks(t *testing.T) {
	env := newTaskEnv(t, "")
	writeTask(t, env.tasksDir, "alpha", taskFiles("testing"))
	writeTask(t, env.tasksDir, "broken", map[string]string{"task.toml": "[agent]\ntimeout_sec = \"abc\"\n"})
	writeTask(t, filepath.Join(env.cacheDir, "tasks"), "beta", taskFiles("cached"))

	r := runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var l TasksListing
	if err := json.Unmarshal([]byte(r.out), &l); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.out)
	}
	if l.CacheDir != env.cacheDir || !slices.Equal(l.TaskDirs, []string{env.tasksDir}) {
		t.Errorf("cache %q, task dirs %q", l.CacheDir, l.TaskDirs)
	}
	var sets []string
	for _, s := range l.TaskSets {
		sets = append(sets, s.Name)
		if s.Name == benchmarks.SetSmoke && (s.Count == nil || *s.Count != len(benchmarks.SmokeIDs()) || !s.Pinned) {
			t.Errorf("smoke set = %+v", s)
		}
	}
	if !slices.Equal(sets, []string{benchmarks.SetSmoke, benchmarks.SetSkillsBench10, benchmarks.SetSkillsBenchAll}) {
		t.Errorf("sets = %v", sets)
	}
	byID := map[string]TaskInfo{}
	for _, ti := range l.Tasks {
		byID[ti.ID] = ti
	}
	alpha := byID["alpha"]
	if alpha.Source != "task_dirs" || alpha.Category != "testing" || alpha.Difficulty != "hard" ||
		!slices.Equal(alpha.Tags, []string{"unit", "fixture"}) || alpha.Dir != filepath.Join(env.tasksDir, "alpha") {
		t.Errorf("alpha = %+v", alpha)
	}
	if b := byID["beta"]; b.Source != "cache" || b.Category != "cached" {
		t.Errorf("beta = %+v", b)
	}
	for _, id := range benchmarks.SmokeIDs() {
		if s := byID[id]; s.Source != "smoke" || !strings.HasPrefix(s.Dir, env.cacheDir) {
			t.Errorf("smoke task %s = %+v", id, s)
		}
	}
	if _, ok := byID["broken"]; ok {
		t.Error("a task that does not load is listed as available")
	}
	if len(l.Problems) != 1 || !strings.Contains(l.Problems[0], "broken") {
		t.Errorf("problems = %q", l.Problems)
	}

	r = runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	if !hasRow(r.out, "alpha", "task_dirs", "testing", "hard", "unit,fixture") || !hasRow(r.out, "smoke", "ids+content", "(shipped)", "6") {
		t.Errorf("text listing lacks rows:\n%s", r.out)
	}
	if !strings.Contains(r.errOut, "broken") || !strings.Contains(r.errOut, "harness tasks validate") {
		t.Errorf("stderr does not report the broken task: %q", r.errOut)
	}
}

func TestTasksListSearchesTaskDirsAndSaysWhyNot(t *testing.T) {
	root := t.TempDir()
	checkout, empty := filepath.Join(root, "checkout"), filepath.Join(root, "empty")
	writeTask(t, filepath.Join(checkout, "bench-main", "tasks"), "deep", taskFiles("nested"))
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	env := newTaskEnv(t, "")
	text := fmt.Sprintf("[executor_runtime]\ntask_cache_dir = %q\ntask_dirs = [%q, %q]\n", env.cacheDir, checkout, empty)
	if err := os.WriteFile(filepath.Join(env.configDir, "default.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir)
	if r.code != 0 || !hasRow(r.out, "deep", "task_dirs", "nested") {
		t.Errorf("exit %d; the task two levels down is not listed:\n%s", r.code, r.out)
	}
	if !strings.Contains(r.errOut, "task_dirs: "+empty+": no task folder") {
		t.Errorf("stderr does not say why %s supplies nothing: %q", empty, r.errOut)
	}
	remote := fmt.Sprintf("%sarchive_url = \"https://example.invalid/t.zip\"\narchive_sha256 = %q\n", text, strings.Repeat("a", 64))
	if err := os.WriteFile(filepath.Join(env.configDir, "default.toml"), []byte(remote), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir)
	if !hasRow(r.out, "skillsbench-all", "no", "1") || !strings.Contains(r.out, "archive https://example.invalid/t.zip is not downloaded yet") {
		t.Errorf("listing does not say the archive's tasks are not counted:\n%s", r.out)
	}
	r = runCLI(t, nil, "run", "--task-set", "skillsbench-all", "--offline", "--dry-run", "--json", "--config-dir", env.configDir)
	var p harness.Plan
	if err := json.Unmarshal([]byte(r.out), &p); err != nil || r.code != 0 || strings.Join(p.Tasks, ",") != "deep" {
		t.Errorf("skillsbench-all from task_dirs: exit %d, %v %v\n%s", r.code, p.Tasks, err, r.errOut)
	}
}

// hasRow reports whether some line of out starts with the given fields.
func hasRow(out string, fields ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(fields) && slices.Equal(f[:len(fields)], fields) {
			return true
		}
	}
	return false
}

func TestTasksListTaskSetShowsAvailability(t *testing.T) {
	env := newTaskEnv(t, "")
	writeTask(t, env.tasksDir, "citation-check", taskFiles("research"))

	r := runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir, "--task-set", "skillsbench-10", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var l TasksListing
	if err := json.Unmarshal([]byte(r.out), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.TaskSets) != 1 || l.TaskSets[0].Name != "skillsbench-10" || len(l.Tasks) != 10 {
		t.Fatalf("listing = %+v", l)
	}
	for _, ti := range l.Tasks {
		want := ti.ID == "citation-check"
		if ti.Available == nil || *ti.Available != want {
			t.Errorf("%s available = %v, want %v", ti.ID, ti.Available, want)
		}
		if want && (ti.Source != "task_dirs" || ti.Category != "research") {
			t.Errorf("citation-check = %+v", ti)
		}
	}

	r = runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir, "--task-set", "skillsbench-10")
	if !hasRow(r.out, "citation-check", "yes", "task_dirs") || !hasRow(r.out, "dialogue-parser", "no") ||
		!strings.Contains(r.out, "9 of 10 tasks are not available locally") || !strings.Contains(r.out, "harness tasks sync --task-set skillsbench-10") {
		t.Errorf("text listing:\n%s", r.out)
	}

	r = runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir, "--task-set", "smoke", "--json")
	var smoke TasksListing
	if err := json.Unmarshal([]byte(r.out), &smoke); err != nil {
		t.Fatal(err)
	}
	for _, ti := range smoke.Tasks {
		if ti.Available == nil || !*ti.Available || ti.Source != "smoke" {
			t.Errorf("smoke task %+v not available", ti)
		}
	}
}

func TestTasksValidate(t *testing.T) {
	env := newTaskEnv(t, "")
	writeTask(t, env.tasksDir, "alpha", taskFiles("testing"))
	writeTask(t, env.tasksDir, "broken", map[string]string{
		"instruction.md": "do it\n",
		"task.toml":      "[metadata]\ncategory = \"x\"\n\n[agent]\ntimeout_sec = \"abc\"\n",
		"tests/test.sh":  "echo 1 > /logs/verifier/reward.txt\n",
	})

	t.Run("smoke tasks by default", func(t *testing.T) {
		r := runCLI(t, nil, "tasks", "validate", "--config-dir", env.configDir)
		if r.code != 0 {
			t.Fatalf("exit %d:\n%s%s", r.code, r.out, r.errOut)
		}
		for _, id := range benchmarks.SmokeIDs() {
			if !hasRow(r.out, "ok", id) {
				t.Errorf("no ok line for %s:\n%s", id, r.out)
			}
		}
		if !strings.Contains(r.out, env.cacheDir) {
			t.Errorf("smoke tasks were not validated in the configured cache:\n%s", r.out)
		}
	})
	t.Run("one valid task", func(t *testing.T) {
		r := runCLI(t, nil, "tasks", "validate", filepath.Join(env.tasksDir, "alpha"))
		if r.code != 0 || !hasRow(r.out, "ok", "alpha") {
			t.Errorf("exit %d:\n%s%s", r.code, r.out, r.errOut)
		}
	})
	t.Run("directory with an invalid task", func(t *testing.T) {
		r := runCLI(t, nil, "tasks", "validate", env.tasksDir)
		if r.code != ExitFailed {
			t.Errorf("exit %d, want 1", r.code)
		}
		toml := filepath.Join(env.tasksDir, "broken", "task.toml")
		if !hasRow(r.out, "ok", "alpha") || !hasRow(r.out, "FAIL", "broken") || !strings.Contains(r.out, toml+":5") {
			t.Errorf("report:\n%s", r.out)
		}
		if !strings.Contains(r.errOut, "1 of 2 task(s) invalid") {
			t.Errorf("stderr %q", r.errOut)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := runCLI(t, nil, "tasks", "validate", "--json", env.tasksDir)
		var rep ValidateReport
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, r.out)
		}
		if r.code != ExitFailed || rep.OK || len(rep.Tasks) != 2 || !rep.Tasks[0].OK || rep.Tasks[1].OK || len(rep.Tasks[1].Errors) == 0 {
			t.Errorf("exit %d, report %+v", r.code, rep)
		}
	})
	t.Run("task skills", func(t *testing.T) {
		root := t.TempDir()
		files := taskFiles("skills")
		files["environment/Dockerfile"] = "FROM harness-base:bookworm\nWORKDIR /app\nCOPY skills /app/skills\n"
		files["environment/skills/plotting/SKILL.md"] = "---\nname: plotting\ndescription: Draws plots.\n---\nBody.\n"
		files["environment/skills/stray/notes.txt"] = "no entrypoint here\n"
		writeTask(t, root, "with-skills", files)
		r := runCLI(t, nil, "tasks", "validate", root)
		if r.code != 0 || !strings.Contains(r.out, "skills: plotting, - (in the image at /app/skills)") ||
			!strings.Contains(r.out, "warning: task skill "+filepath.Join(root, "with-skills", "environment", "skills", "stray")+": no SKILL.md") {
			t.Errorf("exit %d:\n%s%s", r.code, r.out, r.errOut)
		}
		j := runCLI(t, nil, "tasks", "validate", "--json", root)
		var rep ValidateReport
		if err := json.Unmarshal([]byte(j.out), &rep); err != nil || len(rep.Tasks) != 1 || len(rep.Tasks[0].Skills) != 2 || rep.Tasks[0].Skills[0].Name != "plotting" {
			t.Errorf("--json: %v\n%s", err, j.out)
		}
	})
	t.Run("a directory without tasks", func(t *testing.T) {
		r := runCLI(t, nil, "tasks", "validate", t.TempDir())
		if r.code != ExitFailed || !strings.Contains(r.out, "no task.toml") {
			t.Errorf("exit %d:\n%s", r.code, r.out)
		}
	})
}

// tarGz packs the tasks (id -> files) under a top directory, as a source
// archive of a benchmark repository would.
func tarGz(t *testing.T, tasks map[string]map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	ids := make([]string, 0, len(tasks))
	for id := range tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		for name, content := range tasks[id] {
			hdr := &tar.Header{Name: "bench-main/tasks/" + id + "/" + name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}
			if err := tw.WriteHeader(hdr); err != nil {
				t.Fatal(err)
			}
			tw.Write([]byte(content))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	return buf.Bytes()
}

func TestTasksSyncFromArchive(t *testing.T) {
	data := tarGz(t, map[string]map[string]string{"gamma": taskFiles("archived"), "delta": taskFiles("archived")})
	archive := filepath.Join(t.TempDir(), "tasks.tar.gz")
	if err := os.WriteFile(archive, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	pin := func(s string) string {
		return fmt.Sprintf("archive_url = %q\narchive_sha256 = %q\n", "file://"+archive, s)
	}
	env := newTaskEnv(t, pin(hex.EncodeToString(sum[:])))

	r := runCLI(t, nil, "tasks", "sync", "--config-dir", env.configDir, "--tasks", "gamma,config-repair", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var rep SyncReport
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	want := []SyncedTask{{ID: "gamma", Source: "archive", Dir: filepath.Join(env.cacheDir, "tasks", "gamma")}}
	if len(rep.Tasks) != 2 || rep.Tasks[0] != want[0] || rep.Tasks[1].ID != "config-repair" || rep.Tasks[1].Source != "smoke" {
		t.Errorf("report = %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(env.cacheDir, "tasks", "gamma", "task.toml")); err != nil {
		t.Errorf("gamma not in the cache: %v", err)
	}
	if !strings.Contains(r.errOut, "fetching 1 task(s) from file://"+archive) {
		t.Errorf("stderr %q does not say what is fetched", r.errOut)
	}

	l := runCLI(t, nil, "tasks", "list", "--config-dir", env.configDir)
	if !hasRow(l.out, "gamma", "cache", "archived") {
		t.Errorf("synced task not listed from the cache:\n%s", l.out)
	}

	t.Run("text output", func(t *testing.T) {
		r := runCLI(t, nil, "tasks", "sync", "--config-dir", env.configDir, "--tasks", "delta")
		if r.code != 0 || !strings.Contains(r.out, "synced 1 task(s) into "+env.cacheDir) || !hasRow(r.out, "delta", "archive", filepath.Join(env.cacheDir, "tasks", "delta")) {
			t.Errorf("exit %d:\n%s%s", r.code, r.out, r.errOut)
		}
	})
	t.Run("a task missing from the archive is named and the rest synced", func(t *testing.T) {
		env := newTaskEnv(t, pin(hex.EncodeToString(sum[:])))
		r := runCLI(t, nil, "tasks", "sync", "--config-dir", env.configDir, "--tasks", "gamma,omega,delta")
		if r.code != ExitFailed || !strings.Contains(r.errOut, "not in archive") || !strings.Contains(r.errOut, "omega") {
			t.Errorf("exit %d, stderr %q", r.code, r.errOut)
		}
		if !strings.Contains(r.out, "synced 2 task(s)") || strings.Contains(r.out, "omega") {
			t.Errorf("stdout %q, want gamma and delta synced", r.out)
		}
		for _, id := range []string{"gamma", "delta"} {
			if _, err := os.Stat(filepath.Join(env.cacheDir, "tasks", id, "task.toml")); err != nil {
				t.Errorf("%s was not installed: %v", id, err)
			}
		}
		j := runCLI(t, nil, "tasks", "sync", "--config-dir", env.configDir, "--tasks", "gamma,omega", "--json")
		var rep SyncReport
		if err := json.Unmarshal([]byte(j.out), &rep); err != nil || j.code != ExitFailed || len(rep.Missing) != 1 || rep.Missing[0] != "omega" || len(rep.Tasks) != 1 {
			t.Errorf("--json: exit %d, %+v (%v)", j.code, rep, err)
		}
	})
	t.Run("an archive that differs from its pin is refused", func(t *testing.T) {
		env := newTaskEnv(t, pin(strings.Repeat("0", 64)))
		r := runCLI(t, nil, "tasks", "sync", "--config-dir", env.configDir, "--tasks", "gamma")
		if r.code != ExitFailed || !strings.Contains(r.errOut, "refused") {
			t.Errorf("exit %d, stderr %q", r.code, r.errOut)
		}
	})
}

func TestTryExitCodes(t *testing.T) {
	one := 1.0
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		tr   executor.Trace
		want int
	}{
		{"scored", context.Background(), executor.Trace{Status: executor.StatusScored, Reward: &one}, ExitOK},
		{"scored zero", context.Background(), executor.Trace{Status: executor.StatusScored, Reward: new(float64)}, ExitOK},
		{"verifier error", context.Background(), executor.Trace{Status: executor.StatusVerifierError}, ExitFailed},
		{"agent error", context.Background(), executor.Trace{Status: executor.StatusAgentError}, ExitFailed},
		{"agent timeout", context.Background(), executor.Trace{Status: executor.StatusAgentTimeout, Reward: &one}, ExitFailed},
		{"env failure", context.Background(), executor.Trace{Status: executor.StatusEnvFailure}, ExitEnvFailures},
		{"cancelled", cancelled, executor.Trace{Status: executor.StatusInterrupted, Cancelled: true}, ExitInterrupted},
		{"env failure after interrupt", cancelled, executor.Trace{Status: executor.StatusEnvFailure}, ExitInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tryExit(tt.ctx, &tt.tr, "/job")); got != tt.want {
				t.Errorf("exit code = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestTraceSummaryShowsOutcome(t *testing.T) {
	half := 0.5
	tr := &executor.Trace{TaskID: "csv-parser", Agent: "oracle", Status: executor.StatusScored, Reward: &half,
		Tests: executor.Tests{Passed: 3, Failed: 3, Total: 6}, JobDir: "/data/job", Image: "harness-task-csv-parser:abc",
		Errors: []string{"first problem\nsecond line"}, Warnings: []string{"storage_mb = 10 is not enforced"}}
	var b bytes.Buffer
	writeTraceSummary(&b, tr, &benchmarks.Task{ID: "csv-parser"})
	for _, want := range []string{"status     scored", "reward     0.5", "3 passed, 3 failed, 6 total", "job dir    /data/job",
		"  first problem\n  second line", "the oracle should score 1", "timings    build", "warning    storage_mb = 10 is not enforced"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	writeTraceSummary(&b, &executor.Trace{Status: executor.StatusVerifierError, VerifierOutput: "line1\nboom\n"}, &benchmarks.Task{})
	if !strings.Contains(b.String(), "reward     none") || !strings.Contains(b.String(), "  boom") {
		t.Errorf("verifier error summary:\n%s", b.String())
	}
}

// notifyWriter records writes and signals the first one.
type notifyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
	once  sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.once.Do(func() { close(w.first) })
	return w.buf.Write(p)
}

// slowBuild is a backend whose EnsureImage "builds" until release closes.
type slowBuild struct {
	executor.Backend
	release <-chan struct{}
}

func (s slowBuild) EnsureImage(ctx context.Context, _ *benchmarks.Task) (string, bool, error) {
	<-s.release
	return "harness-task-x:1", true, nil
}

func TestAnnouncingBackendTellsWhenBuilding(t *testing.T) {
	w := &notifyWriter{first: make(chan struct{})}
	// The build ends only once the notice has been written, so the test
	// does not depend on how long anything takes.
	// The clock advances 2.5s between its readings: the build is timed
	// with the clock the backend is handed.
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	reads := 0
	clock := func() time.Time { reads++; return start.Add(time.Duration(reads-1) * 2500 * time.Millisecond) }
	b := &announcingBackend{Backend: slowBuild{release: w.first}, w: w, after: 0, now: clock}
	img, built, err := b.EnsureImage(context.Background(), &benchmarks.Task{ID: "x", Dir: "/t/x"})
	if err != nil || !built || img != "harness-task-x:1" {
		t.Fatalf("EnsureImage = %q, %v, %v", img, built, err)
	}
	out := w.buf.String()
	if !strings.Contains(out, "building the image for task x from /t/x/environment") || !strings.Contains(out, "built image harness-task-x:1 in 2.5s") {
		t.Errorf("notices = %q", out)
	}
}
