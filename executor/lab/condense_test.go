package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
)

// transcriptOf builds records as the lab writes them.
type transcriptOf struct {
	recs []TranscriptRecord
	n    int
}

func (b *transcriptOf) call(agent string, dispatch int, tool string, args any, result string) {
	b.n++
	id := fmt.Sprintf("c%d", b.n)
	raw, _ := json.Marshal(args)
	b.recs = append(b.recs,
		TranscriptRecord{Agent: agent, Dispatch: dispatch, TranscriptRecord: llm.TranscriptRecord{Event: llm.EventMessage,
			Message: &llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: tool, Arguments: string(raw)}}}}},
		TranscriptRecord{Agent: agent, Dispatch: dispatch, TranscriptRecord: llm.TranscriptRecord{Event: llm.EventMessage,
			Message: &llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: tool, Content: result}}})
}

func (b *transcriptOf) command(agent string, cmd string, res executor.ExecResult) {
	b.call(agent, 0, ToolRunCommand, map[string]string{"command": cmd}, FormatExecResult(res, time.Minute, 4096))
}

func longTranscript() []TranscriptRecord {
	b := &transcriptOf{}
	b.recs = append(b.recs, TranscriptRecord{Agent: AgentSingle, TranscriptRecord: llm.TranscriptRecord{Event: EventSetup},
		Setup: &Setup{Mode: config.ModeSingle, Workdir: "/app"}})
	b.call(AgentSingle, 0, ToolListDir, map[string]string{"path": "."}, "input.csv\n")
	b.command(AgentSingle, "cat input.csv", executor.ExecResult{Stdout: strings.Repeat("EARLY-OUTPUT row\n", 300)})
	b.command(AgentSingle, "python3 solve.py", executor.ExecResult{ExitCode: 2,
		Stderr: "FIRST-ERROR-HEAD Traceback\n" + strings.Repeat("  frame\n", 20) + "FIRST-ERROR-TAIL KeyError: 'id'\n"})
	for i := range 20 {
		b.command(AgentSingle, fmt.Sprintf("middle-step-%d", i), executor.ExecResult{Stdout: strings.Repeat(fmt.Sprintf("MIDDLE-%d ", i), 200)})
	}
	b.command(AgentSingle, "python3 solve.py --retry", executor.ExecResult{ExitCode: 1, Stderr: "LATER-ERROR"})
	b.call(AgentSingle, 0, ToolWriteFile, map[string]string{"path": "/app/out.csv", "content": "LAST-WRITE id,name\n"}, "wrote 19 bytes to /app/out.csv")
	b.command(AgentSingle, "head -3 /app/out.csv", executor.ExecResult{Stdout: "LAST-HEAD-OUTPUT id,name\n"})
	b.command(AgentSingle, "ls -l /app", executor.ExecResult{Stdout: "LAST-LS out.csv\n"})
	b.call(AgentSingle, 0, ToolSubmit, map[string]string{"summary": "SUBMIT-MARK wrote out.csv"}, "submitted")
	b.recs = append(b.recs, TranscriptRecord{Agent: AgentSingle, TranscriptRecord: llm.TranscriptRecord{Event: EventSummary},
		Stats: &Stats{Mode: config.ModeSingle, Calls: 27, Submitted: true}})
	return b.recs
}

