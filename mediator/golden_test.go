package mediator

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/llmtest"
)

var update = flag.Bool("update", false, "rewrite the golden prompt files under testdata/prompts")

// The fixed trial every golden prompt is rendered from: iteration 3 of
// task csv-merge, half its tests passed, with a report, a trace summary and
// shared notes from earlier work.
const (
	gTask        = "csv-merge"
	gIteration   = 3
	gInstruction = "Merge /app/a.csv and /app/b.csv on the id column into /app/out.csv, sorted by id.\n"
	gPlan        = "1. Read both CSV headers.\n2. Merge on id with python3's csv module.\n3. Check /app/out.csv before submitting."
	gReport      = "level: trace\noutcome: reward 0.5; 1 of 2 tests passed\nnext time: sort the rows by id before writing."
	gSummary     = "status completed, reward 0.5, tests 1/2 passed\nfailed tests: test_sorted"
	gSharedNotes = "Outputs are checked byte for byte: no trailing blank line."
	gHumanNote   = "Prefer the standard library."
)

func gOutcome() Outcome {
	return Outcome{Status: "completed", Reward: ptr(0.5), TestsPassed: 1, TestsFailed: 1, TestsTotal: 2}
}

// goldenSetting is a condition at the default verifier level.
func goldenSetting(c conditions.Condition, v conditions.VerifierFeedback) conditions.Setting {
	return conditions.Setting{Condition: c, Verifier: v}
}

// gPrior is the prior context the Planner gets under s, as the run loop
// titles it.
func gPrior(allowed conditions.EvidenceSet) (header, body string) {
	switch {
	case allowed.Has(conditions.EvidenceSharedNotes):
		return "Shared notes", gSharedNotes
	case allowed.Has(conditions.EvidenceOwnSummaries):
		return "Summaries of your recent attempts at this task", "### Iteration 2\n" + gSummary
	case allowed.Has(conditions.EvidenceOwnReports):
		return "The Mediator's report on your last attempt at this task", "Report on iteration 2:\n" + gReport
	}
	return "", ""
}

// gFeedback is the proposal feedback under s.
func gFeedback(s conditions.Setting) (kind conditions.ProposalFeedback, text string) {
	kind = s.Condition.ProposalFeedback()
	if kind == conditions.FeedbackTraceSummary {
		return kind, gSummary
	}
	return kind, gReport
}

// gDigest is the fixed trial cut to what allowed lets through.
func gDigest(allowed conditions.EvidenceSet, v conditions.VerifierFeedback) TraceDigest {
	d := TraceDigest{TaskID: gTask, Iteration: gIteration, Verifier: v}
	if allowed.Has(conditions.EvidenceOutcome) {
		o := gOutcome()
		d.Status, d.Reward, d.TestsPassed, d.TestsFailed, d.TestsTotal = o.Status, o.Reward, o.TestsPassed, o.TestsFailed, o.TestsTotal
	}
	if allowed.Has(conditions.EvidenceTestNames) {
		d.FailedTests = []string{"test_sorted"}
	}
	if allowed.Has(conditions.EvidenceDiagnostics) {
		d.TestMessages = []string{"test_sorted: AssertionError: ids out of order"}
		d.VerifierExcerpt = "FAILED test_sorted - AssertionError: ids out of order"
	}
	if allowed.Has(conditions.EvidenceAgentOutput) {
		d.AgentExcerpt = "Merged the files into /app/out.csv."
	}
	if allowed.Has(conditions.EvidencePlan) {
		d.Plan = gPlan
	}
	if allowed.Has(conditions.EvidenceTranscript) {
		d.Transcript = "1. executor list_dir /app -> a.csv b.csv\n2. executor run_command python3 merge.py (exit 0)\n3. executor submit"
	}
	return d
}

func gBatch(s conditions.Setting) []Proposal {
	kind, feedback := gFeedback(s)
	return []Proposal{{ID: "row/i0003/csv-merge/proposal", TaskID: gTask, Iteration: gIteration,
		NewContent: "- Sort every output the instruction asks to be sorted, and check the order before submitting.",
		Reasoning:  "the rows were out of order", Digest: feedback, DigestKind: string(kind), Outcome: gOutcome()}}
}

