package mediator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/prompt"
	"github.com/mediated-coevo/harness/skills"
)

// Reflection outcomes.
const (
	OutcomeUpdated    = "updated"     // Content is a new skill to adopt
	OutcomeNoChange   = "no_change"   // the Reflector chose to keep the skill
	OutcomeTooSimilar = "too_similar" // the rewrite was too close to the current skill to count
	OutcomeInvalid    = "invalid"     // the output was unusable twice (e.g. not a valid SKILL.md)
	OutcomeNoPairs    = "no_pairs"    // nothing to learn from; no model call was made
)

// Reflector rewrites a meta-skill (the Planner's or the Mediator's) from
// contrastive pairs of its history entries.
type Reflector struct {
	Client *llm.Client
	// Caller is the ledger path calls are charged to.
	Caller string
	// MinChangedWords: a rewrite that changes fewer words than this (see
	// ChangedWords) is nearly identical and skipped as too similar; a
	// rewrite identical up to whitespace always is.
	MinChangedWords int
	Seed            int64
}

// Reflection is the result of one reflection.
type Reflection struct {
	// Changed is set only with Outcome "updated"; Content is then the new SKILL.md.
	Changed bool
	// Content is the rewrite the model produced (also when it was not
	// adopted, for the record); empty for no_change, no_pairs and invalid.
	Content   string
	Reasoning string
	// Similarity of the rewrite to the current skill and the words it
	// changes; 0 when there was none.
	Similarity   float64
	ChangedWords int
	Outcome      string
	// FellBack is set when the output was unusable twice (Outcome "invalid").
	FellBack bool
}

const reflectorHeader = `You are the Reflector of a research lab of LLM agents. You improve the %s skill: %s
You are shown the current skill and contrastive pairs: two outputs of the %s whose delayed rewards (the
score of the next attempt at the task they fed) differ, the worse and the better side by side, each with
the result of its own trial and what it was written from where these are known. Find what
the better outputs do that the worse ones do not, and rewrite the skill so the %s does more of it.
Keep what works; change only what the evidence supports; keep the skill general (no task-specific answers).
If the pairs teach nothing the skill does not already say, set no_change to true.
Otherwise return the complete rewritten SKILL.md in content: YAML front matter between --- lines with the
same name and a description, then the Markdown body. Answer with one JSON object with the fields
no_change (true or false), content and reasoning (what the pairs taught).`

var roleDuties = map[conditions.Role]string{
	conditions.RolePlanner:  "the instructions the Planner follows to write a plan for each trial and to propose edits to the Executor's skill.",
	conditions.RoleMediator: "the protocol the Mediator follows to turn one execution trace into a report for the Planner, or to withhold it.",
}

// Reflect asks the Reflector to rewrite the skill of role (the Planner's or
// the Mediator's) from pairs. Without pairs no call is made (no_pairs). A
// rewrite must parse as a skill (skills.Parse) and keep the skill's name;
// otherwise it is asked for once more and then given up (invalid, FellBack).
// A valid rewrite too similar to the current skill is not adopted.
func (r *Reflector) Reflect(ctx context.Context, role conditions.Role, currentSkill string, pairs []Pair) (Reflection, error) {
	duty, ok := roleDuties[role]
	if !ok {
		return Reflection{}, fmt.Errorf("reflect on role %q: only the %s and %s skills are reflected on", role, conditions.RolePlanner, conditions.RoleMediator)
	}
	if len(pairs) == 0 {
		return Reflection{Outcome: OutcomeNoPairs, Reasoning: "no contrastive pairs with a large enough reward gap"}, nil
	}

	skill := prompt.Cap(currentSkill, maxSkillChars)
	// Stable-first: the skill and the fixed request, then these pairs.
	var p prompt.Builder
	p.Line("# Reflection on the %s skill", role)
	p.Section("Current "+string(role)+" skill", prompt.Fence(skill))
	p.Section("Your answer", "Either no_change with your reasoning, or the complete rewritten SKILL.md in content.")
	lines := make([]string, 0, len(pairs))
	for i, pr := range pairs {
		p.Section(pairTitle(i, len(pairs), pr), renderPair(pr))
		lines = append(lines, pairLine(pr))
	}
	pairText := strings.Join(lines, "\n")

	currentName := ""
	if s, err := skills.Parse([]byte(currentSkill)); err == nil {
		currentName = s.Name
	}
	validate := func(a ReflectionAnswer) error {
		if a.NoChange {
			return nil
		}
		return checkRewrite(prompt.CleanSkill(a.Content), currentName)
	}
	ans, fellBack, err := ask(ctx, r.Client, call[ReflectionAnswer]{
		What:       fmt.Sprintf("reflect on the %s skill", role),
		Kind:       KindReflection,
		Caller:     r.Caller,
		Seed:       prompt.Seed(r.Seed, string(KindReflection), string(role), pairIDs(pairs)),
		System:     fmt.Sprintf(reflectorHeader, role, duty, role, role),
		User:       p.String(),
		Schema:     reflectionSchema(),
		SchemaName: schemaReflection,
		Validate:   validate,
		Fallback:   ReflectionAnswer{NoChange: true},
		Offline:    func(int64) ReflectionAnswer { return offlineReflection(string(role), skill, pairText) },
	})
	if err != nil {
		return Reflection{}, err
	}
	out := Reflection{Reasoning: strings.TrimSpace(ans.Reasoning)}
	switch {
	case fellBack:
		out.Outcome, out.FellBack = OutcomeInvalid, true
		out.Reasoning = "reflector output invalid"
		return out, nil
	case ans.NoChange:
		out.Outcome = OutcomeNoChange
		return out, nil
	}
	out.Content = prompt.CleanSkill(ans.Content)
	out.Similarity = Similarity(currentSkill, out.Content)
	out.ChangedWords = ChangedWords(currentSkill, out.Content)
	if out.ChangedWords == 0 || out.ChangedWords < r.MinChangedWords {
		out.Outcome = OutcomeTooSimilar
		return out, nil
	}
	out.Outcome, out.Changed = OutcomeUpdated, true
	return out, nil
}

