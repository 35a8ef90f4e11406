package cli

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// When the Planner's model fails for good, the trial's cause is recorded in
// its trace and row, printed, and shown by inspect.
func TestAPlannerModelFailureIsRecordedWithItsCause(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Handle(func(q llmtest.Request) llmtest.Reply {
		if q.Chat.Model == "test/planner-model" {
			return llmtest.Status(503, "planner model overloaded")
		}
		return llmtest.Text("done")
	})
	cfgDir := endpointConfig(t, srv, 1, "", 0)
	out := t.TempDir()
	r := runCLI(t, fakeEngine(), "run", "--tasks", "csv-parser", "--agent", "lab", "--iterations", "1",
		"--condition", "no_feedback", "--skill-updates", "none", "--config-dir", cfgDir, "--out", out)
	if r.code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, ExitFailed, r.out, r.errOut)
	}
	dir := onlyRun(t, out)
	const want = "model call for planner/i0001-csv-parser"
	rows, err := rundir.ReadMetrics(dir)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if rows[0].Cause == nil {
		t.Fatal("the failed trial's cause column is NULL")
	}
	cause := *rows[0].Cause
	if rows[0].Status != "agent_error" || !strings.HasPrefix(cause, "model: planner: ") || !strings.Contains(cause, want) || !strings.Contains(cause, "planner model overloaded") {
		t.Errorf("row: status %s, cause %q; want agent_error caused by the planner's model", rows[0].Status, cause)
	}
	var trace struct {
		Status string `json:"status"`
		Cause  string `json:"cause"`
	}
	readJSON(t, filepath.Join(dir, filepath.FromSlash(rundir.TracePath("csv-parser", 1))), &trace)
	if trace.Status != "agent_error" || trace.Cause != cause {
		t.Errorf("trace: %+v; want the row's status and cause", trace)
	}
	if !strings.Contains(r.errOut, want) {
		t.Errorf("stderr does not give the cause:\n%s", r.errOut)
	}
	ins := runCLI(t, nil, "inspect", dir)
	if ins.code != 0 || !strings.Contains(ins.out, "Failed trials") || !strings.Contains(ins.out, want) {
		t.Errorf("inspect: exit %d\n%s%s", ins.code, ins.out, ins.errOut)
	}
	if v := inspectRun(t, dir); len(v.Failures) != 1 || v.Failures[0].Cause != cause {
		t.Errorf("inspect --json failures: %+v", v.Failures)
	}
}

// An Executor that spends calls on malformed tool arguments has them
// counted in its row.
func TestMalformedToolCallsAreCountedInTheRow(t *testing.T) {
	srv := llmtest.NewServer(t)
	var executorCalls atomic.Int32
	srv.Handle(func(q llmtest.Request) llmtest.Reply {
		if q.Chat.Model == "test/executor-model" && executorCalls.Add(1) <= 2 {
			return llmtest.ToolCall("c1", "run_command", `{"command": unquoted`)
		}
		return llmtest.Text("done")
	})
	cfgDir := endpointConfig(t, srv, 1, "", 0)
	out := t.TempDir()
	r := runCLI(t, fakeEngine(), "run", "--tasks", "csv-parser", "--agent", "lab", "--iterations", "1",
		"--condition", "no_feedback", "--skill-updates", "none", "--config-dir", cfgDir, "--out", out)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	dir := onlyRun(t, out)
	rows, err := rundir.ReadMetrics(dir)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if rows[0].MalformedToolCalls != 2 {
		t.Errorf("malformed_tool_calls = %d, want 2", rows[0].MalformedToolCalls)
	}
	if v := inspectRun(t, dir); len(v.Failures) != 1 || v.Failures[0].MalformedToolCalls != 2 {
		t.Errorf("inspect failures: %+v; want the trial with its 2 malformed calls", v.Failures)
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rundir.TracePath("csv-parser", 1)))); err != nil {
		t.Error(err)
	}
}
