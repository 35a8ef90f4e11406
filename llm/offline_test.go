package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm"
)

const testSkill = `---
name: executor
description: How the executor works on tasks.
---

# Executor

- Read the task carefully.
`

// structuredCase is one kind with a request and the answer type it must decode into.
type structuredCase struct {
	kind   llm.Kind
	schema map[string]any
	inputs map[string]string
	decode func(string) (interface{ Validate() error }, error)
}

func decodeAs[T interface{ Validate() error }](content string) (interface{ Validate() error }, error) {
	var v T
	err := llm.DecodeJSON(content, &v)
	return v, err
}

func structuredCases(i int) []structuredCase {
	task := fmt.Sprintf("task-%d", i)
	return []structuredCase{
		{llm.KindPlan, llm.PlanSchema(), map[string]string{"task_id": task, "instruction": "Write the sum to /app/out.txt"}, decodeAs[llm.PlanAnswer]},
		{llm.KindReport, llm.ReportSchema(), map[string]string{"task_id": task, "trace_summary": fmt.Sprintf("reward 0.%d, tests 1/3 passed", i)}, decodeAs[llm.ReportAnswer]},
		{llm.KindProposal, llm.ProposalSchema(), map[string]string{"skill": testSkill, "task_id": task}, decodeAs[llm.ProposalAnswer]},
		{llm.KindAdvice, llm.AdviceSchema(), map[string]string{"batch_id": fmt.Sprintf("batch-%d", i)}, decodeAs[llm.AdviceAnswer]},
		{llm.KindSkillDraft, llm.DraftSchema(), map[string]string{"skill": testSkill, "proposals": llm.DiligenceAdvice + "\n- Another line."}, decodeAs[llm.DraftAnswer]},
		{llm.KindSkillDraft, llm.DraftSchema(), map[string]string{"skill": "no front matter here", "proposals": "- x"}, decodeAs[llm.DraftAnswer]},
		{llm.KindReflection, llm.ReflectionSchema(), map[string]string{"skill": testSkill, "pairs": fmt.Sprintf("pair %d: high reward listed files first\npair: low reward skipped tests", i)}, decodeAs[llm.ReflectionAnswer]},
		{llm.KindReflection, llm.ReflectionSchema(), map[string]string{"skill": testSkill, "pairs": ""}, decodeAs[llm.ReflectionAnswer]},
		{llm.KindCompaction, llm.SummarySchema(), map[string]string{"text": strings.Repeat(fmt.Sprintf("line %d of a long log\n", i), 200)}, decodeAs[llm.SummaryAnswer]},
		{llm.KindTraceSummary, llm.SummarySchema(), map[string]string{"text": "short trace"}, decodeAs[llm.SummaryAnswer]},
	}
}

func TestOfflineStructuredAnswersAreValidAndDeterministic(t *testing.T) {
	ctx := context.Background()
	for seed := int64(0); seed < 5; seed++ {
		for i := range 20 {
			for _, c := range structuredCases(i) {
				req := llm.Request{Kind: c.kind, Schema: c.schema, Inputs: c.inputs, Seed: seed,
					Messages: []llm.Message{{Role: llm.RoleUser, Content: "rendered prompt"}}}
				a, err := llm.NewOffline(seed).Complete(ctx, req)
				if err != nil {
					t.Fatalf("%s: %v", c.kind, err)
				}
				b, _ := llm.NewOffline(seed).Complete(ctx, req)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("%s: two identical requests gave different answers:\n%+v\n%+v", c.kind, a, b)
				}
				v, err := c.decode(a.Message.Content)
				if err != nil {
					t.Fatalf("%s: answer %q does not decode: %v", c.kind, a.Message.Content, err)
				}
				if err := v.Validate(); err != nil {
					t.Fatalf("%s: answer %q is invalid: %v", c.kind, a.Message.Content, err)
				}
				checkMatchesSchema(t, c.kind, a.Message.Content, c.schema)
				if !a.Usage.CostKnown || a.Usage.CostUSD != 0 || a.Usage.InputTokens == 0 {
					t.Errorf("%s: usage = %+v", c.kind, a.Usage)
				}
			}
		}
	}
}

// checkMatchesSchema checks the answer has exactly the schema's properties.
func checkMatchesSchema(t *testing.T, kind llm.Kind, content string, schema map[string]any) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(content), &obj); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	props := schema["properties"].(map[string]any)
	var got, want []string
	for k := range obj {
		got = append(got, k)
	}
	for k := range props {
		want = append(want, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: answer keys %v, schema properties %v", kind, got, want)
	}
	if req := schema["required"].([]string); len(req) != len(want) {
		t.Fatalf("%s: schema requires %v of %v", kind, req, want)
	}
	for k, p := range props {
		enum, ok := p.(map[string]any)["enum"].([]string)
		if !ok {
			continue
		}
		if v, _ := obj[k].(string); !slices.Contains(enum, v) {
			t.Fatalf("%s: %s = %q is not one of the schema's %q", kind, k, v, enum)
		}
	}
}