func TestCondenseTranscriptKeepsFirstErrorAndLastSteps(t *testing.T) {
	recs := longTranscript()
	tests := []struct {
		budget  int
		want    []string
		notWant []string
	}{
		{budget: 200000, want: []string{"EARLY-OUTPUT", "MIDDLE-19", "FIRST-ERROR-HEAD", "FIRST-ERROR-TAIL", "SUBMIT-MARK"},
			notWant: []string{"omitted"}},
		{budget: 6000, want: []string{"python3 solve.py", "exit code 2", "FIRST-ERROR-HEAD", "FIRST-ERROR-TAIL",
			"LAST-WRITE", "LAST-HEAD-OUTPUT", "LAST-LS", "The first error is at step 3.", "27 model calls, submitted", "ran: middle-step-9 -> exit 0"}},
		{budget: 2500, want: []string{"exit code 2", "FIRST-ERROR-HEAD", "FIRST-ERROR-TAIL", "LAST-HEAD-OUTPUT", "LAST-LS", "LAST-WRITE"},
			notWant: []string{"MIDDLE-3 MIDDLE-3"}},
		{budget: 1200, want: []string{"FIRST-ERROR-HEAD", "LAST-LS"}},
		{budget: 300},
		{budget: 10},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.budget), func(t *testing.T) {
			got := CondenseTranscript(recs, tc.budget)
			if n := utf8.RuneCountInString(got); n > tc.budget || n == 0 {
				t.Fatalf("%d characters for a budget of %d", n, tc.budget)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("holds %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestCondenseTranscriptSteps(t *testing.T) {
	tests := []struct {
		name    string
		build   func(b *transcriptOf)
		want    []string
		notWant []string
	}{
		{name: "subagents are labelled by dispatch", build: func(b *transcriptOf) {
			b.call(AgentCoordinator, 0, ToolDispatch, map[string]string{"agent": "code", "task": "DISPATCH-TASK"}, "CODE-REPORT")
			result := b.recs[len(b.recs)-1]
			b.recs = append(b.recs[:len(b.recs)-1], TranscriptRecord{Agent: SubagentCode, Dispatch: 2,
				TranscriptRecord: llm.TranscriptRecord{Event: EventDispatch, Detail: SubagentCode}, Task: "DISPATCH-TASK"})
			defer func() { b.recs = append(b.recs, result) }()
			b.call(SubagentCode, 2, ToolRunCommand, map[string]string{"command": "make test"},
				FormatExecResult(executor.ExecResult{ExitCode: 3, Stdout: "CODE-OUT"}, time.Minute, 100))
			b.recs = append(b.recs, TranscriptRecord{Agent: SubagentCode, Dispatch: 2,
				TranscriptRecord: llm.TranscriptRecord{Event: EventDispatchResult, Detail: "CODE-REPORT"}})
		}, want: []string{"coordinator dispatched code#2: DISPATCH-TASK", "code#2 ran: make test", "exit code 3", "CODE-OUT",
			"code#2 reported: CODE-REPORT"}},
		{name: "skill bodies are not shown", build: func(b *transcriptOf) {
			b.call(AgentSingle, 0, ToolReadSkill, map[string]string{"name": "csv"}, "SKILL-BODY")
		}, want: []string{"read_skill csv", "skill bodies are not shown"}, notWant: []string{"SKILL-BODY"}},
		{name: "a refused call is the first error", build: func(b *transcriptOf) {
			b.call(AgentSingle, 0, ToolListDir, map[string]string{"path": "."}, "a\n")
			b.call(AgentSingle, 0, "dispatch", map[string]string{"agent": "code"}, "error: tool \"dispatch\" is not available")
		}, want: []string{"first error is at step 2", "error: tool"}},
		{name: "a timeout fails the step", build: func(b *transcriptOf) {
			b.call(AgentSingle, 0, ToolRunCommand, map[string]string{"command": "sleep 99"},
				FormatExecResult(executor.ExecResult{ExitCode: -1, TimedOut: true}, time.Second, 100))
		}, want: []string{"first error is at step 1", "[timed out after 1s"}},
		{name: "a call without result", build: func(b *transcriptOf) {
			b.call(AgentSingle, 0, ToolRunCommand, map[string]string{"command": "x"}, "")
			b.recs = b.recs[:len(b.recs)-1]
			b.recs = append(b.recs, TranscriptRecord{Agent: AgentSingle, TranscriptRecord: llm.TranscriptRecord{Event: llm.EventStop, Detail: "budget exhausted"}})
		}, want: []string{"no result", "stopped: budget exhausted", "no summary record"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &transcriptOf{}
			tc.build(b)
			got := CondenseTranscript(b.recs, 6000)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("holds %q:\n%s", w, got)
				}
			}
		})
	}
	if CondenseTranscript(longTranscript(), 0) != "" || CondenseTranscript(nil, 100) != "" {
		t.Error("no budget or no records should give no text")
	}
}

// The condenser reads what the lab agent really writes.
func TestCondenseTranscriptOfALabRun(t *testing.T) {
	sb := newLabFakeSandbox(nil)
	sb.commands["make"] = executor.ExecResult{ExitCode: 2, Stdout: "MAKE-HEAD building\n", Stderr: "make: *** no rule to make target"}
	script := hierarchicalScript()
	script[labCaller+"/code"] = []labStep{
		labCall(ToolRunCommand, map[string]any{"command": "make"}),
		labSubmit("coded"),
	}
	in := labInput(t, sb, "Do the task.")
	if _, err := NewAgent(labTestLab(config.ModeHierarchical), labClients(newLabProvider(script), nil)).Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadTranscript(filepath.Join(in.JobDir, TranscriptFile))
	if err != nil {
		t.Fatal(err)
	}
	got := CondenseTranscript(recs, 6000)
	for _, w := range []string{"mode hierarchical", "code#3 ran: make", "exit code 2", "MAKE-HEAD building", "no rule to make target",
		"dispatched code#3: Write /app/out.txt.", "code#3 reported: coded", "coordinator submitted: all done", "The first error is at step"} {
		if !strings.Contains(got, w) {
			t.Errorf("lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "Do the task.") {
		t.Errorf("the condensed transcript shows the task instruction:\n%s", got)
	}
}

func TestReadTranscriptSkipsATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "transcript.jsonl")
	text := `{"agent":"executor","event":"setup","call":0,"setup":{"mode":"single","workdir":"/app"}}` + "\n" +
		`{"agent":"executor","event":"stop","call":1,"detail":"call cap reached"}` + "\n" + `{"agent":"exec`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadTranscript(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Setup == nil || recs[1].Detail != "call cap reached" {
		t.Errorf("records = %+v, want the two whole lines", recs)
	}
	if _, err := ReadTranscript(filepath.Join(t.TempDir(), "none.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want not exist", err)
	}
}
