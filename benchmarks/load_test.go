package benchmarks

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeFiles creates files (relative path -> content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// taskFiles is a complete, valid task with the given task.toml.
func taskFiles(toml string) map[string]string {
	return map[string]string{
		"task.toml":              toml,
		"instruction.md":         "Write hello to /app/out.txt.\n",
		"environment/Dockerfile": "FROM harness-base:bookworm\nWORKDIR /app\n",
		"tests/test.sh":          "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
		"solution/solve.sh":      "#!/bin/bash\necho hello > /app/out.txt\n",
	}
}

// newTask writes a task named id under a fresh temp dir and returns its dir.
func newTask(t *testing.T, id string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	writeFiles(t, dir, files)
	return dir
}

func hasWarning(ws []string, sub string) bool {
	for _, w := range ws {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func TestLoadSkillsBenchShapedTask(t *testing.T) {
	task, err := Load(filepath.Join("testdata", "tasks", "sensor-drift-report"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	c := task.Config
	checks := []struct {
		name string
		ok   bool
	}{
		{"id is the directory name", task.ID == "sensor-drift-report"},
		{"dir is absolute", filepath.IsAbs(task.Dir)},
		{"legacy version becomes schema_version", c.SchemaVersion == "1.0"},
		{"metadata difficulty", task.Difficulty() == "medium"},
		{"metadata category", task.Category() == "data-analysis"},
		{"metadata tags", strings.Join(task.Tags(), ",") == "time-series,sensors,pandas"},
		{"free-form metadata kept", c.Metadata["author_email"] == "jo@example.org"},
		{"agent timeout", c.Agent.TimeoutSec == 900},
		{"verifier timeout", c.Verifier.TimeoutSec == 900},
		{"build timeout", c.Environment.BuildTimeoutSec == 600},
		{"cpus", c.Environment.CPUs == 1},
		{"memory_mb", c.Environment.MemoryMB == 4096},
		{"storage_mb", c.Environment.StorageMB == 10240},
		{"allow_internet", c.Environment.AllowInternet},
		{"instruction read", strings.Contains(task.Instruction, "drift")},
		{"has a solution", task.HasSolution()},
		{"has a Dockerfile", task.HasDockerfile()},
		{"non-standard image key is a warning with a hint", hasWarning(task.Warnings, "unknown key environment.image (ignored; Harbor's key for a prebuilt image is docker_image)")},
		{"unknown table is one warning", hasWarning(task.Warnings, "unknown key reward ") && !hasWarning(task.Warnings, "reward.kind")},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: not as expected (config %+v, warnings %q)", ch.name, c, task.Warnings)
		}
	}
}

func TestLoadSchemaVersion(t *testing.T) {
	tests := []struct {
		name, toml, want, warning string
	}{
		{"schema_version", `schema_version = "1.1"`, "1.1", ""},
		{"legacy version", `version = "1.0"`, "1.0", ""},
		{"numeric version", `version = 1.0`, "1", ""},
		{"both equal", "schema_version = \"1.2\"\nversion = \"1.2\"", "1.2", ""},
		{"both differ: schema_version wins", "schema_version = \"1.2\"\nversion = \"1.0\"", "1.2", "using schema_version"},
		{"neither", `[agent]`, "", "no schema_version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task, err := Load(newTask(t, "v", taskFiles(tt.toml)))
			if err != nil {
				t.Fatal(err)
			}
			if task.Config.SchemaVersion != tt.want {
				t.Errorf("SchemaVersion = %q, want %q", task.Config.SchemaVersion, tt.want)
			}
			if tt.warning != "" && !hasWarning(task.Warnings, tt.warning) {
				t.Errorf("warnings %q lack %q", task.Warnings, tt.warning)
			}
			// Load reports what validate does, and these files set no
			// timeouts; nothing else may be warned about.
			others := slices.DeleteFunc(slices.Clone(task.Warnings), func(w string) bool { return strings.Contains(w, "timeout_sec not set") })
			if tt.warning == "" && len(others) != 0 {
				t.Errorf("unexpected warnings %q", others)
			}
		})
	}
}

func TestLoadDefaults(t *testing.T) {
	task, err := Load(newTask(t, "d", taskFiles(`version = "1.0"`)))
	if err != nil {
		t.Fatal(err)
	}
	e := task.Config.Environment
	if !e.AllowInternet {
		t.Error("allow_internet should default to true, as in Harbor")
	}
	if e.OS != "linux" {
		t.Errorf("os = %q, want linux", e.OS)
	}
	if task.Config.Agent.TimeoutSec != 0 || task.Config.Verifier.TimeoutSec != 0 || e.BuildTimeoutSec != 0 {
		t.Error("unset timeouts must stay 0 so the runtime defaults apply")
	}
	if e.CPUs != 0 || e.MemoryMB != 0 || e.StorageMB != 0 || e.GPUs != 0 {
		t.Error("unset resources must stay 0 so the runtime defaults apply")
	}
	if task.Config.Package != nil || task.Config.Environment.Healthcheck != nil {
		t.Error("absent optional tables must stay nil")
	}
}

func TestLoadAllowInternetFalse(t *testing.T) {
	task, err := Load(newTask(t, "n", taskFiles("[environment]\nallow_internet = false\n")))
	if err != nil {
		t.Fatal(err)
	}
	if task.Config.Environment.AllowInternet {
		t.Error("allow_internet = false was not honoured")
	}
}

func TestLoadEnvExpansion(t *testing.T) {
	t.Setenv("HARNESS_TEST_SET", "value")
	t.Setenv("HARNESS_TEST_EMPTY", "")
	os.Unsetenv("HARNESS_TEST_UNSET")
	toml := `version = "1.0"
[environment.env]
PLAIN = "literal $HARNESS_TEST_SET stays"
SET = "${HARNESS_TEST_SET}"
UNSET = "${HARNESS_TEST_UNSET}"
DEFAULT = "${HARNESS_TEST_UNSET:-fallback}"
EMPTY_DEFAULT = "${HARNESS_TEST_EMPTY:-fallback}"
SET_DEFAULT = "${HARNESS_TEST_SET:-fallback}"
MIXED = "a-${HARNESS_TEST_SET}-b-${HARNESS_TEST_UNSET:-c}"
[verifier.env]
V = "${HARNESS_TEST_SET}"
[solution.env]
S = "${HARNESS_TEST_UNSET:-}"
`
	task, err := Load(newTask(t, "env", taskFiles(toml)))
	if err != nil {
		t.Fatal(err)
	}
	env := task.Config.Environment.Env
	want := map[string]string{
		"PLAIN":         "literal $HARNESS_TEST_SET stays",
		"SET":           "value",
		"UNSET":         "",
		"DEFAULT":       "fallback",
		"EMPTY_DEFAULT": "fallback",
		"SET_DEFAULT":   "value",
		"MIXED":         "a-value-b-c",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("environment.env.%s = %q, want %q", k, env[k], v)
		}
	}
	if task.Config.Verifier.Env["V"] != "value" {
		t.Errorf("verifier.env.V = %q, want value", task.Config.Verifier.Env["V"])
	}
	if s, ok := task.Config.Solution.Env["S"]; !ok || s != "" {
		t.Errorf("solution.env.S = %q, %v; want empty and present", s, ok)
	}
	if !hasWarning(task.Warnings, "environment.env.UNSET: ${HARNESS_TEST_UNSET} is not set") {
		t.Errorf("no warning for the unset variable: %q", task.Warnings)
	}
	if hasWarning(task.Warnings, "DEFAULT") {
		t.Errorf("a variable with a default must not warn: %q", task.Warnings)
	}
	// The filled values come from the host and may be secrets: a Task
	// written as JSON must not carry them.
	js, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), `"value"`) || strings.Contains(string(js), "a-value-b-c") {
		t.Errorf("task JSON carries an expanded host value: %s", js)
	}
}

