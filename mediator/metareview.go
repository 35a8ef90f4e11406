package mediator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/prompt"
)

// KindMetaReview is the kind of the Reflector's meta-review: a short note
// of the critiques that keep coming back.
const KindMetaReview llm.Kind = "meta_review"

const schemaMetaReview = "meta_review"

// MetaReviewAnswer is the Reflector's note for the Planner.
type MetaReviewAnswer struct {
	Note string `json:"note"`
}

// Validate checks the note is there and short.
func (a MetaReviewAnswer) Validate() error {
	n := strings.TrimSpace(a.Note)
	if n == "" {
		return errors.New("meta-review note is empty")
	}
	if len(n) > MaxMetaReviewChars {
		return fmt.Errorf("meta-review note has %d characters; keep it under %d", len(n), MaxMetaReviewChars)
	}
	return nil
}

// MaxMetaReviewChars caps the note the Planner reads with its skill.
const MaxMetaReviewChars = 1500

// maxCritiques and maxCritiqueChars bound what one meta-review reads.
const (
	maxCritiques     = 30
	maxCritiqueChars = 500
)

const metaReviewHeader = `You are the Reflector of a research lab of LLM agents. You are shown the planner skill and the latest
critiques of the Executor's skill updates: the judge's reasons for preferring one candidate over another, the
Advisor's feedback on batches, and why batches or candidates were rejected. Summarise the critiques that keep
coming back into a short note (at most a few bullet points) the Planner will read with its skill when it
proposes and drafts edits. Name patterns, not single cases. Answer with one JSON object with the field note.`

// MetaReview summarises recurring critiques into a short note for the
// Planner. No critiques make no call and no note. Unusable output twice
// gives no note with fellBack set.
func (r *Reflector) MetaReview(ctx context.Context, iteration int, plannerSkill string, critiques []string) (note string, fellBack bool, err error) {
	var kept []string
	for _, c := range critiques {
		if strings.TrimSpace(c) != "" {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return "", false, nil
	}
	if len(kept) > maxCritiques {
		kept = kept[len(kept)-maxCritiques:]
	}
	var b prompt.Builder
	b.Section("Planner skill", prompt.Fence(prompt.Cap(plannerSkill, maxSkillChars)))
	b.Section("Your answer", "A short note of the recurring critiques, for the Planner.")
	b.Section(fmt.Sprintf("Critiques up to iteration %d", iteration), prompt.Bullets(kept, maxCritiques, maxCritiqueChars, prompt.Compact))
	seed := prompt.Seed(r.Seed, string(KindMetaReview), strconv.Itoa(iteration))
	ans, fellBack, err := ask(ctx, r.Client, call[MetaReviewAnswer]{
		What:       fmt.Sprintf("meta-review after iteration %d", iteration),
		Kind:       KindMetaReview,
		Caller:     r.Caller,
		Seed:       seed,
		System:     metaReviewHeader,
		User:       b.String(),
		Schema:     objectSchema(map[string]any{"note": str("the recurring critiques, a few bullet points")}),
		SchemaName: schemaMetaReview,
		Fallback:   MetaReviewAnswer{},
		Offline:    func(int64) MetaReviewAnswer { return offlineMetaReview(kept) },
	})
	if err != nil {
		return "", false, err
	}
	if fellBack {
		return "", true, nil
	}
	return strings.TrimSpace(ans.Note), false, nil
}

// offlineMetaReview lists the first three distinct critiques, each with
// how often it came.
func offlineMetaReview(critiques []string) MetaReviewAnswer {
	count := map[string]int{}
	var order []string
	for _, c := range critiques {
		l := prompt.Cap(firstLine(c), 200)
		if count[l] == 0 {
			order = append(order, l)
		}
		count[l]++
	}
	var b strings.Builder
	for i, l := range order {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, "- (%dx) %s\n", count[l], l)
	}
	return MetaReviewAnswer{Note: strings.TrimSpace(b.String())}
}

// WithMetaReview is the planner skill as the Planner reads it when a
// meta-review note exists: the skill, then the note under its own heading.
func WithMetaReview(plannerSkill, note string) string {
	if strings.TrimSpace(note) == "" {
		return plannerSkill
	}
	return strings.TrimRight(plannerSkill, "\n") + "\n\n## Meta-review: recurring critiques\n\n" + strings.TrimSpace(note) + "\n"
}