// checkRewrite accepts a rewritten skill that parses strictly and, when
// the current skill has a name, keeps it.
func checkRewrite(content, name string) error {
	if strings.TrimSpace(content) == "" {
		return errors.New("content is empty; give the complete SKILL.md or set no_change")
	}
	s, err := skills.Parse([]byte(content))
	if err != nil {
		return fmt.Errorf("the rewritten SKILL.md is not valid: %w", err)
	}
	if name != "" && s.Name != name {
		return fmt.Errorf("the rewrite renames the skill from %q to %q; keep name: %s", name, s.Name, name)
	}
	return nil
}

func pairTitle(i, n int, pr Pair) string {
	where := "task " + pr.Better.TaskID
	if pr.CrossTask {
		where = "tasks " + pr.Worse.TaskID + " (worse) and " + pr.Better.TaskID + " (better)"
	}
	return fmt.Sprintf("Pair %d of %d: %s, reward gap %.3f", i+1, n, where, pr.Gap)
}

func renderPair(pr Pair) string {
	side := func(label string, e PairEntry) string {
		kind := ""
		if e.Kind != "" {
			kind = " (" + e.Kind + ")"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "### %s: entry %s%s, task %s, iteration %d, delayed reward %.3f\n\n",
			label, e.ID, kind, e.TaskID, e.Iteration, e.Reward)
		if e.Outcome.Known() {
			fmt.Fprintf(&b, "its own trial: %s\n\n", e.Outcome.Text())
		}
		if src := strings.TrimSpace(e.Source); src != "" {
			fmt.Fprintf(&b, "written from:\n%s\n\n", prompt.Fence(prompt.Cap(src, maxEntryChars)))
		}
		fmt.Fprintf(&b, "the entry:\n%s", prompt.Fence(prompt.Cap(e.Content, maxEntryChars)))
		return b.String()
	}
	return side("Worse", pr.Worse) + "\n\n" + side("Better", pr.Better)
}

// pairLine is a pair on one line, the form the offline Reflector learns from.
func pairLine(pr Pair) string {
	return fmt.Sprintf("task %s: worse (reward %.3f): %s | better (reward %.3f): %s",
		pr.Better.TaskID, pr.Worse.Reward, prompt.CapLine(pr.Worse.Content, maxPairLineChars/2),
		pr.Better.Reward, prompt.CapLine(pr.Better.Content, maxPairLineChars/2))
}

func pairIDs(pairs []Pair) string {
	ids := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		ids = append(ids, p.Better.ID, p.Worse.ID)
	}
	return strings.Join(ids, ",")
}

// KindReflection is the kind of the Reflector's call: rewrite a meta-skill.
const KindReflection llm.Kind = "reflection"

const schemaReflection = "reflection"

// ReflectionAnswer is the Reflector's rewrite of a meta-skill.
type ReflectionAnswer struct {
	NoChange  bool   `json:"no_change"`
	Content   string `json:"content"`
	Reasoning string `json:"reasoning"`
}

func reflectionSchema() map[string]any {
	return objectSchema(map[string]any{
		"no_change": boolean(),
		"content":   str("the complete rewritten SKILL.md; empty when no_change"),
		"reasoning": str("what the pairs taught"),
	})
}

// Validate checks a change carries a full SKILL.md.
func (a ReflectionAnswer) Validate() error {
	if a.NoChange {
		return nil
	}
	return checkSkillText(a.Content)
}

// offlineReflection replaces the skill's Lessons section with up to three
// of the pairs (pairLine form, one per line).
func offlineReflection(role, skill, pairs string) ReflectionAnswer {
	pairs = strings.TrimSpace(pairs)
	if pairs == "" {
		return ReflectionAnswer{NoChange: true, Reasoning: "No contrastive pairs to learn from."}
	}
	var lessons []string
	n := 0
	for _, line := range strings.Split(pairs, "\n") {
		line = prompt.OneLine(line)
		if line == "" {
			continue
		}
		n++
		if len(lessons) < 3 {
			lessons = append(lessons, "- Compare with this contrast before acting: "+llm.Truncate(line, 160))
		}
	}
	section := "## Lessons\n\n" + strings.Join(lessons, "\n") + "\n"
	return ReflectionAnswer{
		Content:   replaceSection(ensureFrontMatter(skill, role), "## Lessons", section),
		Reasoning: fmt.Sprintf("Derived %d lessons from %d lines of contrastive pairs.", len(lessons), n),
	}
}
