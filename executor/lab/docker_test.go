package lab

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/internal/dockertest"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
	"github.com/mediated-coevo/harness/llm/openaiapi"
)

// These tests run the lab agent through the real trial runner on real
// containers, with a fake OpenAI-compatible server scripted with the right
// commands. They skip only when no Docker engine answers or the base image
// is missing (benchmarks/baseimage/build.sh builds it).

func labRuntime(t *testing.T) config.ExecutorRuntime {
	return config.ExecutorRuntime{
		Network:         docker.NetworkTask,
		BuildTimeout:    config.Duration{Duration: 5 * time.Minute},
		AgentTimeout:    config.Duration{Duration: 2 * time.Minute},
		VerifierTimeout: config.Duration{Duration: 2 * time.Minute},
		PidsLimit:       256,
		MemoryMB:        1024,
		CPUs:            1,
		TaskCacheDir:    t.TempDir(),
	}
}

func labDocker(t *testing.T, rt config.ExecutorRuntime) *docker.Backend {
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

// labSmokeTask resolves a shipped smoke task and returns it with its
// reference solution script.
func labSmokeTask(t *testing.T, rt config.ExecutorRuntime, id string) (*benchmarks.Task, string) {
	t.Helper()
	res, err := benchmarks.NewResolver(rt)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := res.Resolve(context.Background(), []string{id})
	if err != nil {
		t.Fatalf("resolve smoke task %s: %v", id, err)
	}
	solve, err := os.ReadFile(filepath.Join(tasks[0].SolutionDir(), "solve.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return tasks[0], string(solve)
}

func wireCall(id, name string, args any) llmtest.Reply {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return llmtest.ToolCall(id, name, string(b)).WithUsage(1000, 50)
}

func labOpenAIClients(t *testing.T, srv *llmtest.Server, ledger *llm.Ledger) map[conditions.Role]*llm.Client {
	t.Helper()
	p, err := openaiapi.New(config.Model{Provider: config.ProviderOpenAI, BaseURL: srv.URL(), Model: "fake-model"})
	if err != nil {
		t.Fatal(err)
	}
	return labClients(p, ledger)
}

func runLabTrial(t *testing.T, d *docker.Backend, rt config.ExecutorRuntime, task *benchmarks.Task, agent executor.Agent) *executor.Trace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := &executor.Runner{Backend: d, Runtime: rt}
	tr := r.Run(ctx, executor.TrialSpec{
		Task: task, Agent: agent, JobDir: filepath.Join(t.TempDir(), "job"),
		Plan: "1. Look at the inputs.\n2. Do the work.\n3. Check the result.", ExecutorSkill: "---\nname: executor\ndescription: d\n---\n\nCheck your work.\n",
		RunID: "lab-test", Row: "row", Iteration: 1, TrialID: "trial-lab-" + task.ID, Seed: 3, Caller: labCaller,
	})
	if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 1 {
		t.Fatalf("trace status %s reward %v errors %q, want scored with reward 1\nagent output: %s\nverifier: %s",
			tr.Status, tr.Reward, tr.Errors, tr.AgentOutput, tr.VerifierOutput)
	}
	return tr
}

func TestLabDockerSingleSolvesSmokeTask(t *testing.T) {
	rt := labRuntime(t)
	d := labDocker(t, rt)
	task, solve := labSmokeTask(t, rt, "orbital-period")
	srv := llmtest.NewServer(t)
	srv.Push(
		wireCall("c1", ToolListDir, map[string]string{"path": "/app"}),
		wireCall("c2", ToolReadFile, map[string]string{"path": "data/orbits.csv"}),
		wireCall("c3", ToolRunCommand, map[string]any{"command": solve, "timeout_sec": 60}),
		wireCall("c4", ToolRunCommand, map[string]any{"command": "head -3 /app/results.csv"}),
		wireCall("c5", ToolSubmit, map[string]string{"summary": "wrote /app/results.csv with Kepler's law"}),
	)
	ledger := llm.NewLedger(llm.Limits{})
	agent := NewAgent(labTestLab(config.ModeSingle), labOpenAIClients(t, srv, ledger))
	tr := runLabTrial(t, d, rt, task, agent)

	if tr.Agent != "lab" || tr.Usage.ModelCalls != 5 || tr.Usage.InputTokens != 5000 || tr.Usage.OutputTokens != 250 {
		t.Errorf("trace agent %q usage %+v, want lab with 5 calls of 1000+50 tokens", tr.Agent, tr.Usage)
	}
	if tr.AgentOutput != "wrote /app/results.csv with Kepler's law" {
		t.Errorf("agent output = %q", tr.AgentOutput)
	}
	if got := ledger.ByCaller()[labCaller].Calls; got != 5 {
		t.Errorf("ledger charged %d calls to %s, want 5", got, labCaller)
	}
	reqs := srv.Requests()
	// The model saw the listing, the file and the command's real output.
	last := reqs[len(reqs)-1].Chat.Messages
	var seen []string
	for _, m := range last {
		if m.Role == llm.RoleTool {
			seen = append(seen, string(m.Content))
		}
	}
	if len(seen) != 4 || !strings.Contains(seen[0], "data/orbits.csv") || !strings.Contains(seen[1], "semi_major_axis_au") ||
		!strings.HasPrefix(seen[2], "exit code: 0") || !strings.Contains(seen[3], "name,period_days") {
		t.Errorf("tool results the model saw:\n%s", strings.Join(seen, "\n----\n"))
	}
	if got := string(last[1].Content); got != task.Instruction {
		t.Errorf("user message differs from the instruction:\n%s", got)
	}
	recs := readLabTranscript(t, tr.JobDir)
	if tr.TranscriptPath != TranscriptFile || !labSummaryOf(t, recs).Submitted {
		t.Errorf("transcript %q does not end with a submitted summary", tr.TranscriptPath)
	}
}

func TestLabDockerHierarchicalSolvesSmokeTask(t *testing.T) {
	rt := labRuntime(t)
	d := labDocker(t, rt)
	task, solve := labSmokeTask(t, rt, "fix-broken-build")
	srv := llmtest.NewServer(t)
	srv.Push(
		// coordinator
		wireCall("k1", ToolDispatch, map[string]string{"agent": "explore", "task": "Find out why `make` fails in /app."}),
		// explore: tries to run make (refused), then reads
		wireCall("e1", ToolRunCommand, map[string]any{"command": "make -C /app"}),
		wireCall("e2", ToolListDir, map[string]string{"path": "/app"}),
		wireCall("e3", ToolReadFile, map[string]string{"path": "/app/Makefile"}),
		wireCall("e4", ToolSubmit, map[string]string{"summary": "OBJS lacks stats.o; stats.c seeds min/max with 0 and divides integers."}),
		// coordinator
		wireCall("k2", ToolDispatch, map[string]string{"agent": "code", "task": "In /app: add stats.o to OBJS, fix min/max seeding and the mean, run make."}),
		// code
		wireCall("c1", ToolRunCommand, map[string]any{"command": solve, "timeout_sec": 60}),
		wireCall("c2", ToolRunCommand, map[string]any{"command": "printf '3 1 2 10\\n' | /app/stats"}),
		wireCall("c3", ToolSubmit, map[string]string{"summary": "fixed the Makefile and stats.c; make builds and the example prints mean=4.00"}),
		// coordinator
		wireCall("k3", ToolSubmit, map[string]string{"summary": "build fixed by the code subagent"}),
	)
	ledger := llm.NewLedger(llm.Limits{})
	agent := NewAgent(labTestLab(config.ModeHierarchical), labOpenAIClients(t, srv, ledger))
	tr := runLabTrial(t, d, rt, task, agent)

	if tr.Usage.ModelCalls != 10 || tr.AgentOutput != "build fixed by the code subagent" {
		t.Errorf("usage %+v output %q, want 10 calls and the coordinator's summary", tr.Usage, tr.AgentOutput)
	}
	byCaller := ledger.ByCaller()
	for caller, want := range map[string]int64{labCaller + "/coordinator": 3, labCaller + "/explore": 4, labCaller + "/code": 3} {
		if got := byCaller[caller].Calls; got != want {
			t.Errorf("ledger: %s made %d calls, want %d", caller, got, want)
		}
	}
	reqs := srv.Requests()
	var exploreTools []string
	for _, tl := range reqs[1].Chat.Tools {
		exploreTools = append(exploreTools, tl.Function.Name)
	}
	if slices.Contains(exploreTools, ToolRunCommand) || slices.Contains(exploreTools, ToolWriteFile) {
		t.Errorf("explore subagent was offered %v", exploreTools)
	}
	// The refusal reached the model and the transcript.
	refusal := reqs[2].Chat.Messages[len(reqs[2].Chat.Messages)-1]
	if refusal.Role != llm.RoleTool || !strings.Contains(string(refusal.Content), "not available") {
		t.Errorf("explore's run_command answered %q, want a refusal", refusal.Content)
	}
	// The code subagent's command really ran.
	out := reqs[8].Chat.Messages[len(reqs[8].Chat.Messages)-1]
	if !strings.Contains(string(out.Content), "mean=4.00") {
		t.Errorf("code subagent's check printed %q", out.Content)
	}
	recs := readLabTranscript(t, tr.JobDir)
	refused := 0
	for _, r := range recs {
		if r.Event == llm.EventRefused && r.Agent == SubagentExplore && r.Detail == ToolRunCommand {
			refused++
		}
	}
	s := labSummaryOf(t, recs)
	if refused != 1 || s.Refused != 1 || !s.Submitted {
		t.Errorf("%d refusal records, summary %+v; want explore's run_command refused once and a submit", refused, s)
	}
}
