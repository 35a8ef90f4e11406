package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/mediator"
)

// What an item carries.
const (
	KindSkillDiff = mediator.ShareSkillDiff // lines the sender's executor skill gained
	KindNote      = mediator.ShareNote      // a lesson the sender's Mediator distilled
	KindReport    = "report"                // one of the sender's Mediator reports, as written
	KindNothing   = "nothing"               // the sender's Mediator chose to send nothing
)

// What the sender decided about an item.
const (
	DecisionSent    = "sent"
	DecisionNothing = "nothing"
)

// Item is one thing a lab sent, or decided not to send, to a neighbour at a
// barrier, with its provenance.
type Item struct {
	ID        string `json:"id"`
	Diffusion string `json:"diffusion"`
	Seed      int64  `json:"seed"`
	From      string `json:"from"`
	To        string `json:"to"`
	Edge      string `json:"edge"`
	// Iteration is the barrier's: the last iteration of the window the
	// item comes from.
	Iteration int    `json:"iteration"`
	Kind      string `json:"kind"`
	Decision  string `json:"decision"`
	Reason    string `json:"reason,omitempty"`
	Content   string `json:"content,omitempty"`
	// Evidence is where the item came from in the sender's run: the
	// history entries of its reports, or the provenance ids of its
	// adoptions; Tasks the tasks of those trials.
	Evidence []string `json:"evidence,omitempty"`
	Tasks    []string `json:"tasks,omitempty"`
	// SenderOldHash and SenderNewHash are the sender's executor skill
	// before and after the adoptions a skill diff carries.
	SenderOldHash string `json:"sender_old_hash,omitempty"`
	SenderNewHash string `json:"sender_new_hash,omitempty"`
	// Tokens is what deciding on the item cost (the sender Mediator's
	// share call, mediated only).
	Tokens int64 `json:"tokens"`
}

// receipt is a lab's inbox ledger for one barrier: the ids it took in,
// and under mediated those its Mediator dropped, with why and what each
// decision cost.
type receipt struct {
	Iteration int               `json:"iteration"`
	IDs       []string          `json:"ids"`
	Dropped   map[string]string `json:"dropped,omitempty"`
	Tokens    map[string]int64  `json:"tokens,omitempty"`
}

// Exchange moves items between the labs of one network experiment
// directory. A lab's items of one barrier are written as one file, once:
// a lab that runs the barrier again after a crash finds it and sends
// nothing new. What a lab takes in enters its buffer and is checkpointed
// with its iteration, so an item is received exactly once however often
// the barrier runs.
type Exchange struct {
	dir        string
	settings   Settings
	neighbours map[string][]string
	senders    map[string][]string
	// Poll is how often a waiting lab looks for its senders' outboxes.
	Poll time.Duration

	mu      sync.Mutex
	stopped map[string]rundir.Status // group/lab -> status, for labs that stopped early
}

// NewExchange is the exchange of the experiment directory dir.
func NewExchange(dir string, s Settings) (*Exchange, error) {
	nb, err := Neighbours(s.Labs, s.Topology)
	if err != nil {
		return nil, err
	}
	return &Exchange{dir: dir, settings: s, neighbours: nb, senders: Senders(nb, s.Labs), Poll: 20 * time.Millisecond,
		stopped: map[string]rundir.Status{}}, nil
}

// SetDir sets the experiment directory, once it exists; it must be called
// before any barrier runs.
func (x *Exchange) SetDir(dir string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dir = dir
}

func (x *Exchange) path(rel string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return filepath.Join(x.dir, rel)
}

