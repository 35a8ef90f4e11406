package cli

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// zipTasks packs the tasks (id -> files) under a checkout-like top folder;
// scripts are executable.
func zipTasks(t *testing.T, tasks map[string]map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	ids := make([]string, 0, len(tasks))
	for id := range tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		names := make([]string, 0, len(tasks[id]))
		for n := range tasks[id] {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			h := &zip.FileHeader{Name: "bench-main/tasks/" + id + "/" + n, Method: zip.Deflate}
			h.SetMode(0o644)
			if strings.HasSuffix(n, ".sh") {
				h.SetMode(0o755)
			}
			w, err := zw.CreateHeader(h)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte(tasks[id][n])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// archiveEnv is a configuration whose archive_url is a plain path to a
// pinned local zip of the given task ids, fetched on demand.
func archiveEnv(t *testing.T, ids ...string) taskEnv {
	t.Helper()
	tasks := map[string]map[string]string{}
	for _, id := range ids {
		tasks[id] = taskFiles("archived")
	}
	data := zipTasks(t, tasks)
	archive := filepath.Join(t.TempDir(), "bench.zip")
	if err := os.WriteFile(archive, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return newTaskEnv(t, fmt.Sprintf("archive_url = %q\narchive_sha256 = %q\nremote_fetch = true\n", archive, hex.EncodeToString(sum[:])))
}

func TestSkillsBenchAllDryRunPlansEveryArchivedTask(t *testing.T) {
	env := archiveEnv(t, "alpha", "beta")
	for _, cmd := range []string{"run", "matrix"} {
		t.Run(cmd, func(t *testing.T) {
			args := []string{cmd, "--task-set", "skillsbench-all", "--offline", "--iterations", "2", "--dry-run", "--json", "--config-dir", env.configDir}
			if cmd == "run" {
				args = append(args, "--agent", "oracle")
			}
			r := runCLI(t, nil, args...)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.errOut)
			}
			var p harness.Plan
			if err := json.Unmarshal([]byte(r.out), &p); err != nil {
				t.Fatalf("%v\n%s", err, r.out)
			}
			if strings.Join(p.Tasks, ",") != "alpha,beta" || p.TaskSet != "skillsbench-all" || p.Trials != len(p.Rows)*2*2 {
				t.Errorf("plan tasks %v (set %q), %d trials over %d rows", p.Tasks, p.TaskSet, p.Trials, len(p.Rows))
			}
			if strings.Join(p.Images, ",") != "alpha,beta" {
				t.Errorf("images %v", p.Images)
			}
		})
	}
	// A dry run fetches and writes nothing, not even the pinned archive.
	if _, err := os.Stat(env.cacheDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dry run wrote into the task cache (%v)", err)
	}
}

func TestSkillsBenchAllDryRunNamesWhatItCannotFind(t *testing.T) {
	tests := []struct {
		name, extra string
		want        []string
	}{
		{"nothing configured", "", []string{"list task set skillsbench-all", "empty until tasks are here"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTaskEnv(t, tt.extra)
			r := runCLI(t, nil, "run", "--task-set", "skillsbench-all", "--offline", "--dry-run", "--config-dir", env.configDir)
			if r.code != ExitUsage {
				t.Fatalf("exit %d, want %d: %s", r.code, ExitUsage, r.errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.errOut, w) {
					t.Errorf("stderr %q lacks %q", r.errOut, w)
				}
			}
		})
	}
	// With an empty cache and remote_fetch = false the plan still says
	// what a run would need fetched, and how, instead of failing.
	t.Run("a remote archive not downloaded, remote_fetch off, plans what it would fetch", func(t *testing.T) {
		sum := strings.Repeat("a", 64)
		env := newTaskEnv(t, "archive_url = \"https://example.invalid/t.zip\"\narchive_sha256 = \""+sum+"\"\nremote_fetch = false\n")
		r := runCLI(t, nil, "run", "--task-set", "skillsbench-all", "--offline", "--dry-run", "--config-dir", env.configDir)
		if r.code != ExitOK {
			t.Fatalf("exit %d, want a plan\n%s%s", r.code, r.out, r.errOut)
		}
		for _, want := range []string{"https://example.invalid/t.zip", sum, "not downloaded yet", "remote_fetch = false", "remote_fetch = true"} {
			if !strings.Contains(r.out, want) {
				t.Errorf("plan lacks %q:\n%s", want, r.out)
			}
		}
		if _, err := os.Stat(env.cacheDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the dry run wrote into the task cache (%v)", err)
		}
	})
	t.Run("remote archive with remote_fetch notes what the plan leaves out", func(t *testing.T) {
		env := newTaskEnv(t, "archive_url = \"https://example.invalid/t.zip\"\narchive_sha256 = \""+strings.Repeat("a", 64)+"\"\nremote_fetch = true\n")
		writeTask(t, env.tasksDir, "mine", taskFiles("local"))
		r := runCLI(t, nil, "run", "--task-set", "skillsbench-all", "--offline", "--dry-run", "--config-dir", env.configDir)
		if r.code != ExitOK || !strings.Contains(r.out, "not downloaded yet") || !strings.Contains(r.out, "mine") {
			t.Errorf("exit %d\n%s%s", r.code, r.out, r.errOut)
		}
	})
}

// TestSkillsBenchAllRunsTheArchive runs the set for real: each task is
// fetched from the local archive when the run needs it and scored. It needs
// the Docker engine and the base image (dockerForTest).
func TestSkillsBenchAllRunsTheArchive(t *testing.T) {
	dockerForTest(t)
	env := archiveEnv(t, "alpha", "beta")
	out := t.TempDir()
	r := runCLI(t, engineFactory(), "run", "--task-set", "skillsbench-all", "--agent", "oracle", "--offline", "--iterations", "1",
		"--condition", "static_mediator", "--skill-updates", "none", "--config-dir", env.configDir, "--out", out)
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
	runs, _ := filepath.Glob(filepath.Join(out, "*-static_mediator-*"))
	if len(runs) != 1 {
		t.Fatalf("run directories under %s: %v", out, runs)
	}
	rows, err := rundir.ReadMetrics(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	scored := map[string]bool{}
	for _, row := range rows {
		if row.Status == "scored" && row.Reward != nil && *row.Reward == 1 {
			scored[row.TaskID] = true
		}
	}
	if len(rows) != 2 || !scored["alpha"] || !scored["beta"] {
		t.Errorf("metric rows %+v, want alpha and beta scored 1", rows)
	}
	for _, id := range []string{"alpha", "beta"} {
		if _, err := os.Stat(filepath.Join(env.cacheDir, "tasks", id, "task.toml")); err != nil {
			t.Errorf("%s was not fetched into the cache: %v", id, err)
		}
	}
}

// TestLabSeesSkillsCopiedUnderApp runs the lab agent (offline) on a task
// whose Dockerfile copies its skills only to /app/skills, a folder no lab
// looks in by default: the agent's setup must list them. It needs the
// Docker engine and the base image (dockerForTest).
func TestLabSeesSkillsCopiedUnderApp(t *testing.T) {
	dockerForTest(t)
	env := newTaskEnv(t, "")
	files := taskFiles("skills")
	files["environment/Dockerfile"] = "FROM harness-base:bookworm\nWORKDIR /app\nCOPY skills /app/skills\n"
	files["environment/skills/plotting/SKILL.md"] = "---\nname: plotting\ndescription: Draws plots from CSV files.\n---\nUse it.\n"
	writeTask(t, env.tasksDir, "app-skills", files)
	out := t.TempDir()
	r := runCLI(t, engineFactory(), "run", "--tasks", "app-skills", "--agent", "lab", "--offline", "--iterations", "1",
		"--condition", "static_mediator", "--skill-updates", "none", "--config-dir", env.configDir, "--out", out)
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
	var transcripts []string
	err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "transcript.jsonl" {
			transcripts = append(transcripts, p)
		}
		return err
	})
	if err != nil || len(transcripts) == 0 {
		t.Fatalf("no transcript under %s (%v)", out, err)
	}
	found := false
	for _, p := range transcripts {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			var rec struct {
				Event string `json:"event"`
				Setup *struct {
					Skills []struct{ Name, Path string } `json:"skills"`
				} `json:"setup"`
			}
			if json.Unmarshal([]byte(line), &rec) != nil || rec.Event != "setup" || rec.Setup == nil {
				continue
			}
			for _, s := range rec.Setup.Skills {
				if s.Name == "plotting" && s.Path == "/app/skills/plotting/SKILL.md" {
					found = true
				}
			}
		}
	}
	if !found {
		t.Errorf("no setup event in %v lists the plotting skill at /app/skills", transcripts)
	}
}
