package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/executor/installed"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/dockertest"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// standinTaskDir writes, under a folder for [executor_runtime] task_dirs, a
// task without internet whose image holds the stand-in agent
// (executor/installed/testdata/standin, built here) and whose verifier
// wants 42 in /app/answer.txt.
func standinTaskDir(t *testing.T, id string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, id)
	bin := filepath.Join(dir, "environment", "standin")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", bin, "../../../executor/installed/testdata/standin")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the stand-in agent: %v\n%s", err, out)
	}
	files := map[string]string{
		"task.toml":              "version = \"1.0\"\n[agent]\ntimeout_sec = 120\n[verifier]\ntimeout_sec = 60\n[environment]\nallow_internet = false\n",
		"instruction.md":         "Write 42 to /app/answer.txt.\n",
		"environment/Dockerfile": "FROM " + dockertest.BaseImage + "\nWORKDIR /app\nCOPY standin /usr/local/bin/standin\n",
		"tests/test.sh":          "#!/bin/bash\nmkdir -p /logs/verifier\nif [ \"$(cat /app/answer.txt)\" = 42 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A --budget-usd run of an installed agent stops the agent's next call
// once the budget is spent: the call the budget refuses never reaches the
// endpoint, the agent is told so, the trial ends as budget_exhausted and
// the run as a spent budget does (exit code 4, state saved, resumable).
// The stand-in agent runs in Docker against the fake server; only the
// executor's model is priced, so the Planner's call spends nothing and
// the agent's first call (1050 tokens at $1/Mtok) spends the budget.
func TestRunWithAnInstalledAgentStopsAtTheBudget(t *testing.T) {
	dockerForTest(t)
	const task, key = "standin-budget", "sk-installed-budget-5c1e"
	taskDirs := standinTaskDir(t, task)
	srv := llmtest.NewServer(t)
	srv.Handle(func(q llmtest.Request) llmtest.Reply {
		if q.Chat.Model == "test/executor-model" {
			return llmtest.ToolCall("c1", "run_command", `{"command":"echo 42 > /app/answer.txt"}`).WithUsage(1000, 50)
		}
		return llmtest.Text("Write the answer, then check it.").WithUsage(1000, 50)
	})
	t.Setenv("HARNESS_INSTALLED_BUDGET_KEY", key)
	var toml strings.Builder
	fmt.Fprintf(&toml, "[executor_runtime]\ntask_cache_dir = %q\ntask_dirs = [%q]\n", t.TempDir(), taskDirs)
	for _, role := range conditions.ModelRoles() {
		price := 0.0
		if role == conditions.RoleExecutor {
			price = 1
		}
		fmt.Fprintf(&toml, "[models.%s]\nbase_url = %q\napi_key_env = \"HARNESS_INSTALLED_BUDGET_KEY\"\nmodel = \"test/%s-model\"\nmax_retries = 0\n"+
			"price_input_per_mtok = %g\nprice_output_per_mtok = %g\ncontext_tokens = 65536\n", role, srv.URL(), role, price, price)
	}
	toml.WriteString(`[agents.standin]
kind = "installed"
version = "1"
install = "true"
command = "standin --api openai --instruction-file {instruction_file} --skills .agents/skills --model {model} --logs /tmp/standin"
skills_dir = ".agents/skills"
api = "openai"
`)
	cfgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "default.toml"), []byte(toml.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	out := t.TempDir()
	r := runCLI(t, engineFactory(), "run", "--tasks", task, "--agent", "standin", "--iterations", "2", "-j", "1",
		"--condition", "no_feedback", "--skill-updates", "none", "--config-dir", cfgDir, "--out", out, "--budget-usd", "0.001")
	if r.code != ExitBudget {
		t.Fatalf("exit %d, want %d (budget)\nstdout:\n%s\nstderr:\n%s", r.code, ExitBudget, r.out, r.errOut)
	}
	dir := onlyRun(t, out)

	var agentCalls int
	for _, q := range srv.Requests() {
		if q.Chat.Model == "test/executor-model" {
			agentCalls++
		}
		if got := q.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("a call reached the server with Authorization %q, want the configured key", got)
		}
	}
	if agentCalls != 1 {
		t.Errorf("the server got %d calls of the agent, want 1: the next one refused by the budget", agentCalls)
	}
	const caller = "executor/student-1/i0001-" + task
	var logged, refused int
	for _, c := range callLines(t, dir) {
		if c.Caller != caller {
			continue
		}
		logged++
		if strings.Contains(c.Error, "budget") && c.Attempts == 0 {
			refused++
		}
	}
	if logged != 2 || refused != 1 {
		t.Errorf("call log has %d calls of %s (%d refused by the budget), want the charged one and the refused one", logged, caller, refused)
	}
	ledger := savedLedger(t, dir)
	if u := ledger.ByCaller[caller]; u.Calls != 1 || u.CostUSD < 0.001 {
		t.Errorf("ledger for %s: %+v, want the one charged call, which spent the budget", caller, u)
	}

	var trace rundir.Trace
	data, err := os.ReadFile(filepath.Join(dir, rundir.TracePath(task, 1)))
	if err != nil || json.Unmarshal(data, &trace) != nil {
		t.Fatalf("the trial's trace: %v\n%s", err, data)
	}
	if trace.Status != rundir.TrialStatus("budget_exhausted") || trace.Agent != "standin" {
		t.Errorf("trace of agent %q has status %q (cause %q), want budget_exhausted", trace.Agent, trace.Status, trace.Cause)
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.TracePath(task, 2))); !os.IsNotExist(err) {
		t.Errorf("a second iteration ran after the budget was spent: %v", err)
	}
	stderr, _ := os.ReadFile(filepath.Join(dir, rundir.JobDir(task, 1), installed.StderrFile))
	if !strings.Contains(string(stderr), "budget_exhausted") {
		t.Errorf("the agent was not told the budget is spent; its stderr: %s", stderr)
	}
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Manifest().Status; got != rundir.StatusBudgetExhausted {
		t.Errorf("run.json status %q, want %q", got, rundir.StatusBudgetExhausted)
	}
}
