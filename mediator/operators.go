package mediator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/prompt"
	"github.com/mediated-coevo/harness/skills"
)

// Operator names how a tournament candidate is drafted from an approved
// batch.
type Operator string

// The operators, in the order a tournament uses them.
const (
	// OperatorRefine is the ordinary draft: the approved edits merged as
	// the Advisor suggests (Planner.Draft).
	OperatorRefine Operator = "refine"
	// OperatorCombine merges the current skill with another candidate: the
	// best pooled or earlier candidate, else this batch's refinement.
	OperatorCombine Operator = "combine"
	// OperatorSimplify states the refinement's intent in fewer words.
	OperatorSimplify Operator = "simplify"
	// OperatorExplore rewrites the skill around the batch's lessons, free
	// of its present structure.
	OperatorExplore Operator = "explore"
)

// Operators lists the operators in the order a tournament cycles through.
func Operators() []Operator {
	return []Operator{OperatorRefine, OperatorCombine, OperatorSimplify, OperatorExplore}
}

// KindSkillVariant is the kind of a draft by an operator other than refine.
const KindSkillVariant llm.Kind = "skill_variant"

// VariantInput is what the Planner sees when it drafts a candidate with an
// operator other than refine.
type VariantInput struct {
	Operator     Operator
	BatchID      string
	CurrentSkill string
	Proposals    []Proposal
	Advice       string
	// Partner is the other candidate combine merges with, and simplify
	// shortens; empty for explore.
	Partner string
	// Index tells candidates of one batch apart in the seed.
	Index int
}

var variantHeaders = map[Operator]string{
	OperatorCombine: `Combine: merge the current skill with the other candidate shown, keeping the strongest guidance of each
and the approved edits, without duplicates.`,
	OperatorSimplify: `Simplify: rewrite the other candidate shown so it says the same with fewer words: drop repetition and
filler, merge overlapping rules, keep every instruction that changes what the Executor does.`,
	OperatorExplore: `Explore: write an out-of-the-box rewrite of the skill around the lessons of the approved edits: a
different structure or approach is welcome, as long as it stays general and the evidence supports it.`,
}

const variantFrame = `You are the Planner (the PI) of a research lab of LLM agents. The Advisor approved a batch of proposed
edits to the Executor's skill, and several candidate updates are drafted from it to be compared. Draft one
candidate as asked below: the complete new SKILL.md, with the YAML front matter (same name, a description)
between --- lines at the very top. Answer with one JSON object with the field content.`

