package harness

import (
	"context"
	"fmt"
	"slices"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
)

// Exchange is what a lab hands its diffusion barrier once an iteration's
// evolution steps are done: what it adopted and what its Mediator reported.
type Exchange struct {
	Lab       string
	Seed      int64
	Iteration int
	// Adopted is set when the lab's executor skill changed this iteration:
	// the text before and after, and their hashes.
	Adopted *SkillChange
	// Reports are the Mediator's reports written this iteration.
	Reports []ReportItem
	// Skill is the lab's executor skill as it now is.
	Skill string
	// Share asks the lab's own Mediator what to send one neighbour (the
	// mediated treatment), and says what the call cost.
	Share func(ctx context.Context, in mediator.ShareInput) (mediator.ShareAnswer, llm.Usage, error)
}

// SkillChange is one adopted change of the lab's executor skill.
type SkillChange struct {
	Old, New         string
	OldHash, NewHash string
	// TaskIDs are the tasks whose proposals the change came from.
	TaskIDs []string
}

// ReportItem is one Mediator report of an iteration.
type ReportItem struct {
	EntryID string
	TaskID  string
	Content string
}

// BarrierFunc is called after each iteration's evolution steps and before
// its checkpoint. The proposals it returns enter the lab's executor-skill
// buffer, so they change the skill only through the lab's own Advisor and
// gate; they are checkpointed with the iteration, so a crash before the
// checkpoint runs the iteration, and the barrier, again.
type BarrierFunc func(ctx context.Context, x Exchange) ([]mediator.Proposal, error)

// exchangeBefore is the lab's executor skill when an iteration's evolution
// steps begin.
func (r *Run) exchangeBefore() (*skillSnapshot, error) {
	if r.Barrier == nil {
		return nil, nil
	}
	s, err := r.store.Read(conditions.RoleExecutor)
	if err != nil {
		return nil, fmt.Errorf("read the executor skill before evolution: %w", err)
	}
	return &skillSnapshot{text: string(s.Content), hash: s.Hash}, nil
}

type skillSnapshot struct{ text, hash string }

// diffuse calls the barrier with the iteration's exchange and buffers what
// it returns.
func (r *Run) diffuse(ctx context.Context, it int, before *skillSnapshot, batch []mediator.Proposal) error {
	if r.Barrier == nil {
		return nil
	}
	x := Exchange{Lab: r.Spec.Lab, Seed: r.Spec.Seed, Iteration: it}
	now, err := r.store.Read(conditions.RoleExecutor)
	if err != nil {
		return fmt.Errorf("read the executor skill after evolution: %w", err)
	}
	x.Skill = string(now.Content)
	if now.Hash != before.hash {
		ch := &SkillChange{Old: before.text, New: x.Skill, OldHash: before.hash, NewHash: now.Hash}
		for _, p := range batch {
			if !slices.Contains(ch.TaskIDs, p.TaskID) {
				ch.TaskIDs = append(ch.TaskIDs, p.TaskID)
			}
		}
		x.Adopted = ch
	}
	for _, e := range r.history.Entries(func(e *rundir.Entry) bool { return e.Kind == rundir.EntryReport && e.Iteration == it }) {
		x.Reports = append(x.Reports, ReportItem{EntryID: e.ID, TaskID: e.TaskID, Content: e.Content})
	}
	x.Share = func(ctx context.Context, in mediator.ShareInput) (mediator.ShareAnswer, llm.Usage, error) {
		return r.share(ctx, in)
	}
	in, err := r.Barrier(ctx, x)
	if err != nil {
		return fmt.Errorf("diffusion barrier after iteration %d: %w", it, err)
	}
	if !r.Spec.Policy.Executor {
		return nil
	}
	buf, _ := r.bufferFor(r.labLine())
	*buf = append(*buf, in...)
	return nil
}

// share makes the lab's Mediator's share decision, charged to the Mediator
// under a caller of its own per neighbour and iteration.
func (r *Run) share(ctx context.Context, in mediator.ShareInput) (mediator.ShareAnswer, llm.Usage, error) {
	protocol, err := r.store.Read(conditions.RoleMediator)
	if err != nil {
		return mediator.ShareAnswer{}, llm.Usage{}, fmt.Errorf("read the mediator skill: %w", err)
	}
	caller := rundir.MediatorCaller(rundir.TrialID(in.Iteration, "share-"+in.To)).String()
	tap := r.Ledger.Tap(func(c string) bool { return c == caller })
	defer tap.Close()
	m := mediator.Mediator{Client: r.Clients.Get(conditions.RoleMediator), Caller: caller, Seed: r.Spec.Seed}
	ans, err := m.Share(ctx, string(protocol.Content), in)
	return ans, coevoUsage(tap.Take()), err
}
