package mediator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/prompt"
)

// KindShare is the Mediator's decision, in a network of labs, on what to
// send one neighbouring lab.
const KindShare llm.Kind = "share"

const schemaShare = "share"

// What a share decision sends.
const (
	ShareSkillDiff = "skill_diff" // lines of the executor skill to add
	ShareNote      = "note"       // a short distilled lesson
)

// ShareInput is what the Mediator sees when deciding what to send.
type ShareInput struct {
	From, To  string
	Iteration int
	// Adopted are the lines the lab's executor skill gained since the last
	// barrier; empty when nothing was adopted.
	Adopted string
	// Reports are the Mediator's own reports since the last barrier.
	Reports []string
	// Skill is the lab's executor skill as it now is; First says this is
	// the network's first exchange.
	Skill string
	First bool
	// BudgetTokens caps what is sent; the content is cut at four
	// characters a token.
	BudgetTokens int
}

// ShareAnswer is the Mediator's decision for one neighbour.
type ShareAnswer struct {
	Send    bool   `json:"send"`
	Kind    string `json:"kind"`
	Content string `json:"content"`
	Reason  string `json:"reason"`
}

// Validate checks that a decision to send says what and in which form.
func (a ShareAnswer) Validate() error {
	if strings.TrimSpace(a.Reason) == "" {
		return errors.New("share decision has no reason")
	}
	if !a.Send {
		return nil
	}
	if a.Kind != ShareSkillDiff && a.Kind != ShareNote {
		return fmt.Errorf("share kind %q is neither %q nor %q", a.Kind, ShareSkillDiff, ShareNote)
	}
	if strings.TrimSpace(a.Content) == "" {
		return errors.New("share decision sends nothing: content is empty")
	}
	return nil
}

func shareSchema() map[string]any {
	return objectSchema(map[string]any{
		"send":    boolean(),
		"kind":    str(`"skill_diff" (lines to add to the executor skill) or "note" (a short lesson); ignored when send is false`),
		"content": str("what is sent; empty when send is false"),
		"reason":  str("why this, or why nothing"),
	})
}

const shareHeader = `Your lab is one of several labs working on the same tasks. At each exchange you decide what, if
anything, to send one neighbouring lab: lines your executor skill gained (a skill diff), a short lesson distilled
from your reports (a note), or nothing. The receiving lab's own reviewers decide whether to use it. Send only what
would help a lab that lacks it, and keep within the budget.`

// Share decides what the lab sends one neighbour at a diffusion barrier.
// The content is cut to the token budget.
func (m *Mediator) Share(ctx context.Context, protocol string, in ShareInput) (ShareAnswer, error) {
	var p prompt.Builder
	p.Section("Your answer", fmt.Sprintf("Budget: at most %d tokens of content. Neighbour: lab %s.", in.BudgetTokens, in.To))
	if in.Skill != "" {
		p.Section("Your lab's executor skill", prompt.Cap(in.Skill, plannerMaxSkillChars))
	}
	if in.Adopted != "" {
		p.Section("Lines your executor skill gained since the last exchange", in.Adopted)
	}
	if len(in.Reports) > 0 {
		p.Section("Your reports since the last exchange", prompt.Cap(strings.Join(in.Reports, "\n---\n"), 8000))
	}
	iter := strconv.Itoa(in.Iteration)
	ans, _, err := ask(ctx, m.Client, call[ShareAnswer]{
		What:       fmt.Sprintf("share decision of lab %s for lab %s after iteration %d", in.From, in.To, in.Iteration),
		Kind:       KindShare,
		Caller:     m.Caller,
		Seed:       prompt.Seed(m.Seed, string(KindShare), in.From, in.To, iter),
		System:     prompt.System(mediatorRole, protocol, shareHeader),
		User:       p.String(),
		Schema:     shareSchema(),
		SchemaName: schemaShare,
		Fallback:   ShareAnswer{Reason: ReasonInvalidOutput},
		Offline:    func(int64) ShareAnswer { return offlineShare(in) },
	})
	if err != nil {
		return ShareAnswer{}, err
	}
	if in.BudgetTokens > 0 {
		ans.Content, _ = prompt.Clip(strings.TrimSpace(ans.Content), 4*in.BudgetTokens)
	}
	return ans, nil
}

// offlineShare sends what the lab adopted; failing that, at the first
// exchange, the diligence lesson its skill carries; or the lesson when a
// report shows a missing output; else nothing.
func offlineShare(in ShareInput) ShareAnswer {
	if strings.TrimSpace(in.Adopted) != "" {
		return ShareAnswer{Send: true, Kind: ShareSkillDiff, Content: in.Adopted,
			Reason: "My lab adopted these lines through its gate; a lab without them may gain from them."}
	}
	if in.First && strings.Contains(in.Skill, executor.DiligenceAdvice) {
		return ShareAnswer{Send: true, Kind: ShareNote, Content: executor.DiligenceAdvice,
			Reason: "My lab's skill carries this lesson; a lab without it may gain from it."}
	}
	for _, r := range in.Reports {
		if missingOutput.MatchString(r) {
			return ShareAnswer{Send: true, Kind: ShareNote, Content: executor.DiligenceAdvice,
				Reason: "My reports show trials losing reward to missing output files."}
		}
	}
	return ShareAnswer{Reason: "Nothing adopted and no lesson in my reports worth a neighbour's attention."}
}
