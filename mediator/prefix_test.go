package mediator

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
	"github.com/mediated-coevo/harness/llm/openaiapi"
)

// prefixShare is the share of b's serialized messages that repeats a's as a
// prefix: what a provider-side prefix cache could reuse from a for b.
func prefixShare(t *testing.T, a, b llmtest.Request) float64 {
	t.Helper()
	_, share, err := llmtest.RepeatedPrefix(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return share
}

// serverClient is a client of the fake chat-completions server.
func serverClient(t *testing.T, srv *llmtest.Server) *llm.Client {
	t.Helper()
	p, err := openaiapi.New(config.Model{Provider: config.ProviderOpenAI, BaseURL: srv.URL(), Model: "test-model",
		MaxRetries: 1, Timeout: config.Duration{Duration: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return &llm.Client{Provider: p, Role: "test"}
}

// minPrefixShare is what consecutive requests of one role must repeat.
const minPrefixShare = 0.8

func TestConsecutivePlansSharePrefix(t *testing.T) {
	executorSkill, plannerSkill := defaultSkill(t, "executor"), defaultSkill(t, "planner")
	instruction := func(task string) string {
		return fmt.Sprintf("Merge the CSV files in /data for %s into /out/merged.csv, sorted by the id column, "+
			"keeping the header once. Rows with a missing id are dropped. %s", task, strings.Repeat("Details follow. ", 20))
	}
	report := "The Executor wrote /out/merged.csv but kept every header line; the verifier failed on the row count. " +
		"Check the header before submitting."
	first := PlanInput{TaskID: "csv-merge", Iteration: 3, Instruction: instruction("csv-merge"),
		ExecutorSkill: executorSkill, PlannerSkill: plannerSkill, PriorContext: report,
		PriorContextHeader: "The Mediator's report on your last attempt at this task", Notes: []string{"check outputs"}}
	tests := []struct {
		name string
		next PlanInput
	}{
		{"another task, same iteration", PlanInput{TaskID: "json-fix", Iteration: 3, Instruction: instruction("json-fix"),
			ExecutorSkill: executorSkill, PlannerSkill: plannerSkill, PriorContext: "The Executor ran out of steps.",
			PriorContextHeader: "The Mediator's report on your last attempt at this task", Notes: []string{"check outputs"}}},
		{"same task, next iteration", PlanInput{TaskID: "csv-merge", Iteration: 4, Instruction: instruction("csv-merge"),
			ExecutorSkill: executorSkill, PlannerSkill: plannerSkill, PriorContext: "The header is now right; the sort is not.",
			PriorContextHeader: "The Mediator's report on your last attempt at this task", Notes: []string{"check outputs", "new note"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(llmtest.JSON(PlanAnswer{Plan: "1. go"}), llmtest.JSON(PlanAnswer{Plan: "1. go"}))
			p := &Planner{Client: serverClient(t, srv), Caller: "planner", Seed: 1}
			for _, in := range []PlanInput{first, tt.next} {
				if _, _, err := p.Plan(context.Background(), in); err != nil {
					t.Fatal(err)
				}
			}
			checkConsecutiveShare(t, srv)
		})
	}
}

func TestConsecutiveReportsSharePrefix(t *testing.T) {
	protocol := defaultSkill(t, "mediator")
	digest := func(task string, iter int, reward float64, transcript string) TraceDigest {
		return TraceDigest{TaskID: task, Iteration: iter, Status: "completed", Reward: &reward,
			TestsPassed: 2, TestsFailed: 1, TestsTotal: 3, FailedTests: []string{"test_" + task + "_rows"},
			VerifierExcerpt: "AssertionError: expected 10 rows, got 12 in " + task,
			AgentExcerpt:    "wrote the output for " + task, Plan: "1. Read.\n2. Merge.\n3. Check " + task + ".",
			Transcript: transcript}
	}
	steps := func(task string) string {
		var b strings.Builder
		for i := 1; i <= 8; i++ {
			fmt.Fprintf(&b, "%d. bash: python3 merge.py --task %s (exit 0)\n", i, task)
		}
		return b.String()
	}
	tests := []struct {
		name        string
		first, next TraceDigest
	}{
		{"another task", digest("csv-merge", 3, 0, steps("csv-merge")), digest("json-fix", 3, 1, steps("json-fix"))},
		{"same task, next iteration", digest("csv-merge", 3, 0, steps("csv-merge")), digest("csv-merge", 4, 1, steps("csv-merge"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			ans := llmtest.JSON(ReportAnswer{AbstractionLevel: LevelTrace, Content: "check the rows", Reasoning: "r"})
			srv.Push(ans, ans)
			m := &Mediator{Client: serverClient(t, srv), Caller: "mediator", MaxChars: 600, Seed: 1}
			for _, d := range []TraceDigest{tt.first, tt.next} {
				if _, err := m.Report(context.Background(), protocol, d); err != nil {
					t.Fatal(err)
				}
			}
			checkConsecutiveShare(t, srv)
		})
	}
}

// checkConsecutiveShare checks that the server got two requests and that
// the second repeats at least minPrefixShare of itself as the first's prefix.
func checkConsecutiveShare(t *testing.T, srv *llmtest.Server) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests; want 2", len(reqs))
	}
	if got := prefixShare(t, reqs[0], reqs[1]); got < minPrefixShare {
		t.Errorf("repeated-prefix share %.3f; want >= %.2f", got, minPrefixShare)
	} else {
		t.Logf("repeated-prefix share %.3f", got)
	}
}

func TestPrefixShare(t *testing.T) {
	req := func(sys, user string) llmtest.Request {
		return llmtest.Request{Chat: llmtest.ChatRequest{Messages: []llmtest.WireMessage{
			{Role: "system", Content: llmtest.WireContent(sys)}, {Role: "user", Content: llmtest.WireContent(user)}}}}
	}
	same := req("S", "U")
	if got := prefixShare(t, same, same); got != 1 {
		t.Errorf("identical requests share %.3f; want 1", got)
	}
	if got := prefixShare(t, req("A", "U"), req("B", "U")); got >= 0.5 {
		t.Errorf("requests differing in the first message share %.3f; want < 0.5", got)
	}
}