// gPairs are one pair of the role's entries; the better one shows what it
// was written from where the setting lets the Reflector see it.
func gPairs(s conditions.Setting, role conditions.Role) []Pair {
	kind, worse, better := "plan", "1. Merge the files.", gPlan
	if role == conditions.RoleMediator {
		kind, worse, better = "report", "The Executor did fine.", gReport
	}
	entry := func(id string, it int, content string, reward float64, source string) PairEntry {
		return PairEntry{ID: id, Role: string(role), Kind: kind, TaskID: gTask, Iteration: it, Content: content,
			Reward: reward, Source: source, Outcome: Outcome{Status: "completed", Reward: ptr(reward), TestsPassed: int(2 * reward), TestsFailed: 2 - int(2*reward), TestsTotal: 2}}
	}
	source := ""
	if header, prior := gPrior(s.Visible(conditions.ConsumerReflector)); prior != "" && role == conditions.RolePlanner {
		source = header + ":\n" + prior
	}
	return []Pair{{Worse: entry("row/i0001/csv-merge/"+kind, 1, worse, 0, ""),
		Better: entry("row/i0002/csv-merge/"+kind, 2, better, 1, source), Gap: 1}}
}

// goldenCall renders one role's call under s into a request; ok is false
// when the call is never made under s.
type goldenCall struct {
	role     string
	consumer conditions.Consumer
	render   func(t *testing.T, s conditions.Setting, c *llm.Client) error
	reply    string
}

func goldenCalls() []goldenCall {
	ctx := context.Background()
	skill := func(t *testing.T, role string) string { return defaultSkill(t, role) }
	return []goldenCall{
		{"planner-plan", conditions.ConsumerPlannerPlan, func(t *testing.T, s conditions.Setting, c *llm.Client) error {
			allowed := s.Visible(conditions.ConsumerPlannerPlan)
			header, prior := gPrior(allowed)
			_, _, err := (&Planner{Client: c, Caller: "planner"}).Plan(ctx, PlanInput{TaskID: gTask, Iteration: gIteration,
				Instruction: gInstruction, ExecutorSkill: skill(t, "executor"), PlannerSkill: skill(t, "planner"),
				PriorContext: prior, PriorContextHeader: header, Notes: []string{gHumanNote}})
			return err
		}, `{"plan":"1. go"}`},
		{"planner-proposal", conditions.ConsumerPlannerProposal, func(t *testing.T, s conditions.Setting, c *llm.Client) error {
			kind, feedback := gFeedback(s)
			_, _, err := (&Planner{Client: c, Caller: "planner"}).Propose(ctx, ProposalInput{TaskID: gTask, Iteration: gIteration,
				Instruction: gInstruction, ExecutorSkill: skill(t, "executor"), PlannerSkill: skill(t, "planner"),
				Feedback: feedback, FeedbackKind: string(kind), Outcome: gOutcome(),
				RecentRejections: []string{"batch b001 (iteration 1): the Advisor rejected the batch"}})
			return err
		}, `{"propose":false,"old_content":"","new_content":"","reasoning":"nothing general"}`},
		{"planner-draft", conditions.ConsumerPlannerDraft, func(t *testing.T, s conditions.Setting, c *llm.Client) error {
			_, _, err := (&Planner{Client: c, Caller: "planner"}).Draft(ctx, skill(t, "executor"), gBatch(s), "Keep the edit; phrase it as a check.")
			return err
		}, `{"content":""}`},
		{"mediator", conditions.ConsumerMediator, func(t *testing.T, s conditions.Setting, c *llm.Client) error {
			_, err := (&Mediator{Client: c, Caller: "mediator", MaxChars: 1200}).Report(ctx, skill(t, "mediator"),
				gDigest(s.Visible(conditions.ConsumerMediator), s.Verifier))
			return err
		}, `{"abstraction_level":"trace","content":"sort rows","withheld":false,"reasoning":"r"}`},
		{"advisor", conditions.ConsumerAdvisor, func(t *testing.T, s conditions.Setting, c *llm.Client) error {
			_, err := (&Advisor{Client: c, Caller: "advisor"}).Review(ctx, "b002", skill(t, "executor"), gBatch(s))
			return err
		}, `{"approve":true,"feedback":"good"}`},
		{"reflector-planner", conditions.ConsumerReflector, func(t *testing.T, s conditions.Setting, c *llm.Client) error {
			_, err := (&Reflector{Client: c, Caller: "reflector"}).Reflect(ctx, conditions.RolePlanner, skill(t, "planner"), gPairs(s, conditions.RolePlanner))
			return err
		}, `{"no_change":true,"content":"","reasoning":"r"}`},
		{"reflector-mediator", conditions.ConsumerReflector, func(t *testing.T, s conditions.Setting, c *llm.Client) error {
			if !s.Visible(conditions.ConsumerReflector).Has(conditions.EvidenceMediatorSkill) {
				return errNotCalled
			}
			_, err := (&Reflector{Client: c, Caller: "reflector"}).Reflect(ctx, conditions.RoleMediator, skill(t, "mediator"), gPairs(s, conditions.RoleMediator))
			return err
		}, `{"no_change":true,"content":"","reasoning":"r"}`},
		{"judge", conditions.ConsumerJudge, func(t *testing.T, s conditions.Setting, c *llm.Client) error {
			base := skill(t, "executor")
			_, err := (&Judge{Client: c, Caller: "coevo/judge/b002"}).Compare(ctx, JudgeInput{BatchID: "b002", CurrentSkill: base,
				Proposals: gBatch(s), Rejections: []string{"batch b001 (iteration 1): the Advisor rejected the batch"},
				First:  JudgeCandidate{ID: "b002c1", Content: base + "\n- Sort every output the instruction asks to be sorted.\n"},
				Second: JudgeCandidate{ID: "b002c2", Content: base + "\n## Lessons first\n\n- Check the order of sorted outputs.\n"}})
			return err
		}, `{"winner":"first","reasoning":"r"}`},
		{"planner-variant", conditions.ConsumerPlannerDraft, func(t *testing.T, s conditions.Setting, c *llm.Client) error {
			base := skill(t, "executor")
			_, _, err := (&Planner{Client: c, Caller: "coevo/draft/b002/c2"}).Vary(ctx, VariantInput{Operator: OperatorCombine, BatchID: "b002",
				CurrentSkill: base, Proposals: gBatch(s), Advice: "Keep the edit; phrase it as a check.",
				Partner: base + "\n- Sort every output the instruction asks to be sorted.\n", Index: 2})
			return err
		}, `{"content":""}`},
		{"meta-review", conditions.ConsumerMetaReview, func(t *testing.T, s conditions.Setting, c *llm.Client) error {
			_, _, err := (&Reflector{Client: c, Caller: "coevo/meta_review/i0004"}).MetaReview(ctx, 4, skill(t, "planner"), []string{
				"judge in batch b002: the first candidate states the check more generally",
				"batch b001 (iteration 1): the Advisor rejected the batch; advice: too close to the skill"})
			return err
		}, `{"note":"- n"}`},
		{"compactor", conditions.ConsumerCompactor, func(t *testing.T, s conditions.Setting, c *llm.Client) error {
			_, _, err := (&Compactor{Client: c, Caller: "compactor"}).SummariseTrace(ctx, 1, gSummary+"\nagent output:\nMerged the files.", "fallback")
			return err
		}, `{"summary":"s"}`},
	}
}