// Stopped records that a lab's run ended before its last iteration, so
// that labs waiting for it at a barrier stop waiting.
func (x *Exchange) Stopped(row harness.RowSpec, status rundir.Status) {
	if status == rundir.StatusCompleted {
		return // a completed lab has sent everything
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stopped[rundir.NetworkGroup(Treatment(row.Name), row.Seed)+"/"+row.Lab] = status
}

func (x *Exchange) stoppedStatus(group, lab string) (rundir.Status, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.stopped[group+"/"+lab]
	return s, ok
}

// Barrier is the diffusion barrier of one row.
func (x *Exchange) Barrier(row harness.RowSpec) harness.BarrierFunc {
	d := Treatment(row.Name)
	group := rundir.NetworkGroup(d, row.Seed)
	return func(ctx context.Context, ex harness.Exchange) ([]mediator.Proposal, error) {
		if d == None {
			return nil, nil
		}
		if err := x.send(ctx, d, group, row, ex); err != nil {
			return nil, err
		}
		return x.receive(ctx, d, group, row.Lab, ex)
	}
}

// send writes the lab's outbox for the barrier, unless an earlier attempt
// did.
func (x *Exchange) send(ctx context.Context, d, group string, row harness.RowSpec, ex harness.Exchange) error {
	path := x.path(rundir.NetworkOutbox(group, row.Lab, ex.Iteration))
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	var items []Item
	for _, to := range x.neighbours[row.Lab] {
		base := Item{Diffusion: d, Seed: row.Seed, From: row.Lab, To: to, Edge: row.Lab + "->" + to, Iteration: ex.Iteration}
		var got []Item
		var err error
		if d == Broadcast {
			got = broadcast(base, ex)
		} else {
			got, err = x.mediate(ctx, base, ex)
		}
		if err != nil {
			return err
		}
		for i := range got {
			got[i].ID = fmt.Sprintf("net/%s-%s/i%04d/%d", row.Lab, to, ex.Iteration, i+1)
		}
		items = append(items, got...)
	}
	if items == nil {
		items = []Item{}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create outbox of lab %s: %w", row.Lab, err)
	}
	if err := durable.WriteJSON(path, items); err != nil {
		return fmt.Errorf("write outbox of lab %s after iteration %d: %w", row.Lab, ex.Iteration, err)
	}
	return nil
}

// broadcast sends everything: the skill diff of the window's adoptions and
// every report.
func broadcast(base Item, ex harness.Exchange) []Item {
	var out []Item
	if ex.Adopted != nil {
		if added := ex.Adopted.Added(); added != "" {
			it := base
			it.Kind, it.Decision, it.Content, it.Reason = KindSkillDiff, DecisionSent, added, "broadcast: every adopted change is sent"
			it.Evidence, it.Tasks = ex.Adopted.Provenance, ex.Adopted.TaskIDs
			it.SenderOldHash, it.SenderNewHash = ex.Adopted.OldHash, ex.Adopted.NewHash
			out = append(out, it)
		}
	}
	for _, r := range ex.Reports {
		it := base
		it.Kind, it.Decision, it.Content, it.Reason = KindReport, DecisionSent, r.Content, "broadcast: every report is sent"
		it.Evidence, it.Tasks = []string{r.EntryID}, []string{r.TaskID}
		out = append(out, it)
	}
	return out
}

// mediate asks the sending lab's Mediator what to send this neighbour.
func (x *Exchange) mediate(ctx context.Context, base Item, ex harness.Exchange) ([]Item, error) {
	in := mediator.ShareInput{From: base.From, To: base.To, Iteration: ex.Iteration, BudgetTokens: x.settings.TokenBudget, First: ex.Since == 1}
	it := base
	if ex.Adopted != nil {
		in.Adopted = ex.Adopted.Added()
		it.SenderOldHash, it.SenderNewHash = ex.Adopted.OldHash, ex.Adopted.NewHash
		it.Evidence, it.Tasks = append(it.Evidence, ex.Adopted.Provenance...), append(it.Tasks, ex.Adopted.TaskIDs...)
	}
	for _, r := range ex.Reports {
		in.Reports = append(in.Reports, r.Content)
		it.Evidence, it.Tasks = append(it.Evidence, r.EntryID), appendNew(it.Tasks, r.TaskID)
	}
	if in.Adopted == "" && len(in.Reports) == 0 && !in.First {
		it.Kind, it.Decision, it.Reason = KindNothing, DecisionNothing, "nothing was adopted or reported since the last exchange"
		return []Item{it}, nil
	}
	if ex.Share == nil {
		return nil, errors.New("mediated diffusion: the lab gives no share decision")
	}
	ans, usage, err := ex.Share(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("lab %s's Mediator deciding what to send lab %s: %w", base.From, base.To, err)
	}
	it.Tokens = usage.InputTokens + usage.OutputTokens
	it.Reason = ans.Reason
	if !ans.Send {
		it.Kind, it.Decision = KindNothing, DecisionNothing
		return []Item{it}, nil
	}
	it.Kind, it.Decision, it.Content = ans.Kind, DecisionSent, ans.Content
	return []Item{it}, nil
}

func appendNew(xs []string, s string) []string {
	for _, x := range xs {
		if x == s {
			return xs
		}
	}
	return append(xs, s)
}

// receive waits for the outbox of every lab that may send to lab, takes
// the items addressed to it (under mediated, those its Mediator passes on)
// and records their ids in its inbox ledger. A ledger an earlier attempt
// wrote is taken as it is, so no decision is made twice.
func (x *Exchange) receive(ctx context.Context, d, group, lab string, ex harness.Exchange) ([]mediator.Proposal, error) {
	it := ex.Iteration
	byID := map[string]Item{}
	var got []Item
	for _, from := range x.senders[lab] {
		items, err := x.await(ctx, group, from, it)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			if item.To == lab && item.Decision == DecisionSent {
				got = append(got, item)
				byID[item.ID] = item
			}
		}
	}
	path := x.path(rundir.NetworkInbox(group, lab, it))
	rec, err := readReceipt(path)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		if rec, err = x.decide(ctx, d, lab, ex, got); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("create inbox of lab %s: %w", lab, err)
		}
		if err := durable.WriteJSON(path, rec); err != nil {
			return nil, fmt.Errorf("write inbox ledger of lab %s after iteration %d: %w", lab, it, err)
		}
	}
	var out []mediator.Proposal
	for _, id := range rec.IDs {
		if item, ok := byID[id]; ok {
			out = append(out, item.proposal())
		}
	}
	return out, nil
}

