package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// Two students on two model names, run against the fake endpoint with no
// engine: both models are asked, every (student, task) pair occurs equally
// often under rotate, and each metric row names its student and model.
func TestStudentsOnTwoModelsReachTheEndpoint(t *testing.T) {
	srv, cfgDir, f := studentsSetup(t, "[labs.default]\nassignment = \"rotate\"\n[labs.default.students.strong]\n[labs.default.students.weak]\nmodel = \"cheap\"\n")
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

	// The run's students compare as rows of their own.
	cmp := runCLI(t, nil, "inspect", runs[0], "--compare", "--by", "student", "--json")
	if cmp.code != ExitOK {
		t.Fatalf("inspect --compare --by student: exit %d\n%s%s", cmp.code, cmp.out, cmp.errOut)
	}
	var got struct {
		Rows []struct {
			Row string `json:"row"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(cmp.out), &got); err != nil {
		t.Fatalf("inspect JSON: %v\n%s", err, cmp.out)
	}
	var names []string
	for _, r := range got.Rows {
		names = append(names, r.Row)
	}
	slices.Sort(names)
	if len(names) != 2 || !strings.HasSuffix(names[0], "/strong") || !strings.HasSuffix(names[1], "/weak") {
		t.Errorf("compared rows %v, want the run's row once per student", names)
	}
	if bad := runCLI(t, nil, "inspect", runs[0], "--compare", "--by", "model"); bad.code != ExitUsage {
		t.Errorf("--by model: exit %d, want a usage error", bad.code)
	}
}

// studentsSetup starts the fake endpoint and writes a configuration whose
// every role, and a model named cheap, it answers, with the given labs; the
// factory runs trials in memory.
func studentsSetup(t *testing.T, labs string) (*llmtest.Server, string, *Factory) {
	t.Helper()
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
	b.WriteString(labs)
	cfgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "default.toml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	backend := &scoringBackend{rewards: map[string]float64{"leak-marker": 1}}
	f := testFactory()
	f.Sandbox = func(context.Context, config.ExecutorRuntime) (SandboxBackend, error) { return backend, nil }
	f.Providers = providers.New
	return srv, cfgDir, f
}

// A row whose lab's one student uses another model runs beside the default
// row, on the same tasks and seeds: the matrix varies the Executor's model.
func TestMatrixRowVariesTheExecutorModel(t *testing.T) {
	srv, cfgDir, f := studentsSetup(t, "[labs.cheap.students.solo]\nmodel = \"cheap\"\n")
	matrixFile := filepath.Join(t.TempDir(), "matrix.toml")
	rows := "name = \"models\"\n[[rows]]\nname = \"strong\"\ncondition = \"no_feedback\"\nskill_updates = \"none\"\nseeds = [1, 2]\n" +
		"[[rows]]\nname = \"cheap\"\ncondition = \"no_feedback\"\nskill_updates = \"none\"\nlab = \"cheap\"\nseeds = [1, 2]\n"
	if err := os.WriteFile(matrixFile, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := runCLI(t, f, "matrix", "--matrix", matrixFile, "--tasks", "leak-marker", "--iterations", "2",
		"--config-dir", cfgDir, "--out", out)
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
	matrices, _ := filepath.Glob(filepath.Join(out, "*-matrix"))
	if len(matrices) != 1 {
		t.Fatalf("want one matrix directory under %s, got %v", out, matrices)
	}
	rowsRead, err := rundir.ReadMetrics(matrices[0])
	if err != nil {
		t.Fatal(err)
	}
	// Per row: the (seed, task, iteration) cells it ran and the model.
	cells := map[string]map[string]bool{}
	models := map[string]map[string]bool{}
	for _, row := range rowsRead {
		// Rows with several seeds run as <name>-seed<N>.
		name, _, _ := strings.Cut(row.Row, "-seed")
		if cells[name] == nil {
			cells[name], models[name] = map[string]bool{}, map[string]bool{}
		}
		cells[name][fmt.Sprintf("%d/%s/%d", row.Seed, row.TaskID, row.Iteration)] = true
		if row.StudentModel != nil {
			models[name][*row.StudentModel] = true
		}
	}
	if len(cells["strong"]) != 4 || !maps.Equal(cells["strong"], cells["cheap"]) {
		t.Errorf("cells by row %v: want both rows on the same 2 seeds x 1 task x 2 iterations", cells)
	}
	if !models["strong"]["test/executor"] || len(models["strong"]) != 1 || !models["cheap"]["test/cheap"] || len(models["cheap"]) != 1 {
		t.Errorf("student models by row %v: want test/executor beside test/cheap", models)
	}
	cheap := 0
	for _, q := range srv.Requests() {
		if q.Chat.Model == "test/cheap" {
			cheap++
		}
	}
	if cheap == 0 {
		t.Error("the endpoint was never asked for test/cheap")
	}
}

// A row that overrides [models.executor] in the matrix file runs beside
// the default row on the same tasks and seeds: the endpoint is asked for
// both Executor models, and each row's metric rows and call log name its
// own.
func TestMatrixRowOverridesTheExecutorModel(t *testing.T) {
	srv, cfgDir, f := studentsSetup(t, "[labs.spare.students.solo]\nmodel = \"cheap\"\n")
	matrixFile := filepath.Join(t.TempDir(), "matrix.toml")
	rows := "name = \"models\"\n[[rows]]\nname = \"strong\"\ncondition = \"no_feedback\"\nskill_updates = \"none\"\nseeds = [1, 2]\n" +
		"[[rows]]\nname = \"cheap\"\ncondition = \"no_feedback\"\nskill_updates = \"none\"\nseeds = [1, 2]\n" +
		"[rows.models.executor]\nmodel = \"test/other\"\ncontext_tokens = 65536\n"
	if err := os.WriteFile(matrixFile, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	dry := runCLI(t, f, "matrix", "--matrix", matrixFile, "--tasks", "leak-marker", "--iterations", "2",
		"--config-dir", cfgDir, "--dry-run")
	if dry.code != ExitOK || !strings.Contains(dry.out, "row cheap-seed1 runs its own models: executor openai/test/other") {
		t.Fatalf("dry run: exit %d, want row cheap's own executor model named\n%s%s", dry.code, dry.out, dry.errOut)
	}
	out := t.TempDir()
	r := runCLI(t, f, "matrix", "--matrix", matrixFile, "--tasks", "leak-marker", "--iterations", "2",
		"--config-dir", cfgDir, "--out", out)
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
	matrices, _ := filepath.Glob(filepath.Join(out, "*-matrix"))
	if len(matrices) != 1 {
		t.Fatalf("want one matrix directory under %s, got %v", out, matrices)
	}
	metrics, err := rundir.ReadMetrics(matrices[0])
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]map[string]bool{}
	models := map[string]map[string]bool{}
	for _, row := range metrics {
		name, _, _ := strings.Cut(row.Row, "-seed")
		if cells[name] == nil {
			cells[name], models[name] = map[string]bool{}, map[string]bool{}
		}
		cells[name][fmt.Sprintf("%d/%s/%d", row.Seed, row.TaskID, row.Iteration)] = true
		if row.StudentModel != nil {
			models[name][*row.StudentModel] = true
		}
	}
	if len(cells["strong"]) != 4 || !maps.Equal(cells["strong"], cells["cheap"]) {
		t.Errorf("cells by row %v: want both rows on the same 2 seeds x 1 task x 2 iterations", cells)
	}
	if !models["strong"]["test/executor"] || len(models["strong"]) != 1 || !models["cheap"]["test/other"] || len(models["cheap"]) != 1 {
		t.Errorf("student models by row %v: want test/executor beside test/other", models)
	}
	// Each row's call log names the Executor model it called.
	for row, want := range map[string]string{"strong-seed1": "test/executor", "cheap-seed2": "test/other"} {
		data, err := os.ReadFile(filepath.Join(matrices[0], row, rundir.CallsFile))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"model":"`+want+`"`) {
			t.Errorf("row %s's call log does not name %s", row, want)
		}
	}
	other := 0
	for _, q := range srv.Requests() {
		if q.Chat.Model == "test/other" {
			other++
		}
	}
	if other == 0 {
		t.Error("the endpoint was never asked for test/other")
	}
}
