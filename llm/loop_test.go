package llm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

var writeTool = llm.Tool{
	Name: "write_file",
	Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":    map[string]any{"type": "string"},
			"content": map[string]any{"type": "string"},
		},
		"required": []any{"path", "content"},
	},
}

// fakeTools are in-memory container tools.
func fakeTools(listing string, failList bool) []llm.ToolSpec {
	return []llm.ToolSpec{
		{Tool: listTool, Run: func(ctx context.Context, args json.RawMessage) (string, error) {
			if failList {
				return "", errors.New("permission denied")
			}
			return listing, nil
		}},
		{Tool: writeTool, Run: func(ctx context.Context, args json.RawMessage) (string, error) {
			return "written", nil
		}},
		{Tool: submitTool},
	}
}

func serverClient(t *testing.T, srv *llmtest.Server, ledger *llm.Ledger) *llm.Client {
	t.Helper()
	return &llm.Client{Provider: serverProvider(t, srv.URL()), Ledger: ledger, Role: "executor"}
}

// toolResult finds the result sent back for a call id in a recorded request.
func toolResult(req llmtest.Request, id string) (string, bool) {
	for _, m := range req.Chat.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return string(m.Content), true
		}
	}
	return "", false
}

func TestLoopMalformedArgumentsContinue(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(
		llmtest.ToolCall("c1", "list_dir", `{"path": "/app"`), // truncated JSON
		llmtest.ToolCall("c2", "list_dir", `{}`),              // missing required path
		llmtest.ToolCall("c3", "list_dir", `{"path":"/app"}`),
		llmtest.ToolCall("c4", "submit", `{"summary":"done"}`),
	)
	loop := &llm.Loop{Client: serverClient(t, srv, nil), Caller: "executor/student-1", Tools: fakeTools("a.txt", false),
		Terminal: "submit", MaxCalls: 10}
	res, err := loop.Run(context.Background(), "sys", "task")
	if err != nil {
		t.Fatal(err)
	}
	if res.BadArgs != 2 || !res.Submitted || res.Calls != 4 || res.Final != `{"summary":"done"}` {
		t.Fatalf("result = %+v", res)
	}
	reqs := srv.Requests()
	if got, _ := toolResult(reqs[1], "c1"); !strings.HasPrefix(got, "error: bad arguments for list_dir") {
		t.Errorf("result for malformed args = %q", got)
	}
	if got, _ := toolResult(reqs[2], "c2"); !strings.Contains(got, "missing required path") {
		t.Errorf("result for missing args = %q", got)
	}
	if got, _ := toolResult(reqs[3], "c3"); got != "a.txt" {
		t.Errorf("result for good args = %q", got)
	}
}

func TestLoopAllowlistRefusal(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(
		llmtest.ToolCall("c1", "write_file", `{"path":"/app/x","content":"y"}`),
		llmtest.ToolCall("c2", "run_command", `{"command":"rm -rf /"}`),
		llmtest.ToolCall("c3", "submit", `{"summary":"read only"}`),
	)
	loop := &llm.Loop{Client: serverClient(t, srv, nil), Caller: "explore", Tools: fakeTools("a.txt", false),
		Allowed: []string{"list_dir", "submit"}, Terminal: "submit", MaxCalls: 5}
	res, err := loop.Run(context.Background(), "sys", "explore")
	if err != nil {
		t.Fatal(err)
	}
	if res.Refused != 2 || !res.Submitted {
		t.Fatalf("result = %+v, want 2 refusals and a submit", res)
	}
	reqs := srv.Requests()
	var offered []string
	for _, tl := range reqs[0].Chat.Tools {
		offered = append(offered, tl.Function.Name)
	}
	if strings.Join(offered, ",") != "list_dir,submit" {
		t.Errorf("offered tools = %v, want only the allowlist", offered)
	}
	if got, _ := toolResult(reqs[1], "c1"); !strings.Contains(got, `tool "write_file" is not available`) {
		t.Errorf("refusal result = %q", got)
	}
}

