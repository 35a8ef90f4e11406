package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
)

// Exchange is what a lab hands its diffusion barrier: what it adopted and
// what its Mediator reported since the previous barrier.
type Exchange struct {
	Lab  string
	Seed int64
	// Since and Iteration bound the window, both included.
	Since, Iteration int
	// Adopted is set when the lab's executor skill changed in the window.
	Adopted *SkillChange
	// Reports are the Mediator's reports written in the window.
	Reports []ReportItem
	// Share asks the lab's own Mediator what to send one neighbour (the
	// mediated treatment), and says what the call cost.
	Share func(ctx context.Context, in mediator.ShareInput) (mediator.ShareAnswer, llm.Usage, error)
	// Intake asks the lab's own Mediator whether an item another lab sent
	// goes on to its Advisor and Planner (mediated), and says what it cost.
	Intake func(ctx context.Context, in mediator.IntakeInput) (mediator.IntakeAnswer, llm.Usage, error)
}

// SkillChange is how the lab's executor skill changed in a window.
type SkillChange struct {
	Old, New         string
	OldHash, NewHash string
	// Provenance are the ids of the adoptions, oldest first; TaskIDs the
	// tasks whose proposals they took.
	Provenance []string
	TaskIDs    []string
}

// Added is the lines of New that Old lacks, in order: what a neighbour
// would append to take the change.
func (c SkillChange) Added() string {
	had := map[string]bool{}
	for _, l := range strings.Split(c.Old, "\n") {
		had[strings.TrimSpace(l)] = true
	}
	var out []string
	for _, l := range strings.Split(c.New, "\n") {
		if t := strings.TrimSpace(l); t != "" && !had[t] {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// ReportItem is one Mediator report.
type ReportItem struct {
	EntryID   string
	TaskID    string
	Iteration int
	Content   string
}

// BarrierFunc is called after an iteration's evolution steps and before its
// checkpoint, every Run.BarrierInterval iterations. The proposals it returns
// enter the lab's executor-skill buffer, so they change the skill only
// through the lab's own Advisor and gate. They are checkpointed with the
// iteration: a crash before the checkpoint runs the iteration, and the
// barrier, again, and nothing is taken twice.
type BarrierFunc func(ctx context.Context, x Exchange) ([]mediator.Proposal, error)

// NeighbourStoppedError is a barrier's account of a lab that ended before
// the exchange the barrier waits for. The waiting lab ends too: out of
// budget when that lab ran out of budget (the same cause, which a resume
// with a larger budget lifts for both), else failed.
type NeighbourStoppedError struct {
	Lab, Group string
	Status     rundir.Status
	Iteration  int
}

func (e *NeighbourStoppedError) Error() string {
	fix := "resume the network with --resume once it is fixed"
	if e.Status == rundir.StatusBudgetExhausted {
		fix = "resume the network with --resume and a larger budget"
	}
	return fmt.Sprintf("stopped because lab %s ended: %s (%s, before its exchange after iteration %d); %s", e.Lab, e.Status, e.Group, e.Iteration, fix)
}

// diffuse calls the barrier when one is due and buffers what it returns.
func (r *Run) diffuse(ctx context.Context, it int) error {
	every := max(1, r.BarrierInterval)
	if r.Barrier == nil || it%every != 0 {
		return nil
	}
	x := Exchange{Lab: r.Spec.Lab, Seed: r.Spec.Seed, Since: it - every + 1, Iteration: it}
	var err error
	if x.Adopted, err = r.adoptedSince(x.Since, it); err != nil {
		return err
	}
	for _, e := range r.history.Entries(func(e *rundir.Entry) bool {
		return e.Kind == rundir.EntryReport && e.Iteration >= x.Since && e.Iteration <= it && strings.TrimSpace(e.Content) != ""
	}) {
		x.Reports = append(x.Reports, ReportItem{EntryID: e.ID, TaskID: e.TaskID, Iteration: e.Iteration, Content: e.Content})
	}
	x.Share, x.Intake = r.share, r.intake
	in, err := r.Barrier(ctx, x)
	if err != nil {
		return fmt.Errorf("diffusion barrier after iteration %d: %w", it, err)
	}
	if !r.Spec.Policy.Executor || !r.visible(conditions.ConsumerAdvisor).Has(conditions.EvidenceNetworkItems) {
		return nil // the contract lets no other lab's item reach this lab's Advisor
	}
	for i := range in {
		// An entry of its own, so the batch's decision can credit it.
		in[i].Iteration = it
		if err := r.history.Add(rundir.Entry{ID: in[i].ID, Role: rundir.AuthorNetwork, Kind: rundir.EntryProposal, TaskID: in[i].TaskID,
			Iteration: it, Content: in[i].NewContent, Source: in[i].Reasoning}); err != nil {
			return fmt.Errorf("record received item %s: %w", in[i].ID, err)
		}
	}
	buf, _ := r.bufferFor(r.labLine())
	*buf = append(*buf, in...)
	return nil
}

// adoptedSince is how the lab's executor skill changed from iteration
// since to it, read from the provenance log; nil when it did not.
func (r *Run) adoptedSince(since, it int) (*SkillChange, error) {
	data, err := os.ReadFile(r.Dir.Join(rundir.SkillUpdatesFile))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read skill updates: %w", err)
	}
	var ch *SkillChange
	for _, line := range strings.Split(string(data), "\n") {
		var p Provenance
		if strings.TrimSpace(line) == "" || json.Unmarshal([]byte(line), &p) != nil {
			continue
		}
		if p.Role != string(conditions.RoleExecutor) || p.Student != "" || p.Iteration < since || p.Iteration > it {
			continue
		}
		if ch == nil {
			old, err := os.ReadFile(filepath.Join(r.Dir.Path, p.OldSnapshot))
			if err != nil {
				return nil, fmt.Errorf("read the executor skill before adoption %s: %w", p.ID, err)
			}
			ch = &SkillChange{Old: string(old), OldHash: p.OldHash}
		}
		ch.NewHash = p.NewHash
		ch.Provenance = append(ch.Provenance, p.ID)
		for _, id := range p.ProposalIDs {
			if e, ok := r.history.Entry(id); ok && e.TaskID != "" && !slices.Contains(ch.TaskIDs, e.TaskID) {
				ch.TaskIDs = append(ch.TaskIDs, e.TaskID)
			}
		}
	}
	if ch == nil {
		return nil, nil
	}
	now, err := r.store.Read(conditions.RoleExecutor)
	if err != nil {
		return nil, fmt.Errorf("read the executor skill: %w", err)
	}
	ch.New = string(now.Content)
	if ch.OldHash == now.Hash {
		return nil, nil // changed and changed back
	}
	return ch, nil
}

// share makes the lab's Mediator's share decision, charged to the Mediator
// under a caller of its own per neighbour and iteration.
func (r *Run) share(ctx context.Context, in mediator.ShareInput) (mediator.ShareAnswer, llm.Usage, error) {
	// What the contract lets the share decision see, and nothing more.
	seen := r.visible(conditions.ConsumerMediatorShare)
	if seen.Empty() {
		return mediator.ShareAnswer{}, llm.Usage{}, fmt.Errorf("condition %s makes no share decision: a network's labs run a mediator condition", r.Spec.Condition)
	}
	if !seen.Has(conditions.EvidenceOtherReports) {
		in.Reports = nil
	}
	if seen.Has(conditions.EvidenceExecutorSkill) {
		sk, err := r.store.Read(conditions.RoleExecutor)
		if err != nil {
			return mediator.ShareAnswer{}, llm.Usage{}, fmt.Errorf("read the executor skill: %w", err)
		}
		in.Skill = string(sk.Content)
	} else {
		in.Adopted = ""
	}
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

// intake makes the lab's Mediator's intake decision on one received item,
// charged to the Mediator under a caller of its own per sender and
// iteration.
func (r *Run) intake(ctx context.Context, in mediator.IntakeInput) (mediator.IntakeAnswer, llm.Usage, error) {
	seen := r.visible(conditions.ConsumerMediatorIntake)
	if !seen.Has(conditions.EvidenceNetworkItems) {
		return mediator.IntakeAnswer{}, llm.Usage{}, fmt.Errorf("condition %s makes no intake decision: a network's labs run a mediator condition", r.Spec.Condition)
	}
	if seen.Has(conditions.EvidenceExecutorSkill) {
		sk, err := r.store.Read(conditions.RoleExecutor)
		if err != nil {
			return mediator.IntakeAnswer{}, llm.Usage{}, fmt.Errorf("read the executor skill: %w", err)
		}
		in.Skill = string(sk.Content)
	}
	protocol, err := r.store.Read(conditions.RoleMediator)
	if err != nil {
		return mediator.IntakeAnswer{}, llm.Usage{}, fmt.Errorf("read the mediator skill: %w", err)
	}
	caller := rundir.MediatorCaller(rundir.TrialID(in.Iteration, "intake-"+in.From)).String()
	tap := r.Ledger.Tap(func(c string) bool { return c == caller })
	defer tap.Close()
	m := mediator.Mediator{Client: r.Clients.Get(conditions.RoleMediator), Caller: caller, Seed: r.Spec.Seed}
	ans, err := m.Intake(ctx, string(protocol.Content), in)
	return ans, coevoUsage(tap.Take()), err
}
