package installed

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/executor/lab"
	"github.com/mediated-coevo/harness/internal/dockertest"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
	"github.com/mediated-coevo/harness/llm/openaiapi"
)

// These tests run the stand-in agent (testdata/standin, built here) as an
// installed agent in a real container, its calls going through the
// trial's gateway to the fake OpenAI server. They skip only without a
// Docker engine or the base image.

const (
	testKey    = "sk-configured-7f3a9c"
	testCaller = "executor/student-1"
	testMarker = "MARKER: skill-marker-5521"
)

func testRuntime(t *testing.T) config.ExecutorRuntime {
	return config.ExecutorRuntime{
		Network:         docker.NetworkTask,
		BuildTimeout:    config.Duration{Duration: 5 * time.Minute},
		AgentTimeout:    config.Duration{Duration: 2 * time.Minute},
		VerifierTimeout: config.Duration{Duration: time.Minute},
		PidsLimit:       256,
		MemoryMB:        512,
		CPUs:            1,
		TaskCacheDir:    t.TempDir(),
	}
}

func testDocker(t *testing.T, rt config.ExecutorRuntime) *docker.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := docker.New(ctx, rt)
	if err != nil {
		dockertest.Unavailable(t, "no Docker engine: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	dockertest.RequireImage(t, d.Host(), dockertest.BaseImage)
	return d
}

var (
	standinOnce sync.Once
	standinBin  []byte
	standinErr  error
)

// standinTask writes a task without internet whose image holds the
// stand-in, and whose verifier wants 42 in /app/answer.txt.
func standinTask(t *testing.T) *benchmarks.Task {
	t.Helper()
	standinOnce.Do(func() {
		out := filepath.Join(os.TempDir(), "harness-standin-test-bin")
		cmd := exec.Command("go", "build", "-o", out, "./testdata/standin")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if b, err := cmd.CombinedOutput(); err != nil {
			standinErr = errors.New(string(b))
			return
		}
		standinBin, standinErr = os.ReadFile(out)
		os.Remove(out)
	})
	if standinErr != nil {
		t.Fatalf("build the stand-in agent: %v", standinErr)
	}
	dir := t.TempDir()
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
	if err := os.WriteFile(filepath.Join(dir, "environment", "standin"), standinBin, 0o755); err != nil {
		t.Fatal(err)
	}
	task, err := benchmarks.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// countingRecorder keeps every call record, like the run's call log.
type countingRecorder struct {
	mu   sync.Mutex
	recs []llm.CallRecord
}

func (r *countingRecorder) Record(rec llm.CallRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

func (r *countingRecorder) records() []llm.CallRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]llm.CallRecord(nil), r.recs...)
}

func standinAgent(api string, client *llm.Client) *Agent {
	return &Agent{AgentName: "standin", Client: client, Spec: config.Agent{
		Kind: config.AgentInstalled, Version: "1", API: api, SkillsDir: ".agents/skills", Plan: "AGENTS.md",
		Install: "mkdir -p /opt/standin && echo installed > /opt/standin/installed",
		Command: "standin --api " + api + " --instruction-file {instruction_file} --skills .agents/skills --model {model} --logs /tmp/standin",
		Logs:    []string{"/tmp/standin"},
	}}
}

// openAIClient reads the key from STANDIN_TEST_KEY, which the test sets to
// testKey (a parallel test may not set it itself).
func openAIClient(t *testing.T, srv *llmtest.Server, ledger *llm.Ledger, rec llm.CallRecorder) *llm.Client {
	t.Helper()
	in, out := 1.0, 1.0
	m := config.Model{Provider: config.ProviderOpenAI, BaseURL: srv.URL(), Model: "fake-model", APIKeyEnv: "STANDIN_TEST_KEY",
		PriceInputPerMTok: &in, PriceOutputPerMTok: &out}
	p, err := openaiapi.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return &llm.Client{Provider: p, Ledger: ledger, Role: "executor", Model: "fake-model", Recorder: rec}
}

func runTrial(t *testing.T, d *docker.Backend, rt config.ExecutorRuntime, task *benchmarks.Task, agent executor.Agent) (*executor.Trace, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	job := filepath.Join(t.TempDir(), "job")
	r := &executor.Runner{Backend: d, Runtime: rt}
	tr := r.Run(ctx, executor.TrialSpec{
		Task: task, Agent: agent, JobDir: job, Plan: "Write the answer, then check it.",
		ExecutorSkill: "---\nname: executor\ndescription: how to work\n---\n\n" + testMarker + "\n",
		RunID:         "installed-test", Row: "row", Iteration: 1, TrialID: "trial-installed-" + task.ID, Seed: 5, Caller: testCaller,
	})
	return tr, job
}