func TestLoopConcludeAndForcedTerminal(t *testing.T) {
	srv := llmtest.NewServer(t)
	for i := range 4 {
		srv.Push(llmtest.ToolCall(fmt.Sprintf("c%d", i), "list_dir", `{"path":"/app"}`))
	}
	var transcript bytes.Buffer
	loop := &llm.Loop{Client: serverClient(t, srv, nil), Caller: "executor", Tools: fakeTools("a.txt", false),
		Terminal: "submit", MaxCalls: 4, ConcludeMargin: 2, Transcript: &transcript}
	res, err := loop.Run(context.Background(), "sys", "task")
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 4 || res.Submitted {
		t.Fatalf("result = %+v, want 4 calls and no submit (the server never submitted)", res)
	}
	reqs := srv.Requests()
	for i, r := range reqs {
		last := r.Chat.Messages[len(r.Chat.Messages)-1]
		concludeNow := last.Role == "user" && strings.Contains(string(last.Content), "Conclude now")
		if wantConclude := i == 2; concludeNow != wantConclude {
			t.Errorf("request %d: conclude message present = %v, want %v", i+1, concludeNow, wantConclude)
		}
		forced := len(r.Chat.ToolChoice) > 0
		if wantForced := i == 3; forced != wantForced {
			t.Errorf("request %d: tool_choice %s, forced want %v", i+1, r.Chat.ToolChoice, wantForced)
		}
	}
	if !strings.Contains(string(reqs[3].Chat.ToolChoice), `"name":"submit"`) {
		t.Errorf("last tool_choice = %s, want submit", reqs[3].Chat.ToolChoice)
	}
	events := readEvents(t, &transcript)
	for _, want := range []string{llm.EventConclude, llm.EventForced, llm.EventUsage, llm.EventMessage, llm.EventStop} {
		if events[want] == 0 {
			t.Errorf("transcript has no %q event: %v", want, events)
		}
	}
}

func readEvents(t *testing.T, r *bytes.Buffer) map[string]int {
	t.Helper()
	events := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec llm.TranscriptRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("transcript line %q: %v", sc.Text(), err)
		}
		events[rec.Event]++
	}
	return events
}

func TestLoopToolErrorAndNudge(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(
		llmtest.ToolCall("c1", "list_dir", `{"path":"/app"}`),
		llmtest.Text("I think I am done."),
		llmtest.Text("Really done."),
	)
	loop := &llm.Loop{Client: serverClient(t, srv, nil), Caller: "executor", Tools: fakeTools("", true),
		Terminal: "submit", MaxCalls: 10}
	res, err := loop.Run(context.Background(), "sys", "task")
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls != 3 || res.Submitted || res.Final != "Really done." {
		t.Fatalf("result = %+v, want 3 calls ending on the text after one nudge", res)
	}
	reqs := srv.Requests()
	if got, _ := toolResult(reqs[1], "c1"); got != "error: permission denied" {
		t.Errorf("tool error result = %q", got)
	}
	last := reqs[2].Chat.Messages[len(reqs[2].Chat.Messages)-1]
	if last.Role != "user" || !strings.Contains(string(last.Content), "call submit to finish") {
		t.Errorf("nudge = %+v", last)
	}
}

func TestLoopStopsOnBudget(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(llmtest.ToolCall("c1", "list_dir", `{"path":"/app"}`).WithUsage(90, 20), llmtest.Text("never sent"))
	ledger := llm.NewLedger(llm.Limits{MaxTokens: 100})
	loop := &llm.Loop{Client: serverClient(t, srv, ledger), Caller: "executor", Tools: fakeTools("a", false),
		Terminal: "submit", MaxCalls: 10}
	res, err := loop.Run(context.Background(), "sys", "task")
	if !errors.Is(err, llm.ErrBudgetExhausted) {
		t.Fatalf("err = %v, want ErrBudgetExhausted", err)
	}
	if res.Calls != 1 || srv.Count() != 1 || res.Usage.Tokens() != 110 {
		t.Errorf("result = %+v, server saw %d", res, srv.Count())
	}
}

func TestLoopCompactsWithoutOrphans(t *testing.T) {
	srv := llmtest.NewServer(t)
	var calls atomic.Int32
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		n := calls.Add(1)
		if n >= 12 {
			return llmtest.ToolCall(fmt.Sprintf("s%d", n), "submit", `{"summary":"ok"}`)
		}
		// Two calls per turn, so pairs of results must stay together.
		return llmtest.ToolCalls(
			llm.ToolCall{ID: fmt.Sprintf("a%d", n), Name: "list_dir", Arguments: `{"path":"/app"}`},
			llm.ToolCall{ID: fmt.Sprintf("b%d", n), Name: "list_dir", Arguments: `{"path":"/tmp"}`},
		)
	})
	var backup, transcript bytes.Buffer
	loop := &llm.Loop{Client: serverClient(t, srv, nil), Caller: "executor",
		Tools:    fakeTools(strings.Repeat("file.txt ", 100), false),
		Terminal: "submit", MaxCalls: 20, ContextTokens: 1500, Backup: &backup, Transcript: &transcript}
	res, err := loop.Run(context.Background(), "system prompt", "the task")
	if err != nil {
		t.Fatal(err)
	}
	if res.Compactions == 0 || !res.Submitted {
		t.Fatalf("result: %d compactions, submitted %v; want compaction and a submit", res.Compactions, res.Submitted)
	}
	for i, r := range srv.Requests() {
		msgs := r.Chat.Messages
		if msgs[0].Role != "system" || msgs[1].Content != "the task" {
			t.Errorf("request %d lost its head", i+1)
		}
		checkToolPairs(t, i+1, msgs)
		if est := len(r.Raw); i > 2 && est > 1500*4*2 {
			t.Errorf("request %d is %d bytes; compaction did not bound it", i+1, est)
		}
	}
	// Every dropped message is in the backup, as JSON lines.
	dropped := 0
	sc := bufio.NewScanner(&backup)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m llm.Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("backup line: %v", err)
		}
		dropped++
	}
	if dropped == 0 {
		t.Error("backup is empty")
	}
	if !strings.Contains(string(srv.Requests()[len(srv.Requests())-1].Chat.Messages[2].Content),
		fmt.Sprintf("[%d earlier messages were dropped", dropped)) {
		t.Errorf("note after the head does not count the %d dropped messages: %+v", dropped, srv.Requests()[len(srv.Requests())-1].Chat.Messages[2])
	}
	if readEvents(t, &transcript)[llm.EventCompaction] != res.Compactions {
		t.Error("transcript does not record every compaction")
	}
}

