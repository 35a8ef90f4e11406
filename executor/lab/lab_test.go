package lab

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
)

var _ executor.Agent = (*Agent)(nil)

func TestLabSystemPromptLayers(t *testing.T) {
	// The instruction carries odd whitespace and Markdown so any rewriting shows.
	instruction := "  # Goal\n\nCompute /app/out.txt from /app/data.csv.\n\tKeep *everything*.\n\n"
	tests := []struct {
		name     string
		mode     string
		caller   string
		plan     string
		identity string
	}{
		{"single with plan", config.ModeSingle, labCaller, "1. Read.\n2. Write.", "You are an Executor"},
		{"single without plan", config.ModeSingle, labCaller, "", "You are an Executor"},
		{"coordinator", config.ModeHierarchical, labCaller + "/coordinator", "Step one.", "You coordinate an Executor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newLabFakeSandbox(map[string]string{
				"/app/data.csv": "a,b\n",
				"/root/.claude/skills/csv-tools/SKILL.md": "---\nname: csv-tools\ndescription: Helpers for CSV files.\n---\n\nUse python's csv module.\n",
			})
			p := newLabProvider(map[string][]labStep{tc.caller: {labSubmit("done")}})
			in := labInput(t, sb, instruction)
			in.Plan = tc.plan
			res, err := NewAgent(labTestLab(tc.mode), labClients(p, nil)).Run(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Submitted || res.Output != "done" {
				t.Errorf("result = %+v, want submitted with output \"done\"", res)
			}
			reqs := p.requests(tc.caller)
			if len(reqs) != 1 {
				t.Fatalf("%d requests for %s, want 1", len(reqs), tc.caller)
			}
			msgs := reqs[0].Messages
			if len(msgs) != 2 || msgs[0].Role != llm.RoleSystem || msgs[1].Role != llm.RoleUser {
				t.Fatalf("messages = %+v, want system then user", msgs)
			}
			if msgs[1].Content != instruction {
				t.Errorf("user message = %q, want the instruction unmodified %q", msgs[1].Content, instruction)
			}
			sys := msgs[0].Content
			layers := []string{"# Your role", tc.identity, "# Executor skill", "Always check your output.",
				"# Task skills", "- csv-tools: Helpers for CSV files."}
			if tc.plan != "" {
				layers = append(layers, "# Plan from the Planner", tc.plan)
			} else if strings.Contains(sys, "# Plan from the Planner") {
				t.Errorf("system prompt has a plan section although the plan is empty:\n%s", sys)
			}
			at := 0
			for _, l := range layers {
				i := strings.Index(sys[at:], l)
				if i < 0 {
					t.Fatalf("system prompt lacks %q after offset %d (layers out of order?):\n%s", l, at, sys)
				}
				at += i + len(l)
			}
			if strings.Contains(sys, "Compute /app/out.txt") {
				t.Errorf("the instruction leaked into the system prompt:\n%s", sys)
			}
			if strings.Contains(sys, "Use python's csv module") {
				t.Errorf("the system prompt holds a task skill's body; only the index belongs there")
			}
			if reqs[0].Kind != llm.KindAgentStep || reqs[0].Seed != 7 {
				t.Errorf("kind %q seed %d, want agent_step and the trial's seed 7", reqs[0].Kind, reqs[0].Seed)
			}
		})
	}
}