func offlineAnswer[T any](t *testing.T, seed int64, kind llm.Kind, inputs map[string]string) T {
	t.Helper()
	resp, err := llm.NewOffline(seed).Complete(context.Background(), llm.Request{Kind: kind, Inputs: inputs, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := llm.DecodeJSON(resp.Message.Content, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOfflineRates(t *testing.T) {
	const n = 600
	withheld, approved := 0, 0
	for i := range n {
		r := offlineAnswer[llm.ReportAnswer](t, 3, llm.KindReport, map[string]string{"task_id": fmt.Sprint(i), "trace_summary": "x"})
		if r.Withheld {
			withheld++
		}
		a := offlineAnswer[llm.AdviceAnswer](t, 3, llm.KindAdvice, map[string]string{"batch_id": fmt.Sprint("b", i)})
		if a.Approve {
			approved++
		}
	}
	if f := float64(withheld) / n; f < 0.18 || f > 0.32 {
		t.Errorf("withheld %.2f of reports, want about 1/4", f)
	}
	if f := float64(approved) / n; f < 0.58 || f > 0.75 {
		t.Errorf("approved %.2f of batches, want about 2/3", f)
	}
}

func TestOfflineProposal(t *testing.T) {
	lines := llm.ExecutorAdviceLines()
	if lines[0] != "- Before you submit, create every output file the instruction names, even if your answer is incomplete." {
		t.Fatalf("first advice line = %q", lines[0])
	}
	// With every line but one in the skill, that one is proposed.
	partial := testSkill + strings.Join(lines[1:], "\n") + "\n"
	p := offlineAnswer[llm.ProposalAnswer](t, 1, llm.KindProposal, map[string]string{"skill": partial})
	if !p.Propose || p.NewContent != lines[0] || p.OldContent != "" {
		t.Errorf("proposal = %+v, want the missing first line appended", p)
	}
	full := testSkill + strings.Join(lines, "\n") + "\n"
	p = offlineAnswer[llm.ProposalAnswer](t, 1, llm.KindProposal, map[string]string{"skill": full})
	if p.Propose {
		t.Errorf("proposal = %+v, want none when every line is present", p)
	}
	// Across inputs, each proposed line is one the skill lacks.
	for i := range 50 {
		p := offlineAnswer[llm.ProposalAnswer](t, int64(i), llm.KindProposal, map[string]string{"skill": testSkill, "task_id": fmt.Sprint(i)})
		if !p.Propose || !slices.Contains(lines, p.NewContent) || strings.Contains(testSkill, p.NewContent) {
			t.Fatalf("proposal = %+v", p)
		}
	}
}

func TestOfflineDraftMergesProposals(t *testing.T) {
	d := offlineAnswer[llm.DraftAnswer](t, 1, llm.KindSkillDraft, map[string]string{
		"skill":     testSkill,
		"proposals": llm.DiligenceAdvice + "\n\n- Read the task carefully.\n" + llm.DiligenceAdvice,
	})
	if !strings.HasPrefix(d.Content, "---\nname: executor\ndescription: How the executor works on tasks.\n---\n") {
		t.Errorf("front matter not preserved:\n%s", d.Content)
	}
	if strings.Count(d.Content, llm.DiligenceAdvice) != 1 || strings.Count(d.Content, "- Read the task carefully.") != 1 {
		t.Errorf("lines not merged exactly once:\n%s", d.Content)
	}
}

func TestOfflineReflectionReplacesLessons(t *testing.T) {
	in := map[string]string{"skill": testSkill, "pairs": "pair A better than pair B"}
	r1 := offlineAnswer[llm.ReflectionAnswer](t, 1, llm.KindReflection, in)
	if r1.NoChange || !strings.Contains(r1.Content, "## Lessons") {
		t.Fatalf("reflection = %+v", r1)
	}
	in2 := map[string]string{"skill": r1.Content, "pairs": "a new contrast"}
	r2 := offlineAnswer[llm.ReflectionAnswer](t, 1, llm.KindReflection, in2)
	if strings.Count(r2.Content, "## Lessons") != 1 || !strings.Contains(r2.Content, "a new contrast") || strings.Contains(r2.Content, "pair A") {
		t.Errorf("second reflection did not replace the section:\n%s", r2.Content)
	}
	if err := llm.CheckSkillText(r2.Content); err != nil {
		t.Error(err)
	}
}

func TestOfflineRefusesUnknownKind(t *testing.T) {
	_, err := llm.NewOffline(1).Complete(context.Background(), llm.Request{Kind: "poem"})
	if err == nil || !strings.Contains(err.Error(), `kind "poem"`) {
		t.Errorf("err = %v", err)
	}
}

func TestOfflineFeedbackReachesTheAgentThroughThePlan(t *testing.T) {
	o := llm.NewOffline(3)
	plan := func(prior string) string {
		resp, err := o.Complete(context.Background(), llm.Request{Kind: llm.KindPlan, Schema: llm.PlanSchema(),
			Inputs: map[string]string{"task_id": "t", "instruction": "Write /app/out.txt.", "prior_context": prior}})
		if err != nil {
			t.Fatal(err)
		}
		var ans llm.PlanAnswer
		if err := llm.DecodeJSON(resp.Message.Content, &ans); err != nil {
			t.Fatal(err)
		}
		return ans.Plan
	}
	tests := []struct {
		prior string
		want  bool
	}{
		{"", false},
		{"status scored, reward 0\nfailed tests: out.txt exists, values", true},
		{"AssertionError: /app/out.txt does not exist", true},
		{"status scored, reward 0.5\nfailed tests: values", false},
	}
	for _, tt := range tests {
		if got := strings.Contains(plan(tt.prior), llm.OutputsFirstStep); got != tt.want {
			t.Errorf("prior %q: plan has the outputs-first step = %v, want %v", tt.prior, got, tt.want)
		}
	}
}
