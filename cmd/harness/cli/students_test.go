package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// Two students on two model names, run against the fake endpoint with no
// engine: both models are asked, every (student, task) pair occurs equally
// often under rotate, and each metric row names its student and model.
func TestStudentsOnTwoModelsReachTheEndpoint(t *testing.T) {
	t.Setenv("HARNESS_LEAK_TEST_KEY", leakKey)
	srv := labServer(t)
	tasks, err := filepath.Abs(filepath.Join("testdata", "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[executor_runtime]\ntask_cache_dir = %q\ntask_dirs = [%q]\n", t.TempDir(), tasks)
	for _, key := range append(conditions.RoleNames(conditions.ModelRoles()), "cheap") {
		fmt.Fprintf(&b, "[models.%s]\nbase_url = %q\napi_key_env = \"HARNESS_LEAK_TEST_KEY\"\nmodel = \"test/%s\"\nmax_retries = 0\ncontext_tokens = 65536\n",
			key, srv.URL(), key)
	}
	b.WriteString("[labs.default]\nassignment = \"rotate\"\n[labs.default.students.strong]\n[labs.default.students.weak]\nmodel = \"cheap\"\n")
	cfgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "default.toml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	backend := &scoringBackend{rewards: map[string]float64{"leak-marker": 1}}
	f := testFactory()
	f.Sandbox = func(context.Context, config.ExecutorRuntime) (SandboxBackend, error) { return backend, nil }
	f.Providers = newProvider
	out := t.TempDir()
	r := runCLI(t, f, "run", "--tasks", "leak-marker", "--iterations", "4", "--condition", "no_feedback", "--skill-updates", "none",
		"--config-dir", cfgDir, "--out", out)
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
	agentModels := map[string]int{}
	for _, q := range srv.Requests() {
		if len(q.Chat.Tools) > 0 {
			agentModels[q.Chat.Model]++
		}
	}
	if agentModels["test/executor"] == 0 || agentModels["test/cheap"] == 0 {
		t.Errorf("agent requests by model %v: want both students' models asked", agentModels)
	}
	runs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(runs) != 1 {
		t.Fatalf("want one run directory under %s, got %v", out, runs)
	}
	rows, err := rundir.ReadMetrics(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"strong": "test/executor", "weak": "test/cheap"}
	pairs := map[string]int{}
	for _, row := range rows {
		pairs[row.Student+"/"+row.TaskID]++
		if row.StudentModel == nil || *row.StudentModel != want[row.Student] {
			t.Errorf("row %s: student %q, student_model %v; want one of %v", row.TrialID, row.Student, row.StudentModel, want)
		}
	}
	if len(rows) != 4 || pairs["strong/leak-marker"] != 2 || pairs["weak/leak-marker"] != 2 {
		t.Errorf("%d rows, (student, task) pairs %v; want each student twice", len(rows), pairs)
	}
}
