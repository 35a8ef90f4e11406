package harness

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// withCallLog makes every client of tr record to the run's call log, as
// runRow does.
func withCallLog(t *testing.T, tr *testRun) {
	t.Helper()
	calls, err := OpenCallLog(tr.run.Dir.Path, tr.run.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { calls.Close() })
	for _, c := range tr.run.Clients.byRole {
		c.Recorder = calls
	}
	tr.run.Calls = calls
}

func readCallLog(t *testing.T, dir string) []rundir.CallRecord {
	t.Helper()
	var out []rundir.CallRecord
	if err := rundir.ReadCalls(filepath.Join(dir, rundir.CallsFile), func(c rundir.CallRecord) error {
		out = append(out, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCallLogKeepsEveryCallOfAnOfflineRun(t *testing.T) {
	tests := []struct {
		cond conditions.Condition
		pol  conditions.Policy
	}{
		{conditions.NoFeedback, conditions.PolicyNone},
		{conditions.StaticMediator, conditions.PolicyAll},
		{conditions.LearnedMediator, conditions.PolicyAll},
	}
	for _, tt := range tests {
		t.Run(string(tt.cond), func(t *testing.T) {
			tr := newTestRun(t, tt.cond, tt.pol, []string{"a", "b"}, 3, nil)
			withCallLog(t, tr)
			tr.execute(t)
			recs := readCallLog(t, tr.run.Dir.Path)
			if len(recs) != tr.rec.Count() {
				t.Fatalf("%d call records, %d calls reached the provider", len(recs), tr.rec.Count())
			}
			perCaller := map[string]int64{}
			for _, c := range recs {
				if c.Error != "" {
					t.Errorf("offline call %s failed: %s", c.Caller, c.Error)
				}
				perCaller[c.Caller]++
				if task, it := callScope(c.Caller); c.Task != task || c.Iteration != it {
					t.Errorf("%s: task %q iteration %d, want %q %d", c.Caller, c.Task, c.Iteration, task, it)
				}
				if c.Role == "" || c.Model == "" || !c.Offline || len(c.Request.Messages) == 0 || c.Response == nil {
					t.Errorf("record of %s is missing fields: %+v", c.Caller, c)
				}
				// The offline player is named as the model, never the
				// configured model it stands in for.
				if c.Model != config.OfflinePrefix+c.Role {
					t.Errorf("record of %s names model %q, want %q", c.Caller, c.Model, config.OfflinePrefix+c.Role)
				}
			}
			ledger := tr.run.Ledger.ByCaller()
			for caller, u := range ledger {
				if perCaller[caller] != u.Calls {
					t.Errorf("%s: %d records, the ledger charged %d calls", caller, perCaller[caller], u.Calls)
				}
			}
			for caller := range perCaller {
				if _, ok := ledger[caller]; !ok {
					t.Errorf("%s has records but no ledger entry", caller)
				}
			}
			rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
			if err != nil || len(rows) == 0 {
				t.Fatalf("%d metric rows: %v", len(rows), err)
			}
			planner := "offline/planner"
			if r := rows[0]; r.PlannerModel == nil || *r.PlannerModel != planner || r.ExecutorModel == nil || *r.ExecutorModel != "offline/executor" ||
				(r.MediatorModel != nil) != tt.cond.MediatorRuns() || (r.AdvisorModel != nil) != tt.pol.Executor {
				t.Errorf("metric row models: planner %q (want %q), executor %q, mediator %q (NULL unless a mediator runs), advisor %q (NULL unless executor updates are allowed)",
					orZero(r.PlannerModel), planner, orZero(r.ExecutorModel), orZero(r.MediatorModel), orZero(r.AdvisorModel))
			}
			mediated, err := inspect.Calls(tr.run.Dir.Path, inspect.CallFilter{Role: string(conditions.RoleMediator)})
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, c := range recs {
				if c.Role == string(conditions.RoleMediator) {
					want++
				}
			}
			if len(mediated) != want || (tt.cond != conditions.NoFeedback && want == 0) {
				t.Errorf("inspect found %d mediator calls, the log holds %d", len(mediated), want)
			}
		})
	}
}

func TestCallScope(t *testing.T) {
	tests := []struct {
		caller string
		task   string
		it     int
	}{
		{"planner/i0003-csv-parser", "csv-parser", 3},
		{"planner/i0003-csv-parser/proposal", "csv-parser", 3},
		{"executor/student-1/i0012-a/code", "a", 12},
		{"mediator/i0001-log-analysis", "log-analysis", 1},
		{"compactor/i0002-b", "b", 2},
		{"coevo/reflector/planner/i0004", "", 4},
		{"coevo/validation/vb001-candidate-csv-parser-k2/code", "csv-parser", 0},
		{"coevo/advisor/b001", "", 0},
		{"executor/student-2/e0030-k01-csv-parser/code", "csv-parser", 0},
		{"tasks-try/coordinator", "", 0},
		{"planner/e0000-k02-log-analysis", "log-analysis", 0},
		{"planner", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.caller, func(t *testing.T) {
			task, it := callScope(tt.caller)
			if task != tt.task || it != tt.it {
				t.Errorf("callScope(%q) = %q, %d; want %q, %d", tt.caller, task, it, tt.task, tt.it)
			}
		})
	}
}

func TestCallLogNeverHoldsAnAPIKey(t *testing.T) {
	const env, key = "HARNESS_TEST_CALL_LOG_KEY", "sk-test-0123456789abcdef"
	t.Setenv(env, key)
	tests := []struct {
		name    string
		reply   llmtest.Reply
		wantErr bool
	}{
		{"the key in the answer", llmtest.Text("your key is " + key), false},
		{"the key in a tool call", llmtest.ToolCall("c1", "run", `{"cmd":"echo `+key+`"}`), false},
		{"the key in an error", llmtest.Status(http.StatusUnauthorized, "invalid api key "+key), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(tt.reply)
			cfg := testConfig(t, func(c *config.Config) {
				for role, m := range c.Models {
					m.Provider, m.BaseURL, m.Model, m.APIKeyEnv, m.MaxRetries = config.ProviderOpenAI, srv.URL(), "test-model", env, 0
					c.Models[role] = m
				}
			})
			dir := t.TempDir()
			calls, err := OpenCallLog(dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer calls.Close()
			clients, err := NewClients(cfg, llm.NewLedger(llm.Limits{}), 1, providers.New, calls, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = clients.Get(conditions.RoleExecutor).Complete(context.Background(), llm.Request{
				Caller: "executor/student-1/i0001-a", Kind: llm.KindAgentStep,
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "env printed " + key}},
				Tools:    []llm.Tool{{Name: "run", Description: "run " + key, Parameters: map[string]any{"type": "object"}}},
			})
			if (err != nil) != tt.wantErr {
				t.Fatalf("call error %v, want error %v", err, tt.wantErr)
			}
			if got := srv.Requests()[0].Header.Get("Authorization"); !strings.Contains(got, key) {
				t.Fatalf("the server was not sent the key (Authorization %q)", got)
			}
			if err := calls.Err(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, rundir.CallsFile))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), key) {
				t.Fatalf("the call log holds the key:\n%s", data)
			}
			recs := readCallLog(t, dir)
			if len(recs) != 1 || !strings.Contains(string(data), config.Redacted) {
				t.Fatalf("want one record with the key redacted, got:\n%s", data)
			}
			if c := recs[0]; (c.Error != "") != tt.wantErr || c.Role != "executor" || c.Model != "test-model" ||
				c.Task != "a" || c.Iteration != 1 || c.Attempts != 1 {
				t.Errorf("record %+v", c)
			}
		})
	}
}