// Compaction leaves room in the window for the answer (max_tokens) and the
// tool schemas, which every request carries besides the transcript: no
// request, measured as the loop measures (four bytes a token), overflows.
// It still drops whole turns only and keeps the newest.
func TestLoopCompactionLeavesRoomForAnswerAndTools(t *testing.T) {
	const window, answer = 6000, 2000
	srv := llmtest.NewServer(t)
	var calls atomic.Int32
	srv.Handle(func(r llmtest.Request) llmtest.Reply {
		n := calls.Add(1)
		if n >= 16 {
			return llmtest.ToolCall(fmt.Sprintf("s%d", n), "submit", `{"summary":"ok"}`)
		}
		return llmtest.ToolCalls(
			llm.ToolCall{ID: fmt.Sprintf("a%d", n), Name: "list_dir", Arguments: `{"path":"/app"}`},
			llm.ToolCall{ID: fmt.Sprintf("b%d", n), Name: "list_dir", Arguments: `{"path":"/tmp"}`},
		)
	})
	tools := fakeTools(strings.Repeat("file.txt ", 100), false)
	tools[0].Tool.Description = strings.Repeat("Lists a directory, two levels deep. ", 60) // a large schema
	loop := &llm.Loop{Client: serverClient(t, srv, nil), Caller: "executor", Tools: tools,
		Terminal: "submit", MaxCalls: 20, ContextTokens: window, MaxOutputTokens: answer}
	res, err := loop.Run(context.Background(), "system prompt", "the task")
	if err != nil {
		t.Fatal(err)
	}
	if res.Compactions == 0 || !res.Submitted {
		t.Fatalf("%d compactions, submitted %v; want compaction and a submit", res.Compactions, res.Submitted)
	}
	for i, r := range srv.Requests() {
		if used := len(r.Raw)/4 + answer; used > window {
			t.Errorf("request %d: %d bytes of request and %d tokens of answer need %d tokens, over the window of %d",
				i+1, len(r.Raw), answer, used, window)
		}
		msgs := r.Chat.Messages
		checkToolPairs(t, i+1, msgs)
		if n := i; n > 0 {
			// The newest turn (the previous call's results) is always sent.
			if last := msgs[len(msgs)-1]; last.ToolCallID != fmt.Sprintf("b%d", n) {
				t.Errorf("request %d ends with %+v, not the newest result b%d", i+1, last, n)
			}
		}
	}
}

func TestLoopRejectsBadSetup(t *testing.T) {
	client := &llm.Client{Provider: llm.NewOffline(1)}
	tests := []struct {
		name string
		loop llm.Loop
		want string
	}{
		{"no client", llm.Loop{MaxCalls: 1}, "no model client"},
		{"no calls", llm.Loop{Client: client}, "MaxCalls is 0"},
		{"unknown allowlist entry", llm.Loop{Client: client, MaxCalls: 1, Tools: fakeTools("", false), Allowed: []string{"dispatch"}}, `allowlist names "dispatch"`},
		{"terminal not allowed", llm.Loop{Client: client, MaxCalls: 1, Tools: fakeTools("", false), Allowed: []string{"list_dir"}, Terminal: "submit"}, `terminal tool "submit"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.loop.Run(context.Background(), "s", "u"); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// checkToolPairs fails t when request n separates a tool call from its
// result: a result without its call, or a call without its result.
func checkToolPairs(t *testing.T, n int, msgs []llmtest.WireMessage) {
	t.Helper()
	open := map[string]bool{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			open[tc.ID] = true
		}
		if m.Role == "tool" {
			if !open[m.ToolCallID] {
				t.Errorf("request %d: orphaned tool result %s", n, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
	}
	if len(open) > 0 {
		t.Errorf("request %d: tool calls without results: %v", n, open)
	}
}
