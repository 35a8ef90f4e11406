package mediator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/lab"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// condensedRun is the condensed transcript of a code subagent that ran one
// failing command.
func condensedRun(t *testing.T) string {
	t.Helper()
	msg := func(m llm.Message) lab.TranscriptRecord {
		return lab.TranscriptRecord{Agent: lab.SubagentCode, Dispatch: 1,
			TranscriptRecord: llm.TranscriptRecord{Event: llm.EventMessage, Message: &m}}
	}
	out := lab.FormatExecResult(executor.ExecResult{ExitCode: 127, Stdout: "OUTPUT-HEAD first line\n" + strings.Repeat("more\n", 2000),
		Stderr: "bash: pytest: command not found"}, time.Minute, 1<<20)
	recs := []lab.TranscriptRecord{
		msg(llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: lab.ToolRunCommand,
			Arguments: `{"command":"pytest -q tests/CMD-MARK"}`}}}),
		msg(llm.Message{Role: llm.RoleTool, ToolCallID: "1", Name: lab.ToolRunCommand, Content: out}),
	}
	text := lab.CondenseTranscript(recs, 3000)
	if text == "" {
		t.Fatal("nothing condensed")
	}
	return text
}

func TestMediatorSeesTheTranscript(t *testing.T) {
	run := condensedRun(t)
	tests := []struct {
		name       string
		transcript string
		capChars   int
		want       []string
		notWant    []string
	}{
		{name: "commands, exit codes and output heads", transcript: run,
			want: []string{"## Transcript (condensed)", "code#1 ran: pytest -q tests/CMD-MARK", "exit code 127",
				"OUTPUT-HEAD first line", "command not found"}},
		{name: "no transcript, no section", transcript: "", notWant: []string{"## Transcript"}},
		{name: "capped by the Mediator's budget", transcript: "TOP " + strings.Repeat("z", 5000), capChars: 500,
			want: []string{"## Transcript (condensed)", "TOP", "[... cut at 500 characters]"}, notWant: []string{strings.Repeat("z", 600)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := llmtest.NewScripted(llmtest.JSONText(ReportAnswer{AbstractionLevel: LevelTrace, Content: "ok", Reasoning: "r"}))
			m := &Mediator{Client: client(fake), Caller: "mediator", TranscriptChars: tc.capChars}
			d := sampleDigest()
			d.Transcript = tc.transcript
			if _, err := m.Report(context.Background(), "protocol", d); err != nil {
				t.Fatal(err)
			}
			user := fake.Requests()[0].Messages[1].Content
			for _, w := range tc.want {
				if !strings.Contains(user, w) {
					t.Errorf("user prompt lacks %q:\n%s", w, user)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(user, w) {
					t.Errorf("user prompt holds %q", w)
				}
			}
		})
	}
}

// The offline Mediator answers from the trace alone: what a sandbox printed
// cannot change its report.
func TestMediatorOfflineIgnoresTheTranscript(t *testing.T) {
	m := &Mediator{Client: client(llm.NewOffline(42)), Caller: "mediator", MaxChars: 300, Seed: 42}
	protocol := defaultSkill(t, "mediator")
	without, err := m.Report(context.Background(), protocol, sampleDigest())
	if err != nil {
		t.Fatal(err)
	}
	d := sampleDigest()
	d.Transcript = condensedRun(t)
	with, err := m.Report(context.Background(), protocol, d)
	if err != nil {
		t.Fatal(err)
	}
	if with != without {
		t.Errorf("offline report changed with the transcript:\n%+v\n%+v", with, without)
	}
}
