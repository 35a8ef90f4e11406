package lab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/lab"
	"github.com/mediated-coevo/harness/llm"
)

const testSkill = `---
name: executor
description: How the executor works on tasks.
---

# Executor

- Read the task carefully.
`

// offlineClient is an offline model client played by the lab's offline
// agent for trial.
func offlineClient(seed int64, trial lab.OfflineTrial) *llm.Client {
	return (&llm.Client{Provider: llm.NewOffline(seed)}).WithPlayer(lab.OfflinePlayer(trial))
}

// sandbox is an in-memory /app for the offline agent.
type sandbox struct {
	mu      sync.Mutex
	files   map[string]string
	written []string
}

func (s *sandbox) tools() []llm.ToolSpec {
	arg := func(args json.RawMessage) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(args, &m)
		return m
	}
	return []llm.ToolSpec{
		{Tool: llm.Tool{Name: "list_dir", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}},
			Run: func(ctx context.Context, args json.RawMessage) (string, error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				var names []string
				for p := range s.files {
					if path.Dir(p) == arg(args)["path"] {
						names = append(names, path.Base(p))
					}
				}
				sort.Strings(names)
				return strings.Join(names, "\n"), nil
			}},
		{Tool: llm.Tool{Name: "read_file", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}},
			Run: func(ctx context.Context, args json.RawMessage) (string, error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				c, ok := s.files[arg(args)["path"].(string)]
				if !ok {
					return "", fmt.Errorf("no such file")
				}
				return c, nil
			}},
		{Tool: llm.Tool{Name: "write_file", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}}, "required": []string{"path", "content"}}},
			Run: func(ctx context.Context, args json.RawMessage) (string, error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				a := arg(args)
				p := a["path"].(string)
				s.files[p] = a["content"].(string)
				s.written = append(s.written, p)
				return "ok", nil
			}},
		{Tool: llm.Tool{Name: "submit", Parameters: map[string]any{"type": "object", "properties": map[string]any{"summary": map[string]any{"type": "string"}}, "required": []string{"summary"}}}},
	}
}

const instruction = "Read /app/input.txt and /app/config.json, then write the total to /app/output.txt and a log to /app/logs/run.log."

func runOfflineAgent(t *testing.T, seed int64, skill string, tools []llm.ToolSpec, allowed []string, maxCalls int) llm.LoopResult {
	t.Helper()
	return runOfflineTrial(t, seed, lab.OfflineTrial{Instruction: instruction, TaskID: "sum-task", Seed: seed, Skill: skill}, tools, allowed, maxCalls)
}

func runOfflineTrial(t *testing.T, seed int64, trial lab.OfflineTrial, tools []llm.ToolSpec, allowed []string, maxCalls int) llm.LoopResult {
	t.Helper()
	loop := &llm.Loop{
		Client:   offlineClient(seed, trial),
		Caller:   "executor/student-1",
		Tools:    tools,
		Allowed:  allowed,
		Terminal: "submit",
		MaxCalls: maxCalls, ConcludeMargin: 2,
		Seed: seed,
	}
	res, err := loop.Run(context.Background(), "You are the executor.", instruction)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func newSandbox() *sandbox {
	return &sandbox{files: map[string]string{"/app/input.txt": "1 2 3", "/app/config.json": "{}", "/app/README": "hi"}}
}

func TestOfflineAgentWithDiligenceAdviceWritesOutputs(t *testing.T) {
	sb := newSandbox()
	res := runOfflineAgent(t, 1, testSkill+executor.DiligenceAdvice+"\n", sb.tools(), nil, 10)
	if !res.Submitted || res.Calls > 5 {
		t.Fatalf("result: submitted %v after %d calls, want a submit within 5", res.Submitted, res.Calls)
	}
	if want := []string{"/app/output.txt", "/app/logs/run.log"}; !reflect.DeepEqual(sb.written, want) {
		t.Errorf("written = %v, want %v (and never the inputs)", sb.written, want)
	}
	if sb.files["/app/input.txt"] != "1 2 3" {
		t.Error("an input file was overwritten")
	}
	// The inputs were read before writing.
	var reads []string
	for _, m := range res.Messages {
		for _, tc := range m.ToolCalls {
			if tc.Name == "read_file" {
				reads = append(reads, tc.Arguments)
			}
		}
	}
	if len(reads) != 2 {
		t.Errorf("reads = %v, want the two existing inputs", reads)
	}
}

func TestOfflineAgentConcludingStillWritesOutputs(t *testing.T) {
	sb := newSandbox()
	// Cap 3, margin 2: list, then (told to conclude) write, then submit.
	res := runOfflineAgent(t, 1, testSkill+executor.DiligenceAdvice, sb.tools(), nil, 3)
	if !res.Submitted || res.Calls != 3 || len(sb.written) != 2 {
		t.Fatalf("result = %+v, written %v; want outputs written before the submit", res, sb.written)
	}
}

// Without advice the agent writes outputs at its model's offline
// diligence: 0.35 by default, or the profile's rate.
func TestOfflineAgentDiligenceRateWithoutAdvice(t *testing.T) {
	tests := []struct {
		name      string
		diligence *float64
		lo, hi    float64
	}{
		{"default", nil, 0.25, 0.45},
		{"never", new(0.0), 0, 0},
		{"mostly", new(0.9), 0.82, 0.97},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const n = 300
			wrote := 0
			for seed := range int64(n) {
				sb := newSandbox()
				trial := lab.OfflineTrial{Instruction: instruction, TaskID: "sum-task", Seed: seed, Skill: testSkill, Diligence: tc.diligence}
				res := runOfflineTrial(t, seed, trial, sb.tools(), nil, 10)
				if !res.Submitted {
					t.Fatalf("seed %d: no submit", seed)
				}
				if len(sb.written) > 0 {
					wrote++
				}
			}
			if f := float64(wrote) / n; f < tc.lo || f > tc.hi {
				t.Errorf("wrote outputs in %.2f of runs without the advice, want [%.2f, %.2f]", f, tc.lo, tc.hi)
			}
		})
	}
}

