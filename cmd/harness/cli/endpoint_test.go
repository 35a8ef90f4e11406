package cli

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// A run that is not offline goes through the configured OpenAI-compatible
// endpoint for every model call: with the key from the named variable, the
// configured model names, tokens priced into the metrics, answers that are
// not the structured output asked for handled by the documented fallback and
// counted, and the key in no file of the run. The endpoint is a local fake
// that speaks the chat-completions wire format; the trials run in Docker,
// where the lab agent, answered with prose instead of tool calls, does nothing.
func TestRunAgainstAnOpenAICompatibleEndpoint(t *testing.T) {
	dockerForTest(t)
	srv := llmtest.NewServer(t)
	srv.Handle(func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "Happy to help, but here is prose rather than the JSON you asked for.",
			PromptTokens: 1000, CompletionTokens: 100}
	})
	const key = "sk-endpoint-test-7f3a9c"
	t.Setenv("HARNESS_ENDPOINT_TEST_KEY", key)

	var toml strings.Builder
	fmt.Fprintf(&toml, "[executor_runtime]\ntask_cache_dir = %q\n", t.TempDir())
	for _, role := range conditions.ModelRoles() {
		fmt.Fprintf(&toml, "[models.%s]\nbase_url = %q\napi_key_env = \"HARNESS_ENDPOINT_TEST_KEY\"\nmodel = \"test/%s-model\"\nmax_retries = 0\n"+
			"price_input_per_mtok = 2.0\nprice_output_per_mtok = 8.0\ncontext_tokens = 65536\n",
			role, srv.URL(), role)
	}
	cfgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, "default.toml"), []byte(toml.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := runCLI(t, engineFactory(), "run", "--tasks", "orbital-period", "--agent", "lab", "--iterations", "2",
		"--condition", "static_mediator", "--skill-updates", "none", "--config-dir", cfgDir, "--out", out)
	if r.code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}

	reqs := srv.Requests()
	models := map[string]bool{}
	for _, q := range reqs {
		if got := q.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("request to %s carries Authorization %q", q.Chat.Model, got)
		}
		models[q.Chat.Model] = true
	}
	for _, want := range []string{"test/planner-model", "test/executor-model", "test/mediator-model"} {
		if !models[want] {
			t.Errorf("no request for %s; models asked: %v", want, models)
		}
	}

	runs, _ := filepath.Glob(filepath.Join(out, "*-static_mediator-*"))
	if len(runs) != 1 {
		t.Fatalf("run directories under %s: %v", out, runs)
	}
	rows, err := rundir.ReadMetrics(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d metric rows, want 2 (1 task x 2 iterations)", len(rows))
	}
	for _, row := range rows {
		if row.Offline || row.Status != "scored" || row.Fallbacks == 0 ||
			row.PlannerInputTokens == 0 || row.PlannerCostUSD <= 0 || row.ExecutorInputTokens == 0 || row.MediatorCostUSD <= 0 {
			t.Errorf("iteration %d: offline %v status %s fallbacks %d; planner %d tokens $%v, executor %d tokens, mediator $%v",
				row.Iteration, row.Offline, row.Status, row.Fallbacks, row.PlannerInputTokens, row.PlannerCostUSD,
				row.ExecutorInputTokens, row.MediatorCostUSD)
		}
	}

	err = filepath.WalkDir(runs[0], func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), key) {
			t.Errorf("%s contains the API key", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
