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

// KindIntake is the receiving Mediator's decision, in a network of labs,
// on whether an item another lab sent goes on to its lab's Advisor and
// Planner.
const KindIntake llm.Kind = "intake"

const schemaIntake = "intake"

// IntakeInput is an item as the receiving Mediator sees it.
type IntakeInput struct {
	From, To  string
	Iteration int
	Kind      string
	Content   string
	// Skill is the receiving lab's executor skill.
	Skill string
}

// IntakeAnswer is the receiving Mediator's decision on one item.
type IntakeAnswer struct {
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

// Validate checks that the decision gives its reason.
func (a IntakeAnswer) Validate() error {
	if strings.TrimSpace(a.Reason) == "" {
		return errors.New("intake decision has no reason")
	}
	return nil
}

const intakeHeader = `Your lab is one of several labs working on the same tasks. Another lab sent the item below. Decide
whether it goes on to your lab's Advisor and Planner as a proposal for your executor skill (they still review it
and validate it on your own models before anything changes), or is dropped: drop what your skill already says,
what is off the point, and what cannot help an executor.`

// Intake decides whether an item from another lab goes on to the lab's
// Advisor and Planner.
func (m *Mediator) Intake(ctx context.Context, protocol string, in IntakeInput) (IntakeAnswer, error) {
	var p prompt.Builder
	p.Section("Your answer", fmt.Sprintf("Item from lab %s (%s). Pass it on, or drop it, and say why.", in.From, in.Kind))
	p.Section("The item", prompt.Cap(in.Content, plannerMaxFeedbackChars))
	if in.Skill != "" {
		p.Section("Your lab's executor skill", prompt.Cap(in.Skill, plannerMaxSkillChars))
	}
	ans, _, err := ask(ctx, m.Client, call[IntakeAnswer]{
		What:   fmt.Sprintf("intake decision of lab %s on an item from lab %s after iteration %d", in.To, in.From, in.Iteration),
		Kind:   KindIntake,
		Caller: m.Caller,
		Seed:   prompt.Seed(m.Seed, string(KindIntake), in.From, in.To, strconv.Itoa(in.Iteration), in.Content),
		System: prompt.System(mediatorRole, protocol, intakeHeader),
		User:   p.String(), Schema: objectSchema(map[string]any{"pass": boolean(), "reason": str("why it goes on, or why not")}),
		SchemaName: schemaIntake,
		// An unusable answer passes the item on: the Advisor and the gate
		// still stand between it and the skill.
		Fallback: IntakeAnswer{Pass: true, Reason: ReasonInvalidOutput},
		Offline:  func(int64) IntakeAnswer { return offlineIntake(in) },
	})
	return ans, err
}

// offlineIntake drops an item whose lines the skill already holds and
// passes the rest on.
func offlineIntake(in IntakeInput) IntakeAnswer {
	missing := false
	for _, l := range strings.Split(in.Content, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.Contains(in.Skill, t) {
			missing = true
		}
	}
	if !missing {
		return IntakeAnswer{Reason: "My lab's skill already says this."}
	}
	return IntakeAnswer{Pass: true, Reason: "My lab's skill lacks this; the Advisor should weigh it."}
}