var errNotCalled = fmt.Errorf("not called under this setting")

// goldenCase is one role's call under one setting.
type goldenCase struct {
	call    goldenCall
	setting conditions.Setting
	file    string
}

// goldenCases are every role under every condition that calls it, at the
// default verifier level, and the Mediator at each level.
func goldenCases() []goldenCase {
	var out []goldenCase
	for _, gc := range goldenCalls() {
		for _, c := range conditions.All() {
			s := goldenSetting(c, conditions.DefaultVerifierFeedback)
			if s.Visible(gc.consumer).Empty() {
				continue
			}
			out = append(out, goldenCase{gc, s, fmt.Sprintf("%s-%s.golden", gc.role, c)})
			if gc.role == "mediator" && c == conditions.LearnedMediator {
				for _, v := range conditions.VerifierLevels() {
					if v != conditions.DefaultVerifierFeedback {
						out = append(out, goldenCase{gc, goldenSetting(c, v), fmt.Sprintf("%s-%s-%s.golden", gc.role, c, v)})
					}
				}
			}
		}
	}
	return out
}

// render returns the first request of a case, or nil when the role is not
// called under its setting.
func (g goldenCase) render(t *testing.T) *llm.Request {
	t.Helper()
	fake := llmtest.NewScripted(g.call.reply, g.call.reply)
	err := g.call.render(t, g.setting, client(fake))
	if err == errNotCalled {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request was made")
	}
	return &reqs[0]
}