func TestOfflineAgentIsDeterministic(t *testing.T) {
	a := runOfflineAgent(t, 9, testSkill, newSandbox().tools(), nil, 10)
	b := runOfflineAgent(t, 9, testSkill, newSandbox().tools(), nil, 10)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two runs with the same seed differ:\n%+v\n%+v", a, b)
	}
}

func TestOfflineAgentReadOnlyExploresThenSubmits(t *testing.T) {
	sb := newSandbox()
	res := runOfflineAgent(t, 1, testSkill+executor.DiligenceAdvice, sb.tools(), []string{"list_dir", "read_file", "submit"}, 6)
	if !res.Submitted || res.Calls != 2 || res.Refused != 0 {
		t.Fatalf("result = %+v, want list then submit", res)
	}
	if !strings.Contains(res.Final, "input.txt") {
		t.Errorf("explore summary %q does not report the listing", res.Final)
	}
}

func TestOfflineAgentHonoursForcedTool(t *testing.T) {
	sb := newSandbox()
	// With a cap of 1 the only call forces submit.
	res := runOfflineAgent(t, 1, testSkill, sb.tools(), nil, 1)
	if !res.Submitted || res.Calls != 1 {
		t.Fatalf("result = %+v, want the forced submit", res)
	}
	resp, err := offlineClient(1, lab.OfflineTrial{}).Complete(context.Background(), llm.Request{
		Kind: llm.KindAgentStep, ToolChoice: "write_file",
		Tools:    []llm.Tool{{Name: "write_file"}, {Name: "submit"}, {Name: "list_dir"}},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "go"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tc := resp.Message.ToolCalls; len(tc) != 1 || tc[0].Name != "write_file" {
		t.Errorf("tool calls = %+v, want exactly write_file", tc)
	}
}

func TestOfflineHierarchicalCoordinator(t *testing.T) {
	sb := newSandbox()
	var dispatched []string
	dispatch := llm.ToolSpec{
		Tool: llm.Tool{Name: "dispatch", Parameters: map[string]any{"type": "object",
			"properties": map[string]any{"agent": map[string]any{"type": "string"}, "task": map[string]any{"type": "string"}},
			"required":   []string{"agent", "task"}}},
		Run: func(ctx context.Context, args json.RawMessage) (string, error) {
			var a struct{ Agent, Task string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			dispatched = append(dispatched, a.Agent)
			allowed := []string{"list_dir", "read_file", "submit"}
			if a.Agent == "code" {
				allowed = nil
			}
			sub := runOfflineAgent(t, 5, testSkill+executor.DiligenceAdvice, sb.tools(), allowed, 8)
			return sub.Final, nil
		},
	}
	coord := &llm.Loop{
		Client: offlineClient(5, lab.OfflineTrial{Instruction: instruction, TaskID: "sum-task"}),
		Caller: "executor/student-1", Tools: []llm.ToolSpec{dispatch, {Tool: llm.Tool{Name: "submit"}}},
		Terminal: "submit", MaxCalls: 6,
	}
	res, err := coord.Run(context.Background(), "You coordinate.", instruction)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Submitted || res.Calls != 3 || !reflect.DeepEqual(dispatched, []string{"explore", "code"}) {
		t.Fatalf("coordinator: %+v, dispatched %v; want explore, code, submit", res, dispatched)
	}
	if len(sb.written) != 2 {
		t.Errorf("code subagent wrote %v", sb.written)
	}
}

func TestOfflineAgentFollowsAnOutputsFirstPlan(t *testing.T) {
	// Across seeds the plain agent writes outputs only about a third of the
	// time; with the outputs-first step in its plan it always does.
	for seed := int64(1); seed <= 12; seed++ {
		sb := newSandbox()
		loop := &llm.Loop{
			Client: offlineClient(seed, lab.OfflineTrial{Instruction: instruction, TaskID: "sum-task", Seed: seed,
				Skill: testSkill, Plan: "Plan:\n" + executor.OutputsFirstStep + "\n1. Do it."}),
			Caller: "executor/student-1", Tools: sb.tools(),
			Terminal: "submit", MaxCalls: 10, ConcludeMargin: 2, Seed: seed,
		}
		if _, err := loop.Run(context.Background(), "You are the executor.", instruction); err != nil {
			t.Fatal(err)
		}
		if len(sb.written) == 0 {
			t.Errorf("seed %d: the agent ignored the outputs-first step of its plan", seed)
		}
	}
}
