package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// labFakeSandbox is an in-memory sandbox: files live in a map, the helper
// scripts of the tools are emulated, and bash commands answer from a script.
type labFakeSandbox struct {
	mu    sync.Mutex
	files map[string]string
	// pwd is what the image's working directory reports; noApp hides /app.
	pwd   string
	noApp bool
	// commands maps a bash command to its result; others exit 0 echoing it.
	commands map[string]executor.ExecResult
	execs    []executor.ExecRequest
}

func newLabFakeSandbox(files map[string]string) *labFakeSandbox {
	if files == nil {
		files = map[string]string{}
	}
	return &labFakeSandbox{files: files, pwd: "/app", commands: map[string]executor.ExecResult{}}
}

func (s *labFakeSandbox) ID() string { return "fake" }

// bashCommands returns the scripts run through run_command, in order.
func (s *labFakeSandbox) bashCommands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.execs {
		if len(r.Cmd) == 3 && r.Cmd[0] == "bash" && r.Cmd[1] == "-lc" {
			out = append(out, r.Cmd[2])
		}
	}
	return out
}

func (s *labFakeSandbox) file(p string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.files[p]
	return c, ok
}

func (s *labFakeSandbox) Exec(ctx context.Context, req executor.ExecRequest) (executor.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return executor.ExecResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.execs = append(s.execs, req)
	if req.Timeout <= 0 {
		return executor.ExecResult{}, errors.New("exec without a timeout")
	}
	switch {
	case len(req.Cmd) >= 4 && req.Cmd[3] == "harness-discover":
		return executor.ExecResult{Stdout: s.discover(req.Cmd[4:])}, nil
	case len(req.Cmd) == 5 && req.Cmd[3] == "harness-list":
		return s.list(req.Cmd[4]), nil
	case len(req.Cmd) == 3 && req.Cmd[0] == "bash" && req.Cmd[1] == "-lc":
		if r, ok := s.commands[req.Cmd[2]]; ok {
			return r, nil
		}
		return executor.ExecResult{Stdout: "ran: " + req.Cmd[2] + "\n"}, nil
	}
	return executor.ExecResult{}, fmt.Errorf("fake sandbox cannot run %q", req.Cmd)
}

func (s *labFakeSandbox) discover(dirs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pwd\t%s\n", s.pwd)
	if !s.noApp {
		b.WriteString("app\tyes\n")
	}
	for _, d := range dirs {
		var found []string
		for p := range s.files {
			if path.Dir(path.Dir(p)) == d && strings.EqualFold(path.Base(p), "SKILL.md") {
				found = append(found, p)
			}
		}
		sort.Strings(found)
		for _, p := range found {
			fmt.Fprintf(&b, "skill\t%s\n", p)
		}
	}
	return b.String()
}

func (s *labFakeSandbox) list(dir string) executor.ExecResult {
	seen := map[string]string{}
	for p, c := range s.files {
		rel, ok := strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/")
		if !ok {
			continue
		}
		parts := strings.Split(rel, "/")
		if len(parts) == 1 {
			seen[rel] = fmt.Sprintf("f\t%d\t%s", len(c), rel)
			continue
		}
		seen[parts[0]] = "d\t4096\t" + parts[0]
		if len(parts) == 2 {
			seen[rel] = fmt.Sprintf("f\t%d\t%s", len(c), rel)
		} else {
			seen[parts[0]+"/"+parts[1]] = "d\t4096\t" + parts[0] + "/" + parts[1]
		}
	}
	if len(seen) == 0 {
		return executor.ExecResult{ExitCode: 2, Stderr: "no such file or directory: " + dir}
	}
	var lines []string
	for _, l := range seen {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return executor.ExecResult{Stdout: strings.Join(lines, "\n") + "\n"}
}

func (s *labFakeSandbox) ReadFile(ctx context.Context, user, p string, max int) ([]byte, error) {
	c, ok := s.file(p)
	if !ok {
		return nil, fmt.Errorf("read %s: no such file", p)
	}
	if max > 0 && len(c) > max {
		c = c[:max]
	}
	return []byte(c), nil
}

func (s *labFakeSandbox) WriteFile(ctx context.Context, user, p string, data []byte, mode int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[p] = string(data)
	return nil
}

func (s *labFakeSandbox) CopyDirIn(ctx context.Context, hostDir, dst string) error {
	return errors.New("fake sandbox: CopyDirIn not supported")
}

func (s *labFakeSandbox) CopyOut(ctx context.Context, p string, w io.Writer) error {
	return errors.New("fake sandbox: CopyOut not supported")
}

// labStep is one scripted model answer: a response or an error.
type labStep struct {
	resp llm.Response
	err  error
}

// labUsage is what every scripted answer costs.
var labUsage = llm.Usage{InputTokens: 100, OutputTokens: 10, CostUSD: 0.5, CostKnown: true, Calls: 1}

func labCall(name string, args any) labStep {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return labCalls(llm.ToolCall{Name: name, Arguments: string(b)})
}

func labCalls(calls ...llm.ToolCall) labStep {
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_%s_%d", calls[i].Name, i)
	}
	return labStep{resp: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}, Usage: labUsage}}
}

