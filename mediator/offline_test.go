package mediator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
)

const offlineTestSkill = `---
name: executor
description: How the executor works on tasks.
---

# Executor

- Read the task carefully.
`

// offlineCase is one role's offline answer with the schema it must match.
type offlineCase struct {
	name   string
	schema map[string]any
	answer func(seed int64) interface{ Validate() error }
}

func offlineCases(i int) []offlineCase {
	task := fmt.Sprintf("task-%d", i)
	return []offlineCase{
		{"plan", planSchema(), func(seed int64) interface{ Validate() error } {
			return offlinePlan(seed, task, "Write the sum to /app/out.txt", "")
		}},
		{"report", reportSchema(), func(seed int64) interface{ Validate() error } {
			return offlineReport(seed, "", task, "", fmt.Sprintf("reward 0.%d, tests 1/3 passed", i))
		}},
		{"proposal", proposalSchema(), func(seed int64) interface{ Validate() error } {
			return proposalSeen{skill: offlineTestSkill, taskID: task}.offline(seed)
		}},
		{"advice", adviceSchema(), func(seed int64) interface{ Validate() error } {
			return offlineAdvice(seed, fmt.Sprintf("batch-%d", i))
		}},
		{"draft", draftSchema(), func(int64) interface{ Validate() error } {
			return DraftAnswer{Content: offlineDraft(offlineTestSkill, executor.DiligenceAdvice+"\n- Another line.")}
		}},
		{"draft without front matter", draftSchema(), func(int64) interface{ Validate() error } {
			return DraftAnswer{Content: offlineDraft("no front matter here", "- x")}
		}},
		{"reflection", reflectionSchema(), func(int64) interface{ Validate() error } {
			return offlineReflection("", offlineTestSkill, fmt.Sprintf("pair %d: high reward listed files first\npair: low reward skipped tests", i))
		}},
		{"reflection without pairs", reflectionSchema(), func(int64) interface{ Validate() error } {
			return offlineReflection("", offlineTestSkill, "")
		}},
		{"long summary", summarySchema(), func(int64) interface{ Validate() error } {
			return SummaryAnswer{Summary: digest(strings.Repeat(fmt.Sprintf("line %d of a long log\n", i), 200))}
		}},
		{"short summary", summarySchema(), func(int64) interface{ Validate() error } {
			return SummaryAnswer{Summary: digest("short trace")}
		}},
	}
}

func TestOfflineAnswersAreValidAndDeterministic(t *testing.T) {
	for seed := int64(0); seed < 5; seed++ {
		for i := range 20 {
			for _, c := range offlineCases(i) {
				a, b := c.answer(seed), c.answer(seed)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("%s: two identical calls gave different answers:\n%+v\n%+v", c.name, a, b)
				}
				if err := a.Validate(); err != nil {
					t.Fatalf("%s: answer %+v is invalid: %v", c.name, a, err)
				}
				msg, err := llm.JSONAnswer(a)
				if err != nil {
					t.Fatal(err)
				}
				checkMatchesSchema(t, c.name, msg.Content, c.schema)
			}
		}
	}
}

// checkMatchesSchema checks the answer has exactly the schema's properties.
func checkMatchesSchema(t *testing.T, name, content string, schema map[string]any) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(content), &obj); err != nil {
		t.Fatalf("%s: %v", name, err)
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
		t.Fatalf("%s: answer keys %v, schema properties %v", name, got, want)
	}
	if req := schema["required"].([]string); len(req) != len(want) {
		t.Fatalf("%s: schema requires %v of %v", name, req, want)
	}
	for k, p := range props {
		enum, ok := p.(map[string]any)["enum"].([]string)
		if !ok {
			continue
		}
		if v, _ := obj[k].(string); !slices.Contains(enum, v) {
			t.Fatalf("%s: %s = %q is not one of the schema's %q", name, k, v, enum)
		}
	}
}

