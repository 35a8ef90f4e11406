package network

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
)

// What the receiving lab did with an item.
const (
	ReceiverAdopted      = "adopted"       // its batch passed the lab's Advisor and gate
	ReceiverRejected     = "rejected"      // the lab's Advisor or gate turned its batch down
	ReceiverPending      = "pending"       // taken in, its batch not decided yet
	ReceiverDropped      = "dropped"       // the receiving Mediator did not pass it on (mediated)
	ReceiverNotDelivered = "not_delivered" // sent, not (yet) taken in
	ReceiverNone         = ""              // nothing was sent
)

// Record is one item with what became of it: inspect --diffusion lists
// these.
type Record struct {
	Item
	Delivered        bool   `json:"delivered"`
	ReceiverDecision string `json:"receiver_decision,omitempty"`
	ReceiverReason   string `json:"receiver_reason,omitempty"`
	ReceiverBatch    string `json:"receiver_batch,omitempty"`
	// ReceiverTokens is what the receiving Mediator's intake decision cost
	// (mediated only).
	ReceiverTokens int64 `json:"receiver_tokens"`
	// SkillHashBefore and SkillHashAfter are the receiver's executor skill
	// around the adoption that took the item.
	SkillHashBefore string `json:"skill_hash_before,omitempty"`
	SkillHashAfter  string `json:"skill_hash_after,omitempty"`
}

// Design is the network record of an experiment directory, or an error
// saying the directory is not one.
func Design(dir string) (*rundir.Manifest, error) {
	d, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	m := d.Manifest()
	if m.Network == nil {
		return nil, fmt.Errorf("%s is not a network experiment (its run.json has no network record): give the directory `harness network` created", dir)
	}
	return &m, nil
}

// RowName is the matrix row of a lab under a treatment and seed.
func RowName(m *rundir.Manifest, diffusion, lab string, seed int64) string {
	name := diffusion + "-" + lab
	if len(m.Seeds) > 1 {
		name = fmt.Sprintf("%s-seed%d", name, seed)
	}
	return name
}

// Records lists every item of the experiment directory dir, in the order
// of treatment, seed, barrier and sender, with the receiver's decision.
func Records(dir string) ([]Record, error) {
	m, err := Design(dir)
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, rundir.NetworkDir, "*", "outbox", "*", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Record
	fates := map[string]*receiverLog{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		var items []Item
		if err := json.Unmarshal(data, &items); err != nil {
			return nil, fmt.Errorf("read outbox %s: %w", f, err)
		}
		for _, item := range items {
			rec := Record{Item: item}
			if item.Decision == DecisionSent {
				row := RowName(m, item.Diffusion, item.To, item.Seed)
				log, ok := fates[row]
				if !ok {
					if log, err = readReceiver(dir, row); err != nil {
						return nil, err
					}
					fates[row] = log
				}
				var dropped string
				rec.Delivered, dropped, rec.ReceiverTokens = delivery(dir, item)
				log.fill(&rec)
				if dropped != "" {
					rec.ReceiverDecision, rec.ReceiverReason = ReceiverDropped, dropped
				}
			}
			out = append(out, rec)
		}
	}
	order := func(r Record) string {
		return fmt.Sprintf("%d/%s/%020d/%06d/%s", slices.Index(m.Network.Diffusion, r.Diffusion), r.Diffusion, r.Seed, r.Iteration, r.ID)
	}
	sort.SliceStable(out, func(a, b int) bool { return order(out[a]) < order(out[b]) })
	if out == nil {
		out = []Record{}
	}
	return out, nil
}

// delivery is what the receiver's inbox ledger says of an item: taken in,
// or dropped by its Mediator (with why), and what deciding cost.
func delivery(dir string, item Item) (taken bool, dropped string, tokens int64) {
	rec, err := readReceipt(filepath.Join(dir, rundir.NetworkInbox(rundir.NetworkGroup(item.Diffusion, item.Seed), item.To, item.Iteration)))
	if err != nil || rec == nil {
		return false, "", 0
	}
	return slices.Contains(rec.IDs, item.ID), rec.Dropped[item.ID], rec.Tokens[item.ID]
}

// receiverLog is what a receiving row decided about proposals, by id.
type receiverLog struct {
	adopted  map[string]adoption
	rejected map[string]adoption
}

type adoption struct {
	batch, reason, before, after string
}

func readReceiver(dir, row string) (*receiverLog, error) {
	l := &receiverLog{adopted: map[string]adoption{}, rejected: map[string]adoption{}}
	err := durable.ReadLog(filepath.Join(dir, row, rundir.SkillUpdatesFile), func(line []byte) error {
		var u struct {
			BatchID     string   `json:"batch_id"`
			ProposalIDs []string `json:"proposal_ids"`
			OldHash     string   `json:"old_hash"`
			NewHash     string   `json:"new_hash"`
		}
		if json.Unmarshal(line, &u) == nil {
			for _, id := range u.ProposalIDs {
				l.adopted[id] = adoption{batch: u.BatchID, before: u.OldHash, after: u.NewHash}
			}
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read skill updates of row %s: %w", row, err)
	}
	err = durable.ReadLog(filepath.Join(dir, row, rundir.RejectedFile), func(line []byte) error {
		var r struct {
			BatchID   string `json:"batch_id"`
			Reason    string `json:"reason"`
			Proposals []struct {
				ID string `json:"id"`
			} `json:"proposals"`
		}
		if json.Unmarshal(line, &r) == nil {
			for _, p := range r.Proposals {
				l.rejected[p.ID] = adoption{batch: r.BatchID, reason: r.Reason}
			}
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read rejected proposals of row %s: %w", row, err)
	}
	return l, nil
}

func (l *receiverLog) fill(rec *Record) {
	if a, ok := l.adopted[rec.ID]; ok {
		rec.ReceiverDecision, rec.ReceiverBatch, rec.SkillHashBefore, rec.SkillHashAfter = ReceiverAdopted, a.batch, a.before, a.after
		return
	}
	if a, ok := l.rejected[rec.ID]; ok {
		rec.ReceiverDecision, rec.ReceiverBatch, rec.ReceiverReason = ReceiverRejected, a.batch, strings.TrimSpace(a.reason)
		return
	}
	if rec.Delivered {
		rec.ReceiverDecision = ReceiverPending
		return
	}
	rec.ReceiverDecision = ReceiverNotDelivered
}