func TestLabSingleModeToolsAndCommands(t *testing.T) {
	sb := newLabFakeSandbox(map[string]string{"/app/in.txt": "hello\n"})
	sb.commands["cat in.txt | wc -l"] = executor.ExecResult{ExitCode: 0, Stdout: "1\n"}
	p := newLabProvider(map[string][]labStep{labCaller: {
		labCall(ToolListDir, map[string]string{"path": "."}),
		labCall(ToolReadFile, map[string]string{"path": "in.txt"}),
		labCall(ToolRunCommand, map[string]any{"command": "cat in.txt | wc -l", "timeout_sec": 5}),
		labCall(ToolWriteFile, map[string]string{"path": "/app/out.txt", "content": "1\n"}),
		labSubmit("wrote the line count"),
	}})
	in := labInput(t, sb, "Count the lines of /app/in.txt into /app/out.txt.")
	lab := labTestLab(config.ModeSingle)
	res, err := NewAgent(lab, labClients(p, nil)).Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Submitted {
		t.Fatalf("not submitted: %+v", res)
	}
	reqs := p.requests(labCaller)
	// The sandbox lists no task skills, so read_skill is not offered.
	want := []string{ToolListDir, ToolReadFile, ToolRunCommand, ToolSubmit, ToolWriteFile}
	if got := toolNamesOf(reqs[0]); !slices.Equal(got, want) {
		t.Errorf("single agent's tools = %v, want %v", got, want)
	}
	if got, _ := sb.file("/app/out.txt"); got != "1\n" {
		t.Errorf("out.txt = %q, want the written content", got)
	}
	var cmd *executor.ExecRequest
	for i := range sb.execs {
		if sb.execs[i].Cmd[0] == "bash" {
			cmd = &sb.execs[i]
		}
	}
	if cmd == nil || cmd.Dir != "/app" || cmd.Timeout.Seconds() != 5 || cmd.OutputCap != lab.OutputCapBytes {
		t.Errorf("command exec = %+v, want bash -lc in /app with a 5s timeout and the lab's output cap", cmd)
	}
	// The tool results the model saw, in order.
	last := reqs[len(reqs)-1].Messages
	var results []string
	for _, m := range last {
		if m.Role == llm.RoleTool {
			results = append(results, m.Content)
		}
	}
	checks := []string{"in.txt  (6 bytes)", "hello", "exit code: 0\n--- stdout ---\n1\n", "wrote 2 bytes to /app/out.txt"}
	for i, c := range checks {
		if i >= len(results) || !strings.Contains(results[i], c) {
			t.Errorf("tool result %d = %q, want it to contain %q", i, results, c)
		}
	}
}

// hierarchicalScript scripts a coordinator that explores, plans, codes and
// submits, with subagents that each submit at once.
func hierarchicalScript() map[string][]labStep {
	return map[string][]labStep{
		labCaller + "/coordinator": {
			labCall(ToolDispatch, map[string]string{"agent": "explore", "task": "Look at /app."}),
			labCall(ToolDispatch, map[string]string{"agent": "plan", "task": "Plan the change."}),
			labCall(ToolDispatch, map[string]string{"agent": "code", "task": "Write /app/out.txt."}),
			labSubmit("all done"),
		},
		labCaller + "/explore": {labSubmit("explored")},
		labCaller + "/plan":    {labSubmit("planned")},
		labCaller + "/code":    {labSubmit("coded")},
	}
}

func TestLabHierarchicalAllowlists(t *testing.T) {
	// The task ships a skill, so every agent may read it.
	sb := newLabFakeSandbox(map[string]string{
		"/root/.claude/skills/csv-tools/SKILL.md": "---\nname: csv-tools\ndescription: Helpers for CSV files.\n---\n\nUse python's csv module.\n",
	})
	p := newLabProvider(hierarchicalScript())
	in := labInput(t, sb, "Do the task.")
	res, err := NewAgent(labTestLab(config.ModeHierarchical), labClients(p, nil)).Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Submitted || res.Output != "all done" {
		t.Errorf("result = %+v", res)
	}
	readOnly := []string{ToolListDir, ToolReadFile, ToolReadSkill, ToolSubmit}
	tests := []struct {
		caller string
		tools  []string
	}{
		{labCaller + "/coordinator", []string{ToolDispatch, ToolListDir, ToolReadFile, ToolReadSkill, ToolSubmit}},
		{labCaller + "/explore", readOnly},
		{labCaller + "/plan", readOnly},
		{labCaller + "/code", []string{ToolListDir, ToolReadFile, ToolReadSkill, ToolRunCommand, ToolSubmit, ToolWriteFile}},
	}
	for _, tc := range tests {
		reqs := p.requests(tc.caller)
		if len(reqs) == 0 {
			t.Errorf("%s made no calls", tc.caller)
		}
		for i, r := range reqs {
			if got := toolNamesOf(r); !slices.Equal(got, tc.tools) {
				t.Errorf("%s call %d is offered %v, want %v", tc.caller, i+1, got, tc.tools)
			}
		}
	}
	// A subagent starts fresh: its user message is the dispatch task, and
	// it never sees the plan or the coordinator's conversation.
	code := p.requests(labCaller + "/code")[0]
	if len(code.Messages) != 2 || code.Messages[1].Content != "Write /app/out.txt." {
		t.Errorf("code subagent's messages = %+v, want a fresh system + task", code.Messages)
	}
	if strings.Contains(code.Messages[0].Content, in.Plan) || !strings.Contains(code.Messages[0].Content, "Always check your output.") {
		t.Errorf("code subagent's system prompt should inherit the executor skill but not the plan:\n%s", code.Messages[0].Content)
	}
	if code.Seed == in.Seed {
		t.Errorf("code subagent seed %d: want a seed of its own", code.Seed)
	}
}

