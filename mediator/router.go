package mediator

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/prompt"
)

// The forms a routed item takes on its way to a student.
const (
	// FormNote is a note the Mediator distilled from the item's evidence.
	FormNote = "note"
	// FormProposal forwards the item's proposal as it was written.
	FormProposal = "proposal"
	// FormPooled marks an item pooled routing passed on unchosen.
	FormPooled = "pooled"
)

// RouteItem is one trial's evidence the Mediator may route from the
// student who made it to another: the trial's outcome, the feedback the
// Planner proposed from, and the proposal, when one was made.
type RouteItem struct {
	// ID names the item in the prompt and the answer: its trial id.
	ID        string
	From      string
	TaskID    string
	Iteration int
	Outcome   Outcome
	// Feedback is the report or trace summary of the trial; empty when
	// the setting does not show it.
	Feedback string
	// Proposal is the edit of the student's skill proposed after the
	// trial; nil when none was.
	Proposal *Proposal
}

// RouteInput is what the Mediator decides one student's routing from.
type RouteInput struct {
	// To is the student whose own executor skill the items would reach.
	To        string
	Iteration int
	// Protocol is the Mediator's own skill.
	Protocol string
	// Skill is To's executor skill as it stands.
	Skill string
	// Own is To's own evidence this iteration; Others every other
	// student's, the items that may be routed.
	Own, Others []RouteItem
	// MaxItems is the most items that may reach To ([mediator]
	// route_items); MaxChars caps a note (<= 0: no cap).
	MaxItems, MaxChars int
}

// Route is one item the Mediator routed to a student.
type Route struct {
	Item RouteItem
	// Form is FormNote or FormProposal.
	Form string
	// Note is the distilled note (FormNote), cut to MaxChars.
	Note   string
	Reason string
}

// KindRoute is the kind of the Mediator's routing call.
const KindRoute llm.Kind = "route"

const schemaRoute = "route"

const routerHeader = `You are the Mediator of a research lab of LLM agents, in which several students (Executor agents,
possibly different models) each keep their own executor skill. After each iteration you read what every
student's trials produced (outcomes, the feedback each proposal was written from, the proposed edits) and
decide, for one student at a time, which items of the others' evidence should reach that student's skill
evolution: forwarded as the proposal it is, or distilled into a short note. Route only what the student
lacks and can use; routing nothing is a valid decision. Stay within the budget. Answer with one JSON object
with the fields routes (a list of objects with item, form ("note" or "proposal"), note (the note; empty for a
forwarded proposal) and reason) and reasoning.`

// RouteAnswer is the Mediator's routing decision for one student.
type RouteAnswer struct {
	Routes    []RouteDecision `json:"routes"`
	Reasoning string          `json:"reasoning"`
}

// RouteDecision is one routed item in the answer.
type RouteDecision struct {
	Item   string `json:"item"`
	Form   string `json:"form"`
	Note   string `json:"note"`
	Reason string `json:"reason"`
}

func routeSchema() map[string]any {
	return objectSchema(map[string]any{
		"routes": map[string]any{"type": "array", "items": objectSchema(map[string]any{
			"item":   str("the id of an item of another student's evidence"),
			"form":   map[string]any{"type": "string", "enum": []string{FormNote, FormProposal}},
			"note":   str("the distilled note for a note; empty for a forwarded proposal"),
			"reason": str("why this item should reach the student"),
		})},
		"reasoning": str("why these items, or why none"),
	})
}

// Route asks the Mediator which of the other students' items reach
// in.To. Unusable output twice routes nothing, with fellBack set.
func (m *Mediator) Route(ctx context.Context, in RouteInput) (routes []Route, fellBack bool, err error) {
	if len(in.Others) == 0 {
		return nil, false, nil
	}
	var p prompt.Builder
	p.Section("Your answer", fmt.Sprintf("Budget: at most %d items for student %s; a note has at most %s. "+
		"Choose the items of the other students' evidence below that student %s lacks and can use, each with the form "+
		"it should arrive in and your reason.", in.MaxItems, in.To, charsText(in.MaxChars), in.To))
	p.Text(fmt.Sprintf("\n# Routing to student %s after iteration %d\n", in.To, in.Iteration))
	p.Section(fmt.Sprintf("Executor skill of student %s", in.To), prompt.Fence(prompt.Cap(in.Skill, maxSkillChars)))
	p.Section(fmt.Sprintf("Evidence of student %s (its own)", in.To), renderItems(in.Own))
	p.Section("Evidence of the other students (the items you may route)", renderItems(in.Others))
	byID := map[string]RouteItem{}
	for _, it := range in.Others {
		byID[it.ID] = it
	}
	ans, fellBack, err := ask(ctx, m.Client, call[RouteAnswer]{
		What:       fmt.Sprintf("mediator routing to student %s after iteration %d", in.To, in.Iteration),
		Kind:       KindRoute,
		Caller:     m.Caller,
		Seed:       prompt.Seed(m.Seed, string(KindRoute), in.To, strconv.Itoa(in.Iteration)),
		System:     prompt.System(mediatorRole, in.Protocol, routerHeader),
		User:       p.String(),
		Schema:     routeSchema(),
		SchemaName: schemaRoute,
		Validate:   func(a RouteAnswer) error { return a.check(byID, in.MaxItems) },
		Fallback:   RouteAnswer{Reasoning: ReasonInvalidOutput},
		Offline:    func(int64) RouteAnswer { return offlineRoute(in) },
	})
	if err != nil {
		return nil, false, err
	}
	for _, d := range ans.Routes {
		r := Route{Item: byID[d.Item], Form: d.Form, Reason: strings.TrimSpace(d.Reason)}
		if d.Form == FormNote {
			r.Note, _ = prompt.Clip(strings.TrimSpace(d.Note), in.MaxChars)
		}
		routes = append(routes, r)
	}
	return routes, fellBack, nil
}

