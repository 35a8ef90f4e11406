package llm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

// verdict is a structured answer with its own Validate, as callers define them.
type verdict struct {
	Level   string `json:"level"`
	Content string `json:"content"`
}

func (v verdict) Validate() error {
	if v.Level != "low" && v.Level != "high" {
		return fmt.Errorf("level %q is not one of low, high", v.Level)
	}
	if strings.TrimSpace(v.Content) == "" {
		return errors.New("content is empty")
	}
	return nil
}

func verdictSchema() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"content", "level"},
		"properties": map[string]any{"level": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}}}
}

// plan is a structured answer without a Validate method.
type plan struct {
	Plan string `json:"plan"`
}

func TestStructured(t *testing.T) {
	valid := verdict{Level: "high", Content: "Outputs were missing."}
	fallback := verdict{Content: "fallback"}
	tests := []struct {
		name         string
		replies      []llmtest.Reply
		want         verdict
		wantFellBack bool
		wantRequests int
		wantRetryMsg string // in the second request's last message
	}{
		{"valid at once", []llmtest.Reply{llmtest.JSON(valid)}, valid, false, 1, ""},
		{"fenced JSON is fine", []llmtest.Reply{llmtest.Text("```json\n{\"level\":\"high\",\"content\":\"Outputs were missing.\"}\n```")}, valid, false, 1, ""},
		{"malformed then valid", []llmtest.Reply{llmtest.Text("not json"), llmtest.JSON(valid)}, valid, false, 2, "Your answer could not be used: invalid character"},
		{"invalid then valid", []llmtest.Reply{llmtest.JSON(verdict{Level: "vibes", Content: "x"}), llmtest.JSON(valid)}, valid, false, 2, `level "vibes"`},
		{"invalid twice falls back", []llmtest.Reply{llmtest.Text("{}"), llmtest.Text("nope")}, fallback, true, 2, "level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Push(tt.replies...)
			c := serverClient(t, srv, llm.NewLedger(llm.Limits{}))
			req := llm.Request{Caller: "judge", Kind: "verdict", Schema: verdictSchema(), SchemaName: "verdict",
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "judge this trace"}}}
			got, fellBack, err := llm.Structured(context.Background(), c, req, nil, fallback)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || fellBack != tt.wantFellBack {
				t.Errorf("got %+v fellBack %v, want %+v %v", got, fellBack, tt.want, tt.wantFellBack)
			}
			reqs := srv.Requests()
			if len(reqs) != tt.wantRequests {
				t.Fatalf("%d requests, want %d", len(reqs), tt.wantRequests)
			}
			if tt.wantRetryMsg != "" {
				msgs := reqs[1].Chat.Messages
				last := msgs[len(msgs)-1]
				if last.Role != "user" || !strings.Contains(string(last.Content), tt.wantRetryMsg) || msgs[len(msgs)-2].Role != "assistant" {
					t.Errorf("retry request ends with %+v, want the error %q", last, tt.wantRetryMsg)
				}
			}
		})
	}
}

func TestStructuredCustomValidator(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Push(llmtest.JSON(plan{Plan: "short"}), llmtest.JSON(plan{Plan: "a plan that is long enough"}))
	c := serverClient(t, srv, nil)
	minLen := func(p plan) error {
		if len(p.Plan) < 10 {
			return errors.New("plan too short")
		}
		return nil
	}
	got, fellBack, err := llm.Structured(context.Background(), c, llm.Request{Kind: "plan"}, minLen, plan{Plan: "fallback"})
	if err != nil || fellBack || got.Plan != "a plan that is long enough" {
		t.Errorf("got %+v %v %v", got, fellBack, err)
	}
}

func TestStructuredReturnsBudgetErrors(t *testing.T) {
	ledger := llm.NewLedger(llm.Limits{MaxTokens: 1})
	ledger.Charge("planner", llm.Usage{InputTokens: 5})
	c := &llm.Client{Provider: llm.NewOffline(1), Ledger: ledger}
	_, fellBack, err := llm.Structured(context.Background(), c, llm.Request{Kind: "plan"}, nil, plan{Plan: "fallback"})
	if !errors.Is(err, llm.ErrBudgetExhausted) || fellBack {
		t.Errorf("err %v fellBack %v, want ErrBudgetExhausted and no fallback", err, fellBack)
	}
}