func TestLabExploreRunCommandRefused(t *testing.T) {
	sb := newLabFakeSandbox(nil)
	script := hierarchicalScript()
	script[labCaller+"/explore"] = []labStep{
		labCall(ToolRunCommand, map[string]any{"command": "rm -rf /app"}),
		labCall(ToolWriteFile, map[string]any{"path": "/app/x", "content": "x"}),
		labSubmit("could not run commands"),
	}
	p := newLabProvider(script)
	in := labInput(t, sb, "Do the task.")
	if _, err := NewAgent(labTestLab(config.ModeHierarchical), labClients(p, nil)).Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if cmds := sb.bashCommands(); len(cmds) != 0 {
		t.Errorf("the explore subagent ran %q", cmds)
	}
	if _, ok := sb.file("/app/x"); ok {
		t.Error("the explore subagent wrote a file")
	}
	recs := readLabTranscript(t, in.JobDir)
	var refused []string
	for _, r := range recs {
		if r.Event == llm.EventRefused {
			if r.Agent != SubagentExplore || r.Dispatch != 1 {
				t.Errorf("refusal recorded for agent %q dispatch %d, want explore dispatch 1", r.Agent, r.Dispatch)
			}
			refused = append(refused, r.Detail)
		}
	}
	if !slices.Equal(refused, []string{ToolRunCommand, ToolWriteFile}) {
		t.Errorf("refusals in the transcript = %v, want run_command and write_file", refused)
	}
	if s := labSummaryOf(t, recs); s.Refused != 2 {
		t.Errorf("summary counts %d refusals, want 2", s.Refused)
	}
	// The model was told the tool is not available.
	explore := p.requests(labCaller + "/explore")
	last := explore[len(explore)-1].Messages
	if m := last[3]; m.Role != llm.RoleTool || !strings.Contains(m.Content, "not available") {
		t.Errorf("refused call's result = %+v, want a not-available error", m)
	}
}

func TestLabDispatchQuota(t *testing.T) {
	tests := []struct {
		name         string
		exploreQuota int
		wantRuns     int
		wantMsg      string
	}{
		{"second explore past quota 1", 1, 1, "explore quota of 1 per trial is used up"},
		{"explore disabled", 0, 0, "allows no explore dispatches"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script := map[string][]labStep{
				labCaller + "/coordinator": {
					labCall(ToolDispatch, map[string]string{"agent": "explore", "task": "first"}),
					labCall(ToolDispatch, map[string]string{"agent": "explore", "task": "second"}),
					labSubmit("done"),
				},
				labCaller + "/explore": {labSubmit("explored")},
			}
			if tc.exploreQuota == 0 {
				script[labCaller+"/coordinator"] = slices.Delete(script[labCaller+"/coordinator"], 0, 1)
			}
			p := newLabProvider(script)
			lab := labTestLab(config.ModeHierarchical)
			lab.ExploreQuota = tc.exploreQuota
			in := labInput(t, newLabFakeSandbox(nil), "Do it.")
			if _, err := NewAgent(lab, labClients(p, nil)).Run(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			if n := len(p.requests(labCaller + "/explore")); n != tc.wantRuns {
				t.Errorf("explore ran %d times, want %d", n, tc.wantRuns)
			}
			coord := p.requests(labCaller + "/coordinator")
			msgs := coord[len(coord)-1].Messages
			refusal := msgs[len(msgs)-1]
			if refusal.Role != llm.RoleTool || !strings.Contains(refusal.Content, tc.wantMsg) {
				t.Errorf("refused dispatch returned %q, want it to say %q", refusal.Content, tc.wantMsg)
			}
			recs := readLabTranscript(t, in.JobDir)
			quotaEvents := 0
			for _, r := range recs {
				if r.Event == EventQuota {
					quotaEvents++
				}
			}
			if s := labSummaryOf(t, recs); quotaEvents != 1 || s.QuotaRefused != 1 || s.Dispatches[SubagentExplore] != tc.wantRuns {
				t.Errorf("%d quota events, summary %+v; want 1 refusal and %d explore runs", quotaEvents, s, tc.wantRuns)
			}
		})
	}
}