func charsText(n int) string {
	if n <= 0 {
		return "no fixed length (keep it short)"
	}
	return fmt.Sprintf("%d characters", n)
}

// check validates a routing answer against the items it may name.
func (a RouteAnswer) check(items map[string]RouteItem, max int) error {
	if len(a.Routes) > max {
		return fmt.Errorf("routes %d items, over the budget of %d", len(a.Routes), max)
	}
	seen := map[string]bool{}
	for _, d := range a.Routes {
		it, ok := items[d.Item]
		switch {
		case !ok:
			return fmt.Errorf("routes item %q, which is no item of another student", d.Item)
		case seen[d.Item]:
			return fmt.Errorf("routes item %q twice", d.Item)
		case d.Form != FormNote && d.Form != FormProposal:
			return fmt.Errorf("item %q has form %q; use note or proposal", d.Item, d.Form)
		case d.Form == FormProposal && it.Proposal == nil:
			return fmt.Errorf("item %q carries no proposal to forward; route it as a note", d.Item)
		case d.Form == FormNote && strings.TrimSpace(d.Note) == "":
			return fmt.Errorf("item %q is routed as a note with no note", d.Item)
		case strings.TrimSpace(d.Reason) == "":
			return fmt.Errorf("item %q is routed without a reason", d.Item)
		}
		seen[d.Item] = true
	}
	return nil
}

// renderItems lists items of evidence for the routing prompt.
func renderItems(items []RouteItem) string {
	if len(items) == 0 {
		return "(none this iteration)"
	}
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "item: %s\nstudent: %s\ntask: %s\n", it.ID, it.From, it.TaskID)
		if it.Outcome.Known() {
			fmt.Fprintf(&b, "outcome: %s\n", it.Outcome.Text())
		}
		if strings.TrimSpace(it.Feedback) != "" {
			fmt.Fprintf(&b, "feedback:\n%s\n", prompt.Fence(prompt.Cap(it.Feedback, maxDigestChars)))
		}
		if it.Proposal == nil {
			b.WriteString("proposal: none")
		} else {
			b.WriteString("proposal:\n" + it.Proposal.EditText(maxProposalChars))
		}
	}
	return b.String()
}

// offlineRoute stands in for the Mediator offline. It routes, to a
// student, what another student's evidence holds and the student's lacks:
// a proposed edit the student neither holds nor proposed, forwarded; or,
// from a trial that scored above the student's best, a note of its
// feedback. Better-scoring items go first, up to the budget.
func offlineRoute(in RouteInput) RouteAnswer {
	have := in.Skill
	best := -1.0
	for _, it := range in.Own {
		if it.Proposal != nil {
			have += "\n" + it.Proposal.NewContent
		}
		if it.Outcome.Reward != nil {
			best = max(best, *it.Outcome.Reward)
		}
	}
	cands := slices.Clone(in.Others)
	slices.SortStableFunc(cands, func(a, b RouteItem) int {
		return cmp.Or(cmp.Compare(reward(b), reward(a)), cmp.Compare(a.ID, b.ID))
	})
	var ans RouteAnswer
	for _, it := range cands {
		if len(ans.Routes) >= in.MaxItems {
			break
		}
		edit := ""
		if it.Proposal != nil {
			edit = strings.TrimSpace(it.Proposal.NewContent)
		}
		switch {
		case edit != "" && !strings.Contains(have, edit):
			ans.Routes = append(ans.Routes, RouteDecision{Item: it.ID, Form: FormProposal,
				Reason: fmt.Sprintf("student %s proposed an edit student %s neither holds nor proposed", it.From, in.To)})
			have += "\n" + edit
		case reward(it) > best && strings.TrimSpace(it.Feedback) != "":
			ans.Routes = append(ans.Routes, RouteDecision{Item: it.ID, Form: FormNote,
				Note:   fmt.Sprintf("On task %s student %s did better (%s): %s", it.TaskID, it.From, it.Outcome.Text(), firstLine(it.Feedback)),
				Reason: fmt.Sprintf("student %s scored above student %s's best this iteration", it.From, in.To)})
		}
	}
	if len(ans.Routes) == 0 {
		ans.Reasoning = "No other student's evidence holds anything this student lacks."
	} else {
		ans.Reasoning = fmt.Sprintf("Routed %d items student %s lacks.", len(ans.Routes), in.To)
	}
	return ans
}

// reward is an item's reward, -1 when it has none.
func reward(it RouteItem) float64 {
	if it.Outcome.Reward == nil {
		return -1
	}
	return *it.Outcome.Reward
}
