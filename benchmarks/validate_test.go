package benchmarks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidatePaths(t *testing.T) {
	root := t.TempDir()
	good := filepath.Join(root, "set", "good")
	writeFiles(t, good, taskFiles("version = \"1.0\"\n[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\n"))
	broken := taskFiles("[agent]\ntimeout_sec = \"soon\"\n")
	delete(broken, "instruction.md")
	writeFiles(t, filepath.Join(root, "set", "broken"), broken)
	writeFiles(t, filepath.Join(root, "set", "not-a-task"), map[string]string{"README.md": "x"})
	writeFiles(t, filepath.Join(root, "empty", "sub"), map[string]string{"notes.txt": "x"})
	file := filepath.Join(root, "file.txt")
	writeFiles(t, root, map[string]string{"file.txt": "x"})

	tests := []struct {
		name      string
		path      string
		wantIDs   []string
		wantOK    []bool
		errSubstr string // for a path that is not a task at all
	}{
		{"a task directory", good, []string{"good"}, []bool{true}, ""},
		{"a task.toml file", filepath.Join(good, "task.toml"), []string{"good"}, []bool{true}, ""},
		{"a directory of tasks", filepath.Join(root, "set"), []string{"broken", "good"}, []bool{false, true}, ""},
		{"a directory without tasks", filepath.Join(root, "empty"), []string{""}, []bool{false}, "no task.toml"},
		{"a missing path", filepath.Join(root, "nope"), []string{""}, []bool{false}, "does not exist"},
		{"a plain file", file, []string{""}, []bool{false}, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := ValidatePaths([]string{tt.path})
			if len(res) != len(tt.wantIDs) {
				t.Fatalf("got %d results, want %d: %+v", len(res), len(tt.wantIDs), res)
			}
			for i, r := range res {
				if r.ID != tt.wantIDs[i] || r.OK() != tt.wantOK[i] {
					t.Errorf("result %d: id %q ok %v, want %q %v (errors %q)", i, r.ID, r.OK(), tt.wantIDs[i], tt.wantOK[i], r.Errors)
				}
				if r.OK() && r.Task == nil {
					t.Errorf("result %d: OK but no task", i)
				}
			}
			if tt.errSubstr != "" && !strings.Contains(strings.Join(res[0].Errors, "\n"), tt.errSubstr) {
				t.Errorf("errors %q lack %q", res[0].Errors, tt.errSubstr)
			}
		})
	}
}

func TestValidateListsEveryError(t *testing.T) {
	files := taskFiles("[agent]\ntimeout_sec = \"soon\"\n")
	delete(files, "instruction.md")
	res := Validate(newTask(t, "broken", files))
	if len(res.Errors) != 2 {
		t.Fatalf("errors = %q, want the bad timeout and the missing instruction", res.Errors)
	}
	if !strings.Contains(res.Errors[0], "task.toml:2: agent.timeout_sec") || !strings.Contains(res.Errors[1], "instruction.md: missing") {
		t.Errorf("errors = %q", res.Errors)
	}
}

func TestValidateExtraWarnings(t *testing.T) {
	tests := []struct {
		name    string
		testSh  string
		toml    string
		warning string
	}{
		{"verifier never writes a reward", "#!/bin/bash\npytest /tests\n", "version = \"1.0\"", "never mentions a reward file"},
		{"empty verifier", "\n", "version = \"1.0\"", "empty"},
		{"no agent timeout", "echo 1 > /logs/verifier/reward.txt", "version = \"1.0\"", "[agent] timeout_sec not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := taskFiles(tt.toml)
			files["tests/test.sh"] = tt.testSh
			res := Validate(newTask(t, "w", files))
			if !res.OK() {
				t.Fatalf("errors: %q", res.Errors)
			}
			if !hasWarning(res.Warnings, tt.warning) {
				t.Errorf("warnings %q lack %q", res.Warnings, tt.warning)
			}
		})
	}
}

func TestValidateSkillsBenchShapedTask(t *testing.T) {
	res := ValidatePaths([]string{filepath.Join("testdata", "tasks")})
	if len(res) != 1 || !res[0].OK() {
		t.Fatalf("results %+v", res)
	}
	if !hasWarning(res[0].Warnings, "environment.image") {
		t.Errorf("warnings %q lack the non-standard key", res[0].Warnings)
	}
	if _, err := os.Stat(filepath.Join(res[0].Task.Dir, "instruction.md")); err != nil {
		t.Error(err)
	}
}