func TestLoadUnknownKeysAreWarnings(t *testing.T) {
	toml := `version = "1.0"
flavour = "spicy"

[agent]
timeout_sec = 10
reasoning_effort = "high"

[solution]
timeout_sec = 5

[reward]
kind = "fraction"
[reward.nested]
x = 1

[metadata]
anything = { goes = { here = 1 } }
`
	task, err := Load(newTask(t, "u", taskFiles(toml)))
	if err != nil {
		t.Fatalf("unknown keys must not be errors: %v", err)
	}
	wants := []string{
		"task.toml:2: unknown key flavour",
		"task.toml:6: unknown key agent.reasoning_effort",
		"task.toml:9: unknown key solution.timeout_sec (ignored; the oracle runs under [agent] timeout_sec)",
		"task.toml:11: unknown key reward (ignored)",
	}
	for _, w := range wants {
		if !hasWarning(task.Warnings, w) {
			t.Errorf("warnings %q lack %q", task.Warnings, w)
		}
	}
	for _, bad := range []string{"reward.kind", "reward.nested", "metadata"} {
		if hasWarning(task.Warnings, "unknown key "+bad) {
			t.Errorf("warned about %s: %q", bad, task.Warnings)
		}
	}
}

func TestLoadErrorsNameFileAndLine(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want []string // substrings of the error
	}{
		{"malformed TOML", "version = \"1.0\"\n[agent]\ntimeout_sec = = 1\n", []string{"task.toml:3:"}},
		{"duplicate key", "version = \"1.0\"\nversion = \"1.1\"\n", []string{"task.toml:2:"}},
		{"timeout is a string", "version = \"1.0\"\n\n[agent]\ntimeout_sec = \"abc\"\n", []string{"task.toml:4:", "agent.timeout_sec", "must be a number", `"abc"`}},
		{"negative timeout", "[verifier]\ntimeout_sec = -5\n", []string{"task.toml:2:", "verifier.timeout_sec", "must not be negative"}},
		{"negative build timeout", "[environment]\nbuild_timeout_sec = -1.5\n", []string{"task.toml:2:", "environment.build_timeout_sec"}},
		{"nan timeout", "[agent]\ntimeout_sec = nan\n", []string{"task.toml:2:", "finite"}},
		{"negative memory", "[environment]\nmemory_mb = -1\n", []string{"task.toml:2:", "environment.memory_mb", "negative"}},
		{"fractional memory", "[environment]\nmemory_mb = 1.5\n", []string{"task.toml:2:", "whole number"}},
		{"negative cpus", "[environment]\ncpus = -2\n", []string{"task.toml:2:", "environment.cpus"}},
		{"bad size string", "[environment]\nmemory = \"lots\"\n", []string{"task.toml:2:", "environment.memory", "cannot read size"}},
		{"allow_internet not a bool", "[environment]\n\nallow_internet = \"yes\"\n", []string{"task.toml:3:", "environment.allow_internet: must be true or false, not a string"}},
		{"docker_image not a string", "[environment]\ndocker_image = 3\n", []string{"task.toml:2:", "environment.docker_image", "must be a string"}},
		{"env value not a string", "[verifier.env]\nN = 1\n", []string{"task.toml:2:", "verifier.env.N: must be a string, not an integer"}},
		{"unknown os", "[environment]\nos = \"plan9\"\n", []string{"task.toml:2:", "environment.os"}},
		{"relative workdir", "[environment]\nworkdir = \"app\"\n", []string{"task.toml:2:", "absolute"}},
		{"memory and memory_mb disagree", "[environment]\nmemory_mb = 2048\nmemory = \"4G\"\n", []string{"task.toml:3:", "disagree"}},
		{"agent is not a table", "agent = 5\n", []string{"task.toml:1:", "agent: must be a table, not an integer"}},
		{"bad environment_mode", "[verifier]\nenvironment_mode = \"weird\"\n", []string{"task.toml:2:", "environment_mode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newTask(t, "bad", taskFiles(tt.toml))
			_, err := Load(dir)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			var te *TaskError
			if !errors.As(err, &te) {
				t.Errorf("error %T is not a *TaskError", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, filepath.Join(dir, "task.toml")) {
				t.Errorf("error %q does not name the file", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}

func TestLoadRequiredFiles(t *testing.T) {
	base := `version = "1.0"`
	tests := []struct {
		name    string
		edit    func(files map[string]string)
		wantErr string // "" means it loads
		warning string
	}{
		{"complete", func(map[string]string) {}, "", ""},
		{"no task.toml", func(f map[string]string) { delete(f, "task.toml") }, "task.toml: missing", ""},
		{"no instruction", func(f map[string]string) { delete(f, "instruction.md") }, "instruction.md: missing", ""},
		{"blank instruction", func(f map[string]string) { f["instruction.md"] = " \n\t\n" }, "instruction.md: empty", ""},
		{"no test.sh", func(f map[string]string) { delete(f, "tests/test.sh") }, filepath.Join("tests", "test.sh") + ": missing", ""},
		{"no Dockerfile", func(f map[string]string) { delete(f, "environment/Dockerfile") }, "environment/Dockerfile: missing", ""},
		{"prebuilt image instead of Dockerfile", func(f map[string]string) {
			delete(f, "environment/Dockerfile")
			f["task.toml"] = base + "\n[environment]\ndocker_image = \"example/img:1\"\n"
		}, "", ""},
		{"prebuilt image beside a Dockerfile is a warning", func(f map[string]string) {
			f["task.toml"] = base + "\n[environment]\ndocker_image = \"example/img:1\"\n"
		}, "", "edits to the Dockerfile then have no effect"},
		{"compose only", func(f map[string]string) {
			delete(f, "environment/Dockerfile")
			f["environment/docker-compose.yaml"] = "services:\n  main:\n    image: harness-base:bookworm\n"
		}, "", ""},
		{"compose building from a Dockerfile that is not there", func(f map[string]string) {
			delete(f, "environment/Dockerfile")
			f["environment/docker-compose.yaml"] = "services:\n  main:\n    build: .\n"
		}, "has no Dockerfile", ""},
		{"no solution is a warning", func(f map[string]string) { delete(f, "solution/solve.sh") }, "", "oracle agent cannot run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := taskFiles(base)
			tt.edit(files)
			task, err := Load(newTask(t, "req", files))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if tt.warning != "" && !hasWarning(task.Warnings, tt.warning) {
					t.Errorf("warnings %q lack %q", task.Warnings, tt.warning)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	files := taskFiles("[agent]\ntimeout_sec = 1\n")
	delete(files, "instruction.md")
	delete(files, "tests/test.sh")
	_, err := Load(newTask(t, "many", files))
	var inv *InvalidTaskError
	if !errors.As(err, &inv) || len(inv.Problems) != 2 {
		t.Fatalf("error = %v, want an InvalidTaskError with 2 problems", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "2 problems:") || !strings.Contains(msg, "instruction.md: missing") || !strings.Contains(msg, filepath.Join("tests", "test.sh")+": missing") {
		t.Errorf("error %q does not list both problems", msg)
	}
}

func TestLoadReportsEveryValueErrorAtItsLine(t *testing.T) {
	doc := `version = "1.0"
[agent]
timeout_sec = "abc"
user = 5.5
[verifier]
timeout_sec = -1
[environment]
docker_image = 3
memory_mb = -2
allow_internet = "yes"
workdir = "rel"
[verifier.env]
N = 1
`
	dir := newTask(t, "many", taskFiles(doc))
	_, err := Load(dir)
	var inv *InvalidTaskError
	if !errors.As(err, &inv) {
		t.Fatalf("error = %v, want an InvalidTaskError", err)
	}
	toml := filepath.Join(dir, "task.toml")
	want := []string{
		toml + ":3: agent.timeout_sec: must be a number",
		toml + ":4: agent.user: must be a user name or a uid",
		toml + ":6: verifier.timeout_sec: must not be negative",
		toml + ":8: environment.docker_image: must be a string",
		toml + ":9: environment.memory_mb: must not be negative",
		toml + ":10: environment.allow_internet: must be true or false",
		toml + ":11: environment.workdir: must be an absolute path",
		toml + ":13: verifier.env.N: must be a string",
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
	if len(inv.Problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(inv.Problems), len(want), msg)
	}
}

func TestLoadBrokenTableHeaderLine(t *testing.T) {
	tests := []struct {
		name, toml string
		line       string
	}{
		{"unclosed header on line 2", "version = \"1.0\"\n[agent\ntimeout_sec = 1\n", ":2:"},
		{"unclosed header on the last line", "version = \"1.0\"\n[agent]\ntimeout_sec = 1\n[verifier\n", ":4:"},
		{"extra bracket on line 2", "version = \"1.0\"\n[agent]]\n", ":2:"},
		{"unterminated string on line 1", "version = \"1.0\n[agent]\n", ":1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newTask(t, "bad", taskFiles(tt.toml))
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "task.toml")+tt.line) {
				t.Errorf("error = %v, want it at task.toml%s", err, tt.line)
			}
		})
	}
}

func TestLoadDeprecatedSizes(t *testing.T) {
	tests := []struct {
		toml                string
		memoryMB, storageMB int64
	}{
		{"[environment]\nmemory = \"4G\"\nstorage = \"8G\"\n", 4096, 8192},
		{"[environment]\nmemory = \"512M\"\nstorage = \"1024K\"\n", 512, 1},
		{"[environment]\nmemory = \"2Gi\"\nstorage = \"1T\"\n", 2048, 1 << 20},
		{"[environment]\nmemory = \"2G\"\nmemory_mb = 2048\n", 2048, 0},
	}
	for _, tt := range tests {
		t.Run(tt.toml, func(t *testing.T) {
			task, err := Load(newTask(t, "size", taskFiles(tt.toml)))
			if err != nil {
				t.Fatal(err)
			}
			e := task.Config.Environment
			if e.MemoryMB != tt.memoryMB || e.StorageMB != tt.storageMB {
				t.Errorf("memory_mb, storage_mb = %d, %d; want %d, %d", e.MemoryMB, e.StorageMB, tt.memoryMB, tt.storageMB)
			}
			if !hasWarning(task.Warnings, "deprecated") {
				t.Errorf("no deprecation warning: %q", task.Warnings)
			}
		})
	}
}

func TestLoadFullSchema(t *testing.T) {
	toml := `schema_version = "1.2"
source = "example-dataset"
multi_step_reward_strategy = "final"
artifacts = ["/app/out", { source = "/app/logs", exclude = ["*.tmp"] }]

[task]
name = "example-org/full-task"
description = "every table Harbor knows"
authors = [{ name = "A. Person", email = "a@example.org" }]
keywords = ["full", "schema"]

[metadata]
difficulty = "hard"

[verifier]
timeout_sec = 120.0
user = 1000
env = { MODE = "strict" }

[agent]
timeout_sec = 90
user = "agent"

[solution]
env = { HINT = "none" }

[environment]
build_timeout_sec = 300
docker_image = "example/prebuilt:1"
os = "linux"
cpus = 2.5
memory_mb = 2048
storage_mb = 4096
gpus = 1
gpu_types = ["a100"]
allow_internet = false
workdir = "/work"
skills_dir = "/skills"
env = { A = "b" }

[[environment.mcp_servers]]
name = "docs"
transport = "http"
url = "http://localhost:9000/mcp"

[environment.healthcheck]
command = "test -f /ready"
interval_sec = 2
retries = 5

[[steps]]
name = "first"
[steps.agent]
timeout_sec = 30
`
	task, err := Load(newTask(t, "full", taskFiles(toml)))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	c := task.Config
	e := c.Environment
	checks := []struct {
		name string
		ok   bool
	}{
		{"schema_version", c.SchemaVersion == "1.2"},
		{"source", c.Origin == "example-dataset"},
		{"package name", c.Package != nil && c.Package.Name == "example-org/full-task"},
		{"package authors", c.Package != nil && len(c.Package.Authors) == 1 && c.Package.Authors[0].Email == "a@example.org"},
		{"verifier user from uid", c.Verifier.User == "1000"},
		{"verifier env", c.Verifier.Env["MODE"] == "strict"},
		{"agent user", c.Agent.User == "agent"},
		{"agent timeout", c.Agent.TimeoutSec == 90},
		{"solution env", c.Solution.Env["HINT"] == "none"},
		{"docker_image", e.DockerImage == "example/prebuilt:1"},
		{"fractional cpus", e.CPUs == 2.5},
		{"gpus", e.GPUs == 1 && len(e.GPUTypes) == 1},
		{"allow_internet", !e.AllowInternet},
		{"workdir", e.Workdir == "/work"},
		{"skills_dir", e.SkillsDir == "/skills"},
		{"mcp transport http normalised", len(e.MCPServers) == 1 && e.MCPServers[0].Transport == "streamable-http"},
		{"healthcheck", e.Healthcheck != nil && e.Healthcheck.Command == "test -f /ready" && e.Healthcheck.Retries == 5 && e.Healthcheck.IntervalSec == 2},
		{"steps kept", len(c.Steps) == 1 && c.Steps[0]["name"] == "first"},
		{"artifacts kept", len(c.Artifacts) == 2},
		{"multi-step strategy", c.MultiStepRewardStrategy == "final"},
		{"gpu warning", hasWarning(task.Warnings, "no GPUs")},
		{"steps warning", hasWarning(task.Warnings, "multi-step")},
		{"no unknown-key warnings", !hasWarning(task.Warnings, "unknown key")},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: not as expected (config %+v; warnings %q)", ch.name, c, task.Warnings)
		}
	}
}

func TestKeyLines(t *testing.T) {
	doc := "a = 1 # x = 2\n[t]\n\"quoted.key\" = 2\nb.c = 'd#e'\n[[arr]]\nname = \"n\"\n"
	got := keyLines(doc)
	want := map[string]int{"a": 1, "t": 2, "t.quoted.key": 3, "t.b.c": 4, "arr": 5, "arr.name": 6}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("line of %s = %d, want %d", k, got[k], v)
		}
	}
	if _, ok := got["x"]; ok {
		t.Error("a key inside a comment was counted")
	}
}

func TestLoadSyntaxErrorStillChecksFiles(t *testing.T) {
	files := taskFiles("[agent\n")
	delete(files, "instruction.md")
	delete(files, "environment/Dockerfile")
	res := Validate(newTask(t, "syntax", files))
	joined := strings.Join(res.Errors, "\n")
	if len(res.Errors) != 2 || !strings.Contains(joined, "instruction.md: missing") {
		t.Errorf("errors = %q, want the TOML error and the missing instruction", res.Errors)
	}
	if strings.Contains(joined, "Dockerfile") {
		t.Errorf("a Dockerfile was demanded although docker_image is unknown: %q", res.Errors)
	}
}