// netProbe is a command that tries an address outside the trial.
const netProbe = "if timeout 5 bash -c 'exec 3<>/dev/tcp/1.1.1.1/80' 2>/dev/null; then echo probe-reached; else echo probe-blocked; fi"

// The three API shapes run side by side: each trial has its own server,
// network and job directory, and mostly waits for the engine.
func TestInstalledAgentDockerThroughTheGateway(t *testing.T) {
	rt := testRuntime(t)
	d := testDocker(t, rt)
	task := standinTask(t)
	t.Setenv("STANDIN_TEST_KEY", testKey)
	// The group returns when every shape has, so that this test's own
	// duration (what CI lists) is theirs.
	t.Run("apis", func(t *testing.T) {
		for _, api := range config.APIShapes() {
			t.Run(api, func(t *testing.T) {
				t.Parallel()
				srv := llmtest.NewServer(t)
				srv.Push(
					llmtest.ToolCall("c1", "run_command", `{"command":"echo 42 > /app/answer.txt"}`).WithUsage(1000, 50),
					llmtest.ToolCall("c2", "run_command", `{"command":"`+strings.ReplaceAll(netProbe, `"`, `\"`)+`"}`).WithUsage(1000, 50),
					llmtest.ToolCall("c3", "write_file", `{"path":"/app/note.txt","content":"done"}`).WithUsage(1000, 50),
					llmtest.Text("All done.").WithUsage(1000, 50),
				)
				ledger, rec := llm.NewLedger(llm.Limits{}), &countingRecorder{}
				tr, job := runTrial(t, d, rt, task, standinAgent(api, openAIClient(t, srv, ledger, rec)))
				if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 1 {
					t.Fatalf("trace %s reward %v errors %q\noutput: %s\nstderr: %s", tr.Status, tr.Reward, tr.Errors, tr.AgentOutput, readFile(t, job, StderrFile))
				}
				checkUpstream(t, srv, 4)
				if got := ledger.ByCaller()[testCaller].Calls; got != 4 || len(rec.records()) != 4 || tr.Usage.ModelCalls != 4 {
					t.Errorf("ledger calls %d, call log records %d, trace calls %d; want 4 of each", got, len(rec.records()), tr.Usage.ModelCalls)
				}
				if req := srv.Requests()[2]; !strings.Contains(string(req.Raw), "probe-blocked") {
					t.Errorf("the container reached an address outside the trial: the probe's result was %s", req.Raw)
				}
				checkContainerEnv(t, job, api)
				if out := readFile(t, job, StdoutFile); !strings.Contains(out, "skill "+testMarker) {
					t.Errorf("the stand-in did not echo the executor skill's marker; its output: %s", out)
				}
				checkTrajectory(t, job, 4)
			})
		}
	})
}

// checkUpstream checks that the fake server saw n calls, each with the
// configured key, which only the harness holds.
func checkUpstream(t *testing.T, srv *llmtest.Server, n int) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != n {
		t.Fatalf("the fake server got %d calls, want %d", len(reqs), n)
	}
	for i, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("call %d reached the server with Authorization %q, want the configured key", i+1, got)
		}
	}
}

// checkContainerEnv reads the environment the stand-in recorded: the
// gateway's address and a trial token, never the key.
func checkContainerEnv(t *testing.T, job, api string) {
	t.Helper()
	env := logFile(t, job, "env.txt")
	if strings.Contains(env, testKey) {
		t.Errorf("the configured key is in the agent's environment:\n%s", env)
	}
	keyVar, urlVar := "OPENAI_API_KEY=harness-trial-", "OPENAI_BASE_URL=http://"
	switch api {
	case config.APIAnthropic:
		keyVar, urlVar = "ANTHROPIC_API_KEY=harness-trial-", "ANTHROPIC_BASE_URL=http://"
	case config.APIGemini:
		keyVar, urlVar = "GEMINI_API_KEY=harness-trial-", "GOOGLE_GEMINI_BASE_URL=http://"
	}
	for _, want := range []string{keyVar, urlVar, "HARNESS_MODEL=fake-model", "HARNESS_MODEL_BASE_URL=http://"} {
		if !strings.Contains(env, want) {
			t.Errorf("agent environment lacks %s:\n%s", want, env)
		}
	}
}

