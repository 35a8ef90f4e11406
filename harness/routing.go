package harness

import (
	"context"
	"fmt"
	"sort"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/mediator"
)

// studentEvidence is what one trial left that routing may pass from its
// student to another: the feedback its proposal was written from, its
// outcome, and the proposal itself when one was made.
type studentEvidence struct {
	student, trialID, taskID string
	iteration                int
	feedback                 string
	outcome                  mediator.Outcome
	proposal                 *mediator.Proposal
}

// route passes the iteration's evidence between students under pooled or
// mediated routing, before the proposals are buffered: each item that
// reaches a student's own skill joins that skill's proposals, as a
// proposal that names where it came from, and is recorded in the history
// (kind route). Only own skills receive items: the lab's shared skill
// keeps evolving from its own students' proposals.
func (r *Run) route(ctx context.Context, it int, done *iterationOutcome) error {
	routing := r.Spec.Routing.Or()
	if !routing.Shares() || len(r.lines) == 0 || len(done.evidence) == 0 {
		return nil
	}
	evidence := done.evidence
	sort.Slice(evidence, func(a, b int) bool { return evidence[a].trialID < evidence[b].trialID })
	for _, l := range r.lines {
		var own, others []studentEvidence
		for _, ev := range evidence {
			if ev.student == l.student {
				own = append(own, ev)
			} else {
				others = append(others, ev)
			}
		}
		routes, err := r.routesFor(ctx, it, l, routing, own, others)
		if err != nil {
			return err
		}
		for _, rt := range routes {
			p, err := r.recordRoute(it, l.student, rt)
			if err != nil {
				return err
			}
			if done.ownProposals == nil {
				done.ownProposals = map[string][]mediator.Proposal{}
			}
			done.ownProposals[l.student] = append(done.ownProposals[l.student], p)
		}
	}
	return nil
}

// routedItem is one item on its way to a student.
type routedItem struct {
	ev     studentEvidence
	form   string
	note   string
	reason string
}

// routesFor decides what of the others' evidence reaches line l: under
// pooled every proposal, under mediated what the Mediator chooses.
func (r *Run) routesFor(ctx context.Context, it int, l skillLine, routing conditions.Routing, own, others []studentEvidence) ([]routedItem, error) {
	if routing == conditions.RoutingPooled {
		var out []routedItem
		for _, ev := range others {
			if ev.proposal != nil {
				out = append(out, routedItem{ev: ev, form: mediator.FormPooled,
					reason: "pooled routing: every student's proposals reach every student"})
			}
		}
		return out, nil
	}
	allowed := r.visible(conditions.ConsumerRouter)
	if allowed.Empty() {
		return nil, nil
	}
	skill, err := l.store.Read(conditions.RoleExecutor)
	if err != nil {
		return nil, fmt.Errorf("read the executor skill of student %s: %w", l.student, err)
	}
	protocol, err := r.store.Read(conditions.RoleMediator)
	if err != nil {
		return nil, fmt.Errorf("read the mediator skill: %w", err)
	}
	in := mediator.RouteInput{To: l.student, Iteration: it, MaxItems: r.Config.Mediator.RouteBudget(),
		MaxChars: r.Config.Experiment.ReportMaxChars,
		Protocol: shown(allowed, conditions.EvidenceMediatorSkill, string(protocol.Content)),
		Skill:    shown(allowed, conditions.EvidenceExecutorSkill, string(skill.Content)),
		Own:      routeItems(allowed, own), Others: routeItems(allowed, others)}
	med := *r.mediator
	med.Caller = rundir.RouteCaller(l.student, it).String()
	routes, _, err := med.Route(ctx, in)
	if err != nil {
		if r.stopsRun(ctx, err) {
			return nil, fmt.Errorf("route evidence to student %s: %w", l.student, err)
		}
		// A Mediator whose model failed for good routes nothing this time.
		return nil, nil
	}
	byTrial := map[string]studentEvidence{}
	for _, ev := range others {
		byTrial[ev.trialID] = ev
	}
	var out []routedItem
	for _, rt := range routes {
		out = append(out, routedItem{ev: byTrial[rt.Item.ID], form: rt.Form, note: rt.Note, reason: rt.Reason})
	}
	return out, nil
}

// routeItems is evidence as the routing call may see it.
func routeItems(allowed conditions.EvidenceSet, evs []studentEvidence) []mediator.RouteItem {
	var out []mediator.RouteItem
	for _, ev := range evs {
		it := mediator.RouteItem{ID: ev.trialID, From: ev.student, TaskID: ev.taskID, Iteration: ev.iteration,
			Feedback: shown(allowed, conditions.EvidenceProposalEvidence, ev.feedback)}
		if allowed.Has(conditions.EvidenceOutcome) {
			it.Outcome = ev.outcome
		}
		if ev.proposal != nil && allowed.Has(conditions.EvidenceProposals) {
			p := *ev.proposal
			if !allowed.Has(conditions.EvidenceProposalEvidence) {
				p.Digest, p.DigestKind = "", ""
			}
			it.Proposal = &p
		}
		out = append(out, it)
	}
	return out
}

// recordRoute writes a routed item to the history, with its provenance,
// and returns it as a proposal for the receiving student's skill: the
// forwarded or pooled proposal, or the note as an edit to append.
func (r *Run) recordRoute(it int, to string, rt routedItem) (mediator.Proposal, error) {
	ev := rt.ev
	id := fmt.Sprintf("%s/i%04d/%s/route-%s-from-%s", r.Spec.Name, it, ev.taskID, to, ev.student)
	p := mediator.Proposal{ID: id, TaskID: ev.taskID, Student: ev.student, Iteration: it, Outcome: ev.outcome,
		From: ev.student, FromTrial: ev.trialID, Routed: rt.form, RouteReason: rt.reason}
	if ev.proposal != nil {
		p.EntryIDs = []string{ev.proposal.ID}
	}
	switch {
	case rt.form == mediator.FormNote:
		p.NewContent, p.Reasoning = rt.note, rt.reason
	case ev.proposal != nil:
		src := *ev.proposal
		p.OldContent, p.NewContent, p.Reasoning = src.OldContent, src.NewContent, src.Reasoning
		p.Digest, p.DigestKind = src.Digest, src.DigestKind
	}
	role := conditions.RoleMediator
	if rt.form == mediator.FormPooled {
		role = conditions.RolePlanner // passed on unchosen: the proposal is the Planner's
	}
	err := r.history.Add(rundir.Entry{ID: id, Role: string(role), Kind: rundir.EntryRoute, TaskID: ev.taskID, Iteration: it,
		Content: p.NewContent, TrialID: ev.trialID, Trial: trialOutcomeOf(ev.outcome),
		From: ev.student, To: to, Form: rt.form, Reason: rt.reason})
	if err != nil {
		return mediator.Proposal{}, fmt.Errorf("record the item routed from student %s to %s: %w", ev.student, to, err)
	}
	return p, nil
}

// trialOutcomeOf is an outcome as a history entry records it.
func trialOutcomeOf(o mediator.Outcome) *rundir.TrialOutcome {
	if !o.Known() {
		return nil
	}
	return &rundir.TrialOutcome{Status: o.Status, Reward: o.Reward, TestsPassed: o.TestsPassed,
		TestsFailed: o.TestsFailed, TestsTotal: o.TestsTotal}
}