func TestLabDispatchReturnsOnlyResult(t *testing.T) {
	sb := newLabFakeSandbox(map[string]string{"/app/secret-listing-entry.txt": "x"})
	script := hierarchicalScript()
	script[labCaller+"/explore"] = []labStep{
		labCall(ToolListDir, map[string]string{"path": "/app"}),
		labSubmit("FOUND: one file"),
	}
	p := newLabProvider(script)
	in := labInput(t, sb, "Do the task.")
	if _, err := NewAgent(labTestLab(config.ModeHierarchical), labClients(p, nil)).Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	coord := p.requests(labCaller + "/coordinator")
	second := coord[1].Messages
	res := second[len(second)-1]
	if res.Role != llm.RoleTool || res.Name != ToolDispatch || res.Content != "FOUND: one file" {
		t.Errorf("dispatch result = %+v, want exactly the explore subagent's summary", res)
	}
	for _, m := range second {
		if strings.Contains(m.Content, "secret-listing-entry") {
			t.Errorf("the coordinator saw the subagent's tool output: %q", m.Content)
		}
	}
}

func TestLabTranscriptAndUsage(t *testing.T) {
	sb := newLabFakeSandbox(nil)
	script := hierarchicalScript()
	script[labCaller+"/code"] = []labStep{
		labCall(ToolRunCommand, map[string]any{"command": "make"}),
		labSubmit("coded"),
	}
	p := newLabProvider(script)
	in := labInput(t, sb, "Do the task.")
	res, err := NewAgent(labTestLab(config.ModeHierarchical), labClients(p, nil)).Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	calls := len(p.all()) // 4 coordinator + 1 explore + 1 plan + 2 code
	if calls != 8 {
		t.Fatalf("%d model calls, want 8", calls)
	}
	want := executor.Usage{InputTokens: 800, OutputTokens: 80, CostUSD: 4, ModelCalls: 8}
	if res.Usage != want {
		t.Errorf("usage = %+v, want the sum over all loops %+v", res.Usage, want)
	}
	if res.TranscriptPath != TranscriptFile {
		t.Errorf("TranscriptPath = %q, want %q", res.TranscriptPath, TranscriptFile)
	}
	recs := readLabTranscript(t, in.JobDir)
	if recs[0].Event != EventSetup || recs[0].Setup == nil || recs[0].Setup.Workdir != "/app" {
		t.Errorf("first record = %+v, want the setup", recs[0])
	}
	agents := map[string]int{}
	usageRecs := 0
	for _, r := range recs {
		if r.Event == llm.EventMessage {
			agents[r.Agent]++
		}
		if r.Event == llm.EventUsage {
			usageRecs++
		}
		if r.Agent == SubagentCode && r.Dispatch != 3 {
			t.Errorf("code record has dispatch %d, want 3", r.Dispatch)
		}
	}
	for _, a := range []string{AgentCoordinator, SubagentExplore, SubagentPlan, SubagentCode} {
		if agents[a] == 0 {
			t.Errorf("no messages of %s in the transcript", a)
		}
	}
	if usageRecs != 8 {
		t.Errorf("%d usage records, want one per model call (8)", usageRecs)
	}
	s := labSummaryOf(t, recs)
	if s.Calls != 8 || !s.Submitted || s.Dispatches[SubagentCode] != 1 || s.Mode != config.ModeHierarchical {
		t.Errorf("summary = %+v", s)
	}
}