func checkTrajectory(t *testing.T, job string, calls int) {
	t.Helper()
	var doc struct {
		Steps []struct {
			Source string `json:"source"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(readFile(t, job, lab.TrajectoryFile)), &doc); err != nil {
		t.Fatalf("read the trajectory: %v", err)
	}
	agentSteps := 0
	for _, s := range doc.Steps {
		if s.Source == "agent" {
			agentSteps++
		}
	}
	if agentSteps != calls {
		t.Errorf("trajectory has %d agent steps, want one per call (%d)", agentSteps, calls)
	}
	recs, err := lab.ReadTranscript(filepath.Join(job, lab.TranscriptFile))
	if err != nil || !strings.Contains(lab.CondenseTranscript(recs, 4000), "echo 42 > /app/answer.txt") {
		t.Errorf("the transcript does not condense to the agent's tool calls: %v", err)
	}
}

func TestInstalledAgentDockerBudgetStopsTheNextCall(t *testing.T) {
	rt := testRuntime(t)
	d := testDocker(t, rt)
	task := standinTask(t)
	t.Setenv("STANDIN_TEST_KEY", testKey)
	srv := llmtest.NewServer(t)
	srv.Push(
		llmtest.ToolCall("c1", "run_command", `{"command":"echo 41 > /app/answer.txt"}`).WithUsage(1000, 50),
		llmtest.ToolCall("c2", "run_command", `{"command":"echo 42 > /app/answer.txt"}`).WithUsage(1000, 50),
	)
	// A thousandth of a cent: the first call (1050 tokens at $1/Mtok) spends it.
	ledger, rec := llm.NewLedger(llm.Limits{MaxUSD: 0.00001}), &countingRecorder{}
	tr, job := runTrial(t, d, rt, task, standinAgent(config.APIOpenAI, openAIClient(t, srv, ledger, rec)))
	if tr.Status != executor.StatusBudgetExhausted {
		t.Errorf("trace status %s (errors %q), want %s", tr.Status, tr.Errors, executor.StatusBudgetExhausted)
	}
	if srv.Count() != 1 || ledger.ByCaller()[testCaller].Calls != 1 {
		t.Errorf("the server got %d calls and the ledger charged %d; want the call past the budget refused",
			srv.Count(), ledger.ByCaller()[testCaller].Calls)
	}
	if recs := rec.records(); len(recs) != 2 || recs[1].Err == nil {
		t.Errorf("call log = %+v, want the charged call and the refused one", recs)
	}
	if errOut := readFile(t, job, StderrFile); !strings.Contains(errOut, "budget_exhausted") {
		t.Errorf("the agent was not told the budget is spent; its stderr: %s", errOut)
	}
}

func TestInstalledAgentDockerOffline(t *testing.T) {
	rt := testRuntime(t)
	d := testDocker(t, rt)
	task := standinTask(t)
	ledger := llm.NewLedger(llm.Limits{})
	client := &llm.Client{Provider: llm.NewOffline(5), Ledger: ledger, Role: "executor", Model: "offline"}
	tr, job := runTrial(t, d, rt, task, standinAgent(config.APIAnthropic, client))
	if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 0 {
		t.Fatalf("trace %s reward %v errors %q, want scored 0 (offline answers do no work)", tr.Status, tr.Reward, tr.Errors)
	}
	if out := readFile(t, job, StdoutFile); !strings.Contains(out, "final: "+OfflineAnswer) {
		t.Errorf("the stand-in did not end on the offline answer; its output: %s", out)
	}
	if got := ledger.ByCaller()[testCaller].Calls; got != 1 {
		t.Errorf("ledger charged %d calls, want 1", got)
	}
}

func readFile(t *testing.T, job, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(job, name))
	if err != nil {
		t.Errorf("read %s: %v", name, err)
	}
	return string(b)
}

// logFile reads one file of the stand-in's logs, kept as a tar archive.
func logFile(t *testing.T, job, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(job, LogsDir, "01-standin.tar"))
	if err != nil {
		t.Fatalf("the agent's logs were not kept: %v", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s is not in the agent's logs: %v", name, err)
		}
		if filepath.Base(h.Name) == name {
			b, _ := io.ReadAll(tr)
			return string(b)
		}
	}
}