func TestOfflineRates(t *testing.T) {
	const n = 600
	withheld, approved := 0, 0
	for i := range n {
		if offlineReport(3, "", fmt.Sprint(i), "", "x").Withheld {
			withheld++
		}
		if offlineAdvice(3, fmt.Sprint("b", i)).Approve {
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
	lines := executor.ExecutorAdviceLines()
	if lines[0] != "- Before you submit, create every output file the instruction names, even if your answer is incomplete." {
		t.Fatalf("first advice line = %q", lines[0])
	}
	// With every line but one in the skill, that one is proposed.
	partial := offlineTestSkill + strings.Join(lines[1:], "\n") + "\n"
	p := proposalSeen{skill: partial}.offline(1)
	if !p.Propose || p.NewContent != lines[0] || p.OldContent != "" {
		t.Errorf("proposal = %+v, want the missing first line appended", p)
	}
	full := offlineTestSkill + strings.Join(lines, "\n") + "\n"
	p = proposalSeen{skill: full}.offline(1)
	if p.Propose {
		t.Errorf("proposal = %+v, want none when every line is present", p)
	}
	// Across inputs, each proposed line is one the skill lacks.
	for i := range 50 {
		p := proposalSeen{skill: offlineTestSkill, taskID: fmt.Sprint(i)}.offline(int64(i))
		if !p.Propose || !slices.Contains(lines, p.NewContent) || strings.Contains(offlineTestSkill, p.NewContent) {
			t.Fatalf("proposal = %+v", p)
		}
	}
}

func TestOfflineDraftMergesProposals(t *testing.T) {
	d := offlineDraft(offlineTestSkill, executor.DiligenceAdvice+"\n\n- Read the task carefully.\n"+executor.DiligenceAdvice)
	if !strings.HasPrefix(d, "---\nname: executor\ndescription: How the executor works on tasks.\n---\n") {
		t.Errorf("front matter not preserved:\n%s", d)
	}
	if strings.Count(d, executor.DiligenceAdvice) != 1 || strings.Count(d, "- Read the task carefully.") != 1 {
		t.Errorf("lines not merged exactly once:\n%s", d)
	}
}

func TestOfflineReflectionReplacesLessons(t *testing.T) {
	r1 := offlineReflection("", offlineTestSkill, "pair A better than pair B")
	if r1.NoChange || !strings.Contains(r1.Content, "## Lessons") {
		t.Fatalf("reflection = %+v", r1)
	}
	r2 := offlineReflection("", r1.Content, "a new contrast")
	if strings.Count(r2.Content, "## Lessons") != 1 || !strings.Contains(r2.Content, "a new contrast") || strings.Contains(r2.Content, "pair A") {
		t.Errorf("second reflection did not replace the section:\n%s", r2.Content)
	}
	if err := checkSkillText(r2.Content); err != nil {
		t.Error(err)
	}
}

func TestOfflinePlanPutsMissingOutputsFirst(t *testing.T) {
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
		plan := offlinePlan(1, "t", "Write /app/out.txt.", tt.prior).Plan
		if got := strings.Contains(plan, executor.OutputsFirstStep); got != tt.want {
			t.Errorf("prior %q: plan has the outputs-first step = %v, want %v", tt.prior, got, tt.want)
		}
	}
}

// TestOfflineAnswersArePinned guards the offline answers: runs and the smoke
// matrix compare them across versions, so the same seed and inputs must
// always give the same answers. Update the digest only for a deliberate
// change of offline behaviour.
func TestOfflineAnswersArePinned(t *testing.T) {
	h := sha256.New()
	skills := []string{offlineTestSkill, offlineTestSkill + executor.DiligenceAdvice + "\n", "no front matter", ""}
	for seed := int64(0); seed < 4; seed++ {
		for i := range 12 {
			sk := skills[i%len(skills)]
			task, iter := fmt.Sprintf("task-%d", i), fmt.Sprint(i%3)
			instr := fmt.Sprintf("# Task %d\nWrite /app/out%d.txt", i, i)
			prior := []string{"", "failed tests: out exists"}[i%2]
			trace := strings.Repeat(fmt.Sprintf("trace %d ", i), i*10)
			for _, v := range []any{
				offlinePlan(seed, task, instr, prior),
				offlineReport(seed, sk, task, iter, trace),
				proposalSeen{taskID: task, iteration: iter, instruction: instr, skill: sk, plannerSkill: "P", feedback: "f" + task,
					feedbackKind: "mediator_report", rejections: "- r"}.offline(seed),
				offlineAdvice(seed, "b"+task),
				offlineDraft(sk, executor.DiligenceAdvice+"\n- another "+iter),
				offlineReflection([]string{"planner", "mediator"}[i%2], sk, []string{"", "a | b\nc | d"}[i%2]),
				digest(strings.Repeat("line of log "+iter+"\n", i*20)),
			} {
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				h.Write(b)
				h.Write([]byte{0})
			}
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != pinnedOfflineDigest {
		t.Errorf("offline answers changed: digest %s, want %s", got, pinnedOfflineDigest)
	}
}

const pinnedOfflineDigest = "2dc59a8292ab8abbdab923b00da31ccdd2b1b7f001c727919a8b1042b62d7a1a"