func TestLabBudgetErrorPropagates(t *testing.T) {
	tests := []struct {
		name   string
		mode   string
		script map[string][]labStep
		// limit lets this many scripted calls through (each costs 110 tokens).
		limit int64
	}{
		{"single", config.ModeSingle, map[string][]labStep{labCaller: {
			labCall(ToolListDir, map[string]string{"path": "/app"}),
			labSubmit("never reached"),
		}}, 110},
		{"in a subagent", config.ModeHierarchical, map[string][]labStep{
			labCaller + "/coordinator": {
				labCall(ToolDispatch, map[string]string{"agent": "code", "task": "do it"}),
				labSubmit("never reached"),
			},
			labCaller + "/code": {
				labCall(ToolListDir, map[string]string{"path": "/app"}),
				labSubmit("never reached"),
			},
		}, 220},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newLabProvider(tc.script)
			ledger := llm.NewLedger(llm.Limits{MaxTokens: tc.limit})
			in := labInput(t, newLabFakeSandbox(nil), "Do it.")
			res, err := NewAgent(labTestLab(tc.mode), labClients(p, ledger)).Run(context.Background(), in)
			if !executor.IsBudgetExhausted(err) || !errors.Is(err, llm.ErrBudgetExhausted) {
				t.Fatalf("err = %v, want one wrapping the budget sentinel", err)
			}
			n := len(p.all())
			if int64(n)*110 != tc.limit {
				t.Errorf("%d calls reached the provider, want the budget to stop them after %d", n, tc.limit/110)
			}
			if res.Usage.ModelCalls != n || res.Usage.InputTokens != int64(n)*100 {
				t.Errorf("usage = %+v, want the %d calls made", res.Usage, n)
			}
			if res.TranscriptPath == "" {
				t.Error("no transcript path on a budget stop")
			}
			if s := labSummaryOf(t, readLabTranscript(t, in.JobDir)); !strings.Contains(s.Error, "budget") {
				t.Errorf("summary error = %q, want the budget stop", s.Error)
			}
			if got := ledger.ByCaller(); len(got) == 0 {
				t.Error("ledger recorded nothing")
			}
		})
	}
}

func TestLabModelErrorIsAgentError(t *testing.T) {
	boom := errors.New("server kept failing")
	tests := []struct {
		name      string
		mode      string
		script    map[string][]labStep
		wantCalls int
	}{
		{"single", config.ModeSingle, map[string][]labStep{labCaller: {labFail(boom)}}, 1},
		{"subagent stops the coordinator", config.ModeHierarchical, map[string][]labStep{
			labCaller + "/coordinator": {
				labCall(ToolDispatch, map[string]string{"agent": "code", "task": "do it"}),
				labSubmit("must not be asked"),
			},
			labCaller + "/code": {labFail(boom)},
		}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newLabProvider(tc.script)
			in := labInput(t, newLabFakeSandbox(nil), "Do it.")
			_, err := NewAgent(labTestLab(tc.mode), labClients(p, nil)).Run(context.Background(), in)
			if !errors.Is(err, boom) || executor.IsBudgetExhausted(err) || errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want the model failure itself", err)
			}
			if n := len(p.all()); n != tc.wantCalls {
				t.Errorf("%d model calls, want %d (the run stops at the failure)", n, tc.wantCalls)
			}
		})
	}
}

