package harness

import (
	"fmt"
	"path/filepath"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/llm"
)

// The spend of a run is saved in two places: state.json holds the ledger as
// it was at the last save, and the spend journal (rundir.SpendJournalFile)
// holds what was charged since, one record appended after every trial. The
// per-trial save is so one small append, whatever the run's size; the
// journal is folded into state.json at every checkpoint and when a run is
// resumed. Journal records carry the epoch of the state.json save they
// follow, and every save bumps it, so a crash between the save and the
// journal's truncation adds no record twice.

type spendRecord = rundir.SpendRecord[llm.Usage]

// openSpend opens the spend journal and starts collecting the ledger's
// charges for it.
func (r *Run) openSpend() error {
	var err error
	r.spend, err = durable.OpenLog(filepath.Join(r.Dir.Path, rundir.SpendJournalFile))
	if err == nil && r.Ledger != nil {
		r.spendTap = r.Ledger.Tap(nil)
	}
	return err
}

// saveSpend records what the run has spent since the last record: the
// iteration in progress is not checkpointed, and a resume redoes it, but
// what it cost and the wall clock it used still count against the budget.
func (r *Run) saveSpend() error {
	r.spendMu.Lock()
	defer r.spendMu.Unlock()
	if r.spend == nil || r.spendTap == nil || r.st == nil {
		return nil
	}
	rec := spendRecord{Epoch: r.st.SpendEpoch, Charges: r.spendTap.Take(), Elapsed: r.Ledger.Elapsed()}
	if r.MatrixLedger != nil {
		rec.MatrixElapsed = r.MatrixLedger.Elapsed()
	}
	if err := r.spend.Append(rec); err != nil {
		r.spendTap.Return(rec.Charges)
		return fmt.Errorf("save the spend of the current iteration: %w", err)
	}
	return nil
}

// saveCheckpoint writes r.st with the ledger as it is now, under a new
// epoch, and empties the spend journal it has folded in. The caller holds
// spendMu.
func (r *Run) saveCheckpoint() error {
	var taken map[string]llm.Usage
	if r.Ledger != nil && r.spendTap != nil {
		r.st.Ledger, taken = r.Ledger.SnapshotTaking(r.spendTap)
	} else if r.Ledger != nil {
		r.st.Ledger = r.Ledger.Snapshot()
	}
	if r.MatrixLedger != nil {
		r.st.MatrixElapsed = r.MatrixLedger.Elapsed()
	}
	r.st.SpendEpoch++
	if err := r.st.Save(r.Dir.Path); err != nil {
		r.st.SpendEpoch--
		if r.spendTap != nil {
			r.spendTap.Return(taken)
		}
		return err
	}
	if r.spend == nil {
		return nil
	}
	return r.spend.Reset()
}

// foldSpend adds to st's ledger the journal records written since st was
// saved. st's own fields are changed; nothing is written.
func foldSpend(dir string, st *State) error {
	recs, err := rundir.ReadSpendJournal[llm.Usage](dir, st.SpendEpoch)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		st.Ledger.Apply(rec.Charges, rec.Elapsed)
		st.MatrixElapsed = max(st.MatrixElapsed, rec.MatrixElapsed)
	}
	return nil
}

// compactSpend saves st, whose ledger has the journal folded in (as loaded),
// under a new epoch, and empties the journal. A resume does it before it
// appends anything, so what the journal held is in state.json alone.
func compactSpend(dir string, st *State) error {
	st.SpendEpoch++
	if err := st.Save(dir); err != nil {
		st.SpendEpoch--
		return err
	}
	return durable.TruncateLines(filepath.Join(dir, rundir.SpendJournalFile), 0)
}

// reconcileCalls charges st's ledger with the calls the run's call log
// holds beyond it. Each call is logged as it is made, but its spend is
// saved to the journal only when its trial ends, so the calls of trials in
// flight when a process was killed are in the log alone; a resumed run's
// budget must count them. For each caller, what the log counts beyond the
// ledger is added; a ledger that counts more (a call charged but never
// sent) is left as it is. st's own fields are changed; nothing is written.
func reconcileCalls(dir string, st *State) error {
	logged := map[string]llm.Usage{}
	unpriced := map[string]bool{}
	err := rundir.ReadCalls(filepath.Join(dir, rundir.CallsFile), func(c rundir.CallRecord) error {
		u := logged[c.Caller]
		u.InputTokens += c.Usage.InputTokens
		u.OutputTokens += c.Usage.OutputTokens
		u.CostUSD += c.Usage.CostUSD
		u.EstimatedTokens += c.Usage.EstimatedTokens
		if c.Attempts > 0 || c.Usage.Tokens() > 0 {
			u.Calls++
		}
		logged[c.Caller] = u
		unpriced[c.Caller] = unpriced[c.Caller] || (c.Usage.Tokens() > 0 && !c.Usage.CostKnown)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reconcile the spend of %s with its call log: %w", dir, err)
	}
	missing := map[string]llm.Usage{}
	for caller, u := range logged {
		u.CostKnown = !unpriced[caller]
		if m, ok := beyond(u, st.Ledger.ByCaller[caller]); ok {
			missing[caller] = m
		}
	}
	st.Ledger.Apply(missing, st.Ledger.Elapsed)
	return nil
}

// beyond is what logged counts beyond charged, and whether that is
// anything.
func beyond(logged, charged llm.Usage) (llm.Usage, bool) {
	m := llm.Usage{
		InputTokens:     max(0, logged.InputTokens-charged.InputTokens),
		OutputTokens:    max(0, logged.OutputTokens-charged.OutputTokens),
		CostUSD:         max(0, logged.CostUSD-charged.CostUSD),
		EstimatedTokens: max(0, logged.EstimatedTokens-charged.EstimatedTokens),
		Calls:           max(0, logged.Calls-charged.Calls),
		CostKnown:       logged.CostKnown,
	}
	// A cost difference below a micro-dollar is rounding, not a call.
	if m.CostUSD < 1e-6 {
		m.CostUSD = 0
	}
	return m, m.InputTokens > 0 || m.OutputTokens > 0 || m.CostUSD > 0 || m.Calls > 0
}