func goldenText(req *llm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString("=== " + string(m.Role) + " ===\n" + m.Content)
		if !strings.HasSuffix(m.Content, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// A change to any role's prompt shows up as a diff of its golden file.
func TestGoldenPrompts(t *testing.T) {
	for _, g := range goldenCases() {
		t.Run(g.file, func(t *testing.T) {
			req := g.render(t)
			if req == nil {
				return
			}
			got := goldenText(req)
			path := filepath.Join("testdata", "prompts", g.file)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v; run go test ./mediator -run TestGoldenPrompts -update to write it", err)
			}
			if string(want) != got {
				t.Errorf("%s differs from the rendered prompt; review the change and rerun with -update. Got:\n%s", path, got)
			}
		})
	}
}

// sectionEvidence maps the sections of the roles' prompts (by the start of
// their title) to the evidence they carry; nil marks a section that
// carries none (the request itself).
var sectionEvidence = []struct {
	prefix string
	e      *conditions.Evidence
}{
	{"Your answer", nil},
	{"Executor skill", ev(conditions.EvidenceExecutorSkill)},
	{"Current executor skill", ev(conditions.EvidenceExecutorSkill)},
	{"Current planner skill", ev(conditions.EvidencePlannerSkill)},
	{"Current mediator skill", ev(conditions.EvidenceMediatorSkill)},
	{"Task instruction", ev(conditions.EvidenceInstruction)},
	{"Shared notes", ev(conditions.EvidenceSharedNotes)},
	{"Summaries of your recent attempts", ev(conditions.EvidenceOwnSummaries)},
	{"The Mediator's report on your last attempt", ev(conditions.EvidenceOwnReports)},
	{"Notes from the researchers", ev(conditions.EvidenceHumanNotes)},
	{"Outcome", ev(conditions.EvidenceOutcome)},
	{"Failed tests", ev(conditions.EvidenceTestNames)},
	{"Assertion messages", ev(conditions.EvidenceDiagnostics)},
	{"Verifier output", ev(conditions.EvidenceDiagnostics)},
	{"Errors", ev(conditions.EvidenceAgentOutput)},
	{"Executor output", ev(conditions.EvidenceAgentOutput)},
	{"Plan the Executor was given", ev(conditions.EvidencePlan)},
	{"Transcript", ev(conditions.EvidenceTranscript)},
	{"Feedback: the Mediator's report", ev(conditions.EvidenceOwnReports)},
	{"Feedback: a summary of the last attempt's trace", ev(conditions.EvidenceOwnSummaries)},
	{"Recently rejected batches", ev(conditions.EvidenceRejections)},
	{"Proposal ", ev(conditions.EvidenceProposals)},
	{"Approved proposal ", ev(conditions.EvidenceProposals)},
	{"Advisor's feedback", ev(conditions.EvidenceAdvice)},
	{"First candidate", ev(conditions.EvidenceExecutorSkill)},
	{"Second candidate", ev(conditions.EvidenceExecutorSkill)},
	{"Other candidate", ev(conditions.EvidenceExecutorSkill)},
	{"Planner skill", ev(conditions.EvidencePlannerSkill)},
	{"Critiques up to", ev(conditions.EvidenceAdvice)},
	{"Pair ", ev(conditions.EvidenceHistory)},
}

func ev(e conditions.Evidence) *conditions.Evidence { return &e }

var sectionTitle = regexp.MustCompile(`(?m)^## (.+)$`)

// No role's prompt carries a section its setting does not let it see: a
// section the setting hides says so by name, and is never "(none)".
func TestPromptsCarryOnlyWhatTheSettingShows(t *testing.T) {
	for _, g := range goldenCases() {
		t.Run(g.file, func(t *testing.T) {
			req := g.render(t)
			if req == nil {
				return
			}
			allowed := g.setting.Visible(g.call.consumer)
			user := unfenced(req.Messages[1].Content)
			bodies := sectionTitle.Split(user, -1)[1:]
			for i, m := range sectionTitle.FindAllStringSubmatch(user, -1) {
				title, body := m[1], strings.TrimSpace(bodies[i])
				e, known := evidenceOf(title)
				if !known {
					t.Errorf("section %q is not mapped to the evidence it carries; add it to sectionEvidence", title)
					continue
				}
				if e == nil || allowed.Has(*e) {
					continue
				}
				if !strings.Contains(body, "withheld by the setting verifier_feedback") {
					t.Errorf("section %q carries %s, which %+v does not show, and does not say it is withheld:\n%s", title, e, g.setting, body)
				}
			}
			if g.call.role == "advisor" {
				for _, claim := range []struct {
					text string
					e    conditions.Evidence
				}{{"outcome of iteration", conditions.EvidenceOutcome}, {"it was proposed from", conditions.EvidenceProposalEvidence}} {
					if strings.Contains(user, claim.text) && !allowed.Has(claim.e) {
						t.Errorf("the Advisor's prompt shows %q, which the setting hides", claim.text)
					}
				}
				if strings.Contains(user, "pending") {
					t.Error("the Advisor's prompt says pending where it could say what is known")
				}
			}
		})
	}
}

func evidenceOf(title string) (*conditions.Evidence, bool) {
	for _, s := range sectionEvidence {
		if strings.HasPrefix(title, s.prefix) {
			return s.e, true
		}
	}
	return nil, false
}

// unfenced is a prompt with the contents of its fenced blocks left out: a
// quoted skill's headings are data, not sections of the prompt.
func unfenced(text string) string {
	var b strings.Builder
	fence := ""
	for _, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence == "" && strings.HasPrefix(trimmed, "```"):
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
		case fence != "" && trimmed == fence:
			fence = ""
		case fence == "":
			b.WriteString(line)
		}
	}
	return b.String()
}