// decide is the inbox ledger of a barrier: every item taken in, or under
// mediated those the receiving Mediator passes on.
func (x *Exchange) decide(ctx context.Context, d, lab string, ex harness.Exchange, got []Item) (*receipt, error) {
	rec := &receipt{Iteration: ex.Iteration, IDs: []string{}}
	for _, item := range got {
		if d != Mediated {
			rec.IDs = append(rec.IDs, item.ID)
			continue
		}
		if ex.Intake == nil {
			return nil, errors.New("mediated diffusion: the lab gives no intake decision")
		}
		ans, usage, err := ex.Intake(ctx, mediator.IntakeInput{From: item.From, To: lab, Iteration: ex.Iteration, Kind: item.Kind, Content: item.Content})
		if err != nil {
			return nil, fmt.Errorf("lab %s's Mediator deciding on item %s: %w", lab, item.ID, err)
		}
		if rec.Tokens == nil {
			rec.Tokens, rec.Dropped = map[string]int64{}, map[string]string{}
		}
		rec.Tokens[item.ID] = usage.InputTokens + usage.OutputTokens
		if ans.Pass {
			rec.IDs = append(rec.IDs, item.ID)
		} else {
			rec.Dropped[item.ID] = ans.Reason
		}
	}
	return rec, nil
}

// readReceipt reads an inbox ledger; nil when there is none yet.
func readReceipt(path string) (*receipt, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read inbox ledger: %w", err)
	}
	var rec receipt
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("read inbox ledger %s: %w", path, err)
	}
	return &rec, nil
}

// await waits for a sender's outbox of a barrier.
func (x *Exchange) await(ctx context.Context, group, from string, it int) ([]Item, error) {
	path := x.path(rundir.NetworkOutbox(group, from, it))
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			var items []Item
			if err := json.Unmarshal(data, &items); err != nil {
				return nil, fmt.Errorf("read outbox %s: %w", path, err)
			}
			return items, nil
		}
		if !os.IsNotExist(err) {
			return nil, fmt.Errorf("read outbox of lab %s: %w", from, err)
		}
		if status, ok := x.stoppedStatus(group, from); ok {
			return nil, &harness.NeighbourStoppedError{Lab: from, Group: group, Status: status, Iteration: it}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(x.Poll):
		}
	}
}

// proposal is how a received item enters the receiving lab: a proposal to
// append its content to the executor skill, for the lab's own Advisor and
// gate to judge.
func (item Item) proposal() mediator.Proposal {
	p := mediator.Proposal{ID: item.ID, Iteration: item.Iteration, NewContent: item.Content,
		Reasoning: fmt.Sprintf("Sent by lab %s (%s, %s diffusion): %s", item.From, item.Kind, item.Diffusion, strings.TrimSpace(item.Reason))}
	if len(item.Tasks) > 0 {
		p.TaskID = item.Tasks[0]
	}
	return p
}