// tasks validate names each compose feature the harness does not honour,
// and refuses a compose file it cannot run.
func TestValidateComposeFile(t *testing.T) {
	tests := []struct {
		name, compose string
		warning, err  string
	}{
		{"unsupported feature", "services:\n  main:\n    build: .\n    privileged: true\n", "services.main.privileged is not supported", ""},
		{"unusable", "services:\n  main:\n    build: ../..\n", "", "outside the task's environment folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := taskFiles("version = \"1.0\"\n")
			files["environment/docker-compose.yaml"] = tt.compose
			res := Validate(newTask(t, "compose", files))
			if tt.warning != "" && (!res.OK() || !hasWarning(res.Warnings, tt.warning)) {
				t.Errorf("errors %q warnings %q, want a warning with %q", res.Errors, res.Warnings, tt.warning)
			}
			if tt.err != "" && (res.OK() || !strings.Contains(strings.Join(res.Errors, "\n"), tt.err)) {
				t.Errorf("errors %q, want one with %q", res.Errors, tt.err)
			}
		})
	}
}

func TestValidateConcludesNothingFromABrokenTaskTOML(t *testing.T) {
	tests := []struct {
		name, toml string
	}{
		{"syntax error", "version = \"1.0\"\n[agent\ntimeout_sec = 600\n[verifier]\ntimeout_sec = 600\n"},
		{"timeouts of the wrong type", "version = \"1.0\"\n[agent]\ntimeout_sec = \"600\"\n[verifier]\ntimeout_sec = \"600\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Validate(newTask(t, "bad", taskFiles(tt.toml)))
			if res.OK() {
				t.Fatal("a broken task.toml validated")
			}
			for _, w := range res.Warnings {
				if strings.Contains(w, "timeout_sec not set") {
					t.Errorf("warning from values that were never read: %q", w)
				}
			}
		})
	}
	// The same check still speaks when the file decodes and lacks them.
	res := Validate(newTask(t, "plain", taskFiles("version = \"1.0\"\n")))
	if !hasWarning(res.Warnings, "[agent] timeout_sec not set") {
		t.Errorf("warnings %q lack the unset timeout", res.Warnings)
	}
}

// Every command loads tasks with the one loader `tasks validate` uses: a
// task validate rejects is rejected by Load, and so by run, try, sync and
// list, with the same reason.
func TestLoadRejectsWhatValidateRejects(t *testing.T) {
	files := taskFiles("version = \"1.0\"\n")
	files["environment/docker-compose.yaml"] = "services:\n  main:\n    build: ../..\n"
	dir := newTask(t, "outside", files)
	res := Validate(dir)
	if res.OK() {
		t.Fatalf("validate accepted the task: %+v", res)
	}
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "outside the task's environment folder") {
		t.Fatalf("Load = %v, want the error validate reports (%q)", err, res.Errors)
	}
	r := &Resolver{CacheDir: t.TempDir(), TaskDirs: []string{filepath.Dir(dir)}}
	tasks, err := r.List(t.Context())
	for _, tk := range tasks {
		if tk.ID == "outside" {
			t.Errorf("tasks list lists a task validate rejects")
		}
	}
	if err == nil || !strings.Contains(err.Error(), "outside the task's environment folder") {
		t.Errorf("List error %v, want the task's problem", err)
	}
	if _, err := r.Resolve(t.Context(), []string{"outside"}); err == nil {
		t.Error("Resolve accepted a task validate rejects")
	}
}

// Load's task carries every warning validate reports, the compose file's
// included.
func TestLoadKeepsValidateWarnings(t *testing.T) {
	files := taskFiles("version = \"1.0\"\n")
	files["environment/docker-compose.yaml"] = "services:\n  main:\n    build: .\n    privileged: true\n"
	tk, err := Load(newTask(t, "warned", files))
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(tk.Warnings, "services.main.privileged is not supported") {
		t.Errorf("warnings %q lack the compose file's", tk.Warnings)
	}
}