func TestLabRejectsBadSetup(t *testing.T) {
	p := newLabProvider(nil)
	tests := []struct {
		name    string
		lab     func(*config.Lab)
		clients map[conditions.Role]*llm.Client
		want    string
	}{
		{"unknown mode", func(l *config.Lab) { l.ExecutorMode = "swarm" }, labClients(p, nil), "unknown executor_mode"},
		{"no code quota", func(l *config.Lab) { l.ExecutorMode = config.ModeHierarchical; l.CodeQuota = 0 }, labClients(p, nil), "code_quota"},
		{"missing subagent client", func(l *config.Lab) { l.ExecutorMode = config.ModeHierarchical },
			map[conditions.Role]*llm.Client{conditions.RoleExecutor: {Provider: p}}, "[models.explore]"},
		{"missing executor client", func(l *config.Lab) {}, map[conditions.Role]*llm.Client{}, "[models.executor]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lab := labTestLab(config.ModeSingle)
			tc.lab(&lab)
			_, err := NewAgent(lab, tc.clients).Run(context.Background(), labInput(t, newLabFakeSandbox(nil), "x"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
			if len(p.all()) != 0 {
				t.Error("a model was called despite the bad setup")
			}
		})
	}
}

func TestLabCompactionKeepsBackup(t *testing.T) {
	big := strings.Repeat("line of a long file\n", 150) // ~3000 bytes, ~750 tokens
	sb := newLabFakeSandbox(map[string]string{"/app/big.txt": big})
	var steps []labStep
	for range 4 {
		steps = append(steps, labCall(ToolReadFile, map[string]string{"path": "/app/big.txt"}))
	}
	steps = append(steps, labSubmit("read it all"))
	p := newLabProvider(map[string][]labStep{labCaller: steps})
	a := NewAgent(labTestLab(config.ModeSingle), labClients(p, nil))
	a.ContextTokens = map[conditions.Role]int{conditions.RoleExecutor: 2500}
	in := labInput(t, sb, "Read /app/big.txt.")
	if _, err := a.Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(in.JobDir, BackupFile))
	if err != nil {
		t.Fatalf("no compaction backup: %v", err)
	}
	if !strings.Contains(string(data), `"agent":"executor"`) || !strings.Contains(string(data), "line of a long file") {
		t.Errorf("backup does not hold the dropped tool results of the executor:\n%.300s", data)
	}
	if s := labSummaryOf(t, readLabTranscript(t, in.JobDir)); s.Compactions == 0 {
		t.Error("summary counts no compaction")
	}
}

func TestLabOfflineProviderSubmits(t *testing.T) {
	instruction := "Read /app/data/input.txt and write its line count to /app/answer.txt."
	for _, mode := range []string{config.ModeSingle, config.ModeHierarchical} {
		t.Run(mode, func(t *testing.T) {
			sb := newLabFakeSandbox(map[string]string{"/app/data/input.txt": "a\nb\n"})
			in := labInput(t, sb, instruction)
			in.Caller = "executor/student-1"
			res, err := NewAgent(labTestLab(mode), labClients(llm.NewOffline(11), nil)).Run(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Submitted || res.Output == "" {
				t.Errorf("offline agent did not submit: %+v", res)
			}
			if res.Usage.ModelCalls == 0 {
				t.Error("no usage recorded")
			}
			s := labSummaryOf(t, readLabTranscript(t, in.JobDir))
			if s.Refused != 0 || s.BadArgs != 0 {
				t.Errorf("offline agent used tools wrongly: %+v", s)
			}
			if mode == config.ModeHierarchical && (s.Dispatches[SubagentExplore] != 1 || s.Dispatches[SubagentCode] != 1) {
				t.Errorf("offline coordinator dispatched %v, want explore and code once", s.Dispatches)
			}
		})
	}
}

// The offline player of an agent is told the texts its prompts come from:
// the top-level agent gets the instruction, skill and plan unmodified, a
// subagent its dispatched task and no plan.
func TestLabOfflineTrial(t *testing.T) {
	instruction := "  # Goal\n\nCompute /app/out.txt.\n"
	in := labInput(t, newLabFakeSandbox(nil), instruction)
	r := &labRun{agent: &Agent{}, in: in, tools: &ContainerTools{Workdir: "/srv/work"}}
	top := r.offlineTrial(in.Task.Instruction, true)
	want := OfflineTrial{TaskID: in.Task.ID, Instruction: instruction, Workdir: "/srv/work", Seed: in.Seed,
		Skill: in.ExecutorSkill, Plan: in.Plan}
	if top != want {
		t.Errorf("top-level offline trial = %+v, want %+v", top, want)
	}
	sub := r.offlineTrial("Write /app/out.txt.", false)
	want.Instruction, want.Plan = "Write /app/out.txt.", ""
	if sub != want {
		t.Errorf("subagent offline trial = %+v, want %+v", sub, want)
	}
}