// Vary drafts one candidate with in.Operator (not refine, which is Draft).
// The candidate must be a valid skill keeping the current name; unusable
// output twice returns the current skill with fellBack set.
func (p *Planner) Vary(ctx context.Context, in VariantInput) (content string, fellBack bool, err error) {
	header, ok := variantHeaders[in.Operator]
	if !ok {
		return "", false, fmt.Errorf("draft a variant for batch %s: unknown operator %q (use combine, simplify or explore; refine is Draft)", in.BatchID, in.Operator)
	}
	if len(in.Proposals) == 0 {
		return "", false, fmt.Errorf("draft a %s variant for batch %s: the batch has no proposals", in.Operator, in.BatchID)
	}
	skill := prompt.Cap(in.CurrentSkill, plannerMaxSkillChars)
	var b prompt.Builder
	b.Section("Current executor skill", prompt.Fence(skill))
	b.Section("Your answer", "The complete new SKILL.md, front matter included, in content.")
	b.Text(fmt.Sprintf("\n# Candidate %d of batch %s (%s)\n", in.Index, in.BatchID, in.Operator))
	news := make([]string, 0, len(in.Proposals))
	for i, pr := range in.Proposals {
		b.Section(fmt.Sprintf("Approved proposal %d of %d", i+1, len(in.Proposals)), plannerProposal(pr))
		news = append(news, strings.TrimSpace(prompt.Cap(pr.NewContent, plannerMaxProposalChars)))
	}
	b.Section("Advisor's feedback", prompt.Cap(strings.TrimSpace(in.Advice), plannerMaxAdviceChars))
	if strings.TrimSpace(in.Partner) != "" {
		b.Section("Other candidate", prompt.Fence(prompt.Cap(in.Partner, plannerMaxSkillChars)))
	}
	name := ""
	if s, err := skills.Parse([]byte(in.CurrentSkill)); err == nil {
		name = s.Name
	}
	validate := func(a DraftAnswer) error {
		s, err := skills.Parse([]byte(prompt.CleanSkill(a.Content)))
		if err != nil {
			return fmt.Errorf("the candidate is not a valid SKILL.md: %w", err)
		}
		if name != "" && s.Name != name {
			return fmt.Errorf("the candidate renames the skill from %q to %q; keep name: %s", name, s.Name, name)
		}
		return nil
	}
	seed := prompt.Seed(p.Seed, string(KindSkillVariant), in.BatchID, string(in.Operator), fmt.Sprint(in.Index))
	ans, fellBack, err := ask(ctx, p.Client, call[DraftAnswer]{
		What:       fmt.Sprintf("draft a %s candidate for batch %s", in.Operator, in.BatchID),
		Kind:       KindSkillVariant,
		Caller:     p.Caller,
		Seed:       seed,
		System:     variantFrame + "\n\n" + header,
		User:       b.String(),
		Schema:     draftSchema(),
		SchemaName: schemaDraft,
		Validate:   validate,
		Fallback:   DraftAnswer{Content: in.CurrentSkill},
		Offline: func(int64) DraftAnswer {
			return DraftAnswer{Content: offlineVariant(in.Operator, skill, in.Partner, news)}
		},
	})
	if err != nil {
		return "", false, err
	}
	if fellBack {
		return in.CurrentSkill, true, nil
	}
	return prompt.CleanSkill(ans.Content), false, nil
}

// offlineVariant drafts a deterministic candidate for an operator: combine
// gathers the partner's lines the current skill lacks under a heading of
// their own, simplify closes up the partner's paragraphs, explore puts the
// batch's lessons under a heading of their own.
func offlineVariant(op Operator, skill, partner string, news []string) string {
	skill = ensureFrontMatter(skill, "")
	switch op {
	case OperatorCombine:
		var add []string
		for _, l := range strings.Split(partnerBody(partner)+"\n"+strings.Join(news, "\n"), "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") && !strings.Contains(skill, t) && !slices.Contains(add, t) {
				add = append(add, t)
			}
		}
		return replaceSection(skill, "## Combined guidance", "## Combined guidance\n\n"+strings.Join(add, "\n")+"\n")
	case OperatorSimplify:
		base := offlineDraft(skill, strings.Join(news, "\n"))
		if strings.TrimSpace(partner) != "" {
			base = ensureFrontMatter(partner, "")
		}
		return simplifyLines(base)
	default:
		var lessons []string
		for _, n := range news {
			if t := prompt.OneLine(n); t != "" && !slices.Contains(lessons, "- "+t) {
				lessons = append(lessons, "- "+t)
			}
		}
		return replaceSection(skill, "## Lessons first", "## Lessons first\n\n"+strings.Join(lessons, "\n")+"\n")
	}
}

// partnerBody is a candidate's text after its front matter.
func partnerBody(text string) string {
	if s, err := skills.Parse([]byte(text)); err == nil {
		return s.Body
	}
	return text
}

// simplifyLines drops repeated lines and the blank lines inside the body
// that do not precede a heading, so paragraphs close up; when that changes
// nothing, it drops the body's last line.
func simplifyLines(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var out []string
	seen := map[string]bool{}
	fences := 0
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if t == "---" {
			fences++
		}
		body := fences >= 2 && t != "---"
		next := ""
		if i+1 < len(lines) {
			next = strings.TrimSpace(lines[i+1])
		}
		if body && (t == "" && !strings.HasPrefix(next, "#") && len(out) > 0 || t != "" && !strings.HasPrefix(t, "#") && seen[t]) {
			continue
		}
		seen[t] = true
		out = append(out, l)
	}
	if len(out) == len(lines) && len(out) > 0 && checkSkillText(strings.Join(out[:len(out)-1], "\n")+"\n") == nil {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n") + "\n"
}