func labSubmit(summary string) labStep {
	return labCall(ToolSubmit, map[string]string{"summary": summary})
}

func labFail(err error) labStep { return labStep{err: err} }

// labScript answers each caller (ledger path) from its own queue.
type labScript struct {
	mu     sync.Mutex
	script map[string][]labStep
	seq    int
}

func (p *labScript) Offline() bool { return false }

func (p *labScript) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.script[req.Caller]
	if len(q) == 0 {
		return llm.Response{}, fmt.Errorf("no scripted answer left for %s", req.Caller)
	}
	st := q[0]
	p.script[req.Caller] = q[1:]
	if st.err != nil {
		return llm.Response{}, st.err
	}
	// IDs must be unique across the transcript, as real servers make them.
	p.seq++
	resp := st.resp
	resp.Message.ToolCalls = slices.Clone(resp.Message.ToolCalls)
	for i := range resp.Message.ToolCalls {
		resp.Message.ToolCalls[i].ID = fmt.Sprintf("%s_%d", resp.Message.ToolCalls[i].ID, p.seq)
	}
	return resp, nil
}

// labProvider is a labScript that records every request.
type labProvider struct{ llmtest.Recorder }

func newLabProvider(script map[string][]labStep) *labProvider {
	return &labProvider{llmtest.Recorder{Inner: &labScript{script: script}}}
}

// requests returns the requests of one caller.
func (p *labProvider) requests(caller string) []llm.Request { return p.ByCaller(caller) }

func (p *labProvider) all() []llm.Request { return p.Requests() }

// labClients gives every role of the lab a client of p, sharing ledger.
func labClients(p llm.Provider, ledger *llm.Ledger) map[conditions.Role]*llm.Client {
	out := map[conditions.Role]*llm.Client{}
	for _, role := range []conditions.Role{conditions.RoleExecutor, conditions.RoleExplore, conditions.RolePlan, conditions.RoleCode} {
		out[role] = &llm.Client{Provider: p, Ledger: ledger, Role: string(role)}
	}
	return out
}

func labTestLab(mode string) config.Lab {
	return config.Lab{
		Students:         config.Students{Count: 1},
		ExecutorMode:     mode,
		MaxModelCalls:    10,
		ConcludeMargin:   2,
		SubagentMaxCalls: 5,
		ExploreQuota:     1,
		PlanQuota:        1,
		CodeQuota:        2,
		CommandTimeout:   config.Duration{Duration: time.Minute},
		OutputCapBytes:   4096,
		TaskSkillDirs:    []string{"/root/.claude/skills", "/skills"},
	}
}

func labTestTask(instruction string) *benchmarks.Task {
	return &benchmarks.Task{ID: "demo-task", Dir: "/nonexistent", Instruction: instruction}
}

const labCaller = "executor/student-1"

// labInput is an AgentInput over sb with a job directory.
func labInput(t *testing.T, sb executor.Sandbox, instruction string) executor.AgentInput {
	t.Helper()
	return executor.AgentInput{
		Task:          labTestTask(instruction),
		Sandbox:       sb,
		Plan:          "1. Read the data.\n2. Write the answer.",
		ExecutorSkill: "---\nname: executor\ndescription: how to work\n---\n\nAlways check your output.\n",
		JobDir:        t.TempDir(),
		Seed:          7,
		Caller:        labCaller,
		Iteration:     3,
	}
}

// readLabTranscript decodes agent/transcript.jsonl of a job directory.
func readLabTranscript(t *testing.T, jobDir string) []TranscriptRecord {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(jobDir, TranscriptFile))
	if err != nil {
		t.Fatalf("read transcript: %v", err)
	}
	var out []TranscriptRecord
	for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		var rec TranscriptRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("transcript line %d is not JSON: %v\n%s", i+1, err, line)
		}
		out = append(out, rec)
	}
	return out
}

func labSummaryOf(t *testing.T, recs []TranscriptRecord) Stats {
	t.Helper()
	last := recs[len(recs)-1]
	if last.Event != EventSummary || last.Stats == nil {
		t.Fatalf("last transcript record is %+v, want the summary", last)
	}
	return *last.Stats
}

func toolNamesOf(req llm.Request) []string {
	var out []string
	for _, tl := range req.Tools {
		out = append(out, tl.Name)
	}
	sort.Strings(out)
	return out
}
