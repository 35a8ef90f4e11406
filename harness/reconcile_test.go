package harness

import (
	"path/filepath"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/llm"
)

// After a hard kill, the calls of the trials in flight are in the call log
// but not in the saved ledger: loading the checkpoint charges them, so a
// resumed run's budget counts what was really spent, and loading it again
// adds nothing twice.
func TestLoadStateChargesCallsOnlyTheCallLogHolds(t *testing.T) {
	dir := t.TempDir()
	st := newState("run", "row", "fp")
	charged := llm.Usage{InputTokens: 100, OutputTokens: 10, CostUSD: 0.01, CostKnown: true, Calls: 1}
	st.Ledger = llm.LedgerSnapshot{ByCaller: map[string]llm.Usage{"planner/i0001-a": charged}, Total: charged}
	if err := st.Save(dir); err != nil {
		t.Fatal(err)
	}
	log, err := durable.OpenLog(filepath.Join(dir, rundir.CallsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []rundir.CallRecord{
		{Caller: "planner/i0001-a", Attempts: 1, Usage: rundir.CallUsage{InputTokens: 100, OutputTokens: 10, CostUSD: 0.01, CostKnown: true}},
		// In flight at the kill: logged, never saved to the ledger.
		{Caller: "planner/i0001-a", Attempts: 1, Usage: rundir.CallUsage{InputTokens: 50, OutputTokens: 5, CostUSD: 0.005, CostKnown: true}},
		{Caller: "executor/student-1/i0001-b", Attempts: 1, Usage: rundir.CallUsage{InputTokens: 30, OutputTokens: 3, CostUSD: 0.003, CostKnown: true}},
		// Failed before it was sent: nothing to charge.
		{Caller: "mediator/i0001-b", Error: "no connection"},
	} {
		if err := log.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()

	for range 2 {
		got, err := LoadState(dir)
		if err != nil {
			t.Fatal(err)
		}
		if tot := got.Ledger.Total; tot.InputTokens != 180 || tot.OutputTokens != 18 || tot.Calls != 3 {
			t.Errorf("ledger total %+v, want the call log's 180 in, 18 out, 3 calls", tot)
		}
		if p := got.Ledger.ByCaller["planner/i0001-a"]; p.InputTokens != 150 || p.Calls != 2 {
			t.Errorf("planner caller %+v, want 150 in over 2 calls", p)
		}
		if _, ok := got.Ledger.ByCaller["mediator/i0001-b"]; ok {
			t.Errorf("a call that was never sent was charged: %+v", got.Ledger.ByCaller)
		}
		if err := compactSpend(dir, got); err != nil { // what a resume saves
			t.Fatal(err)
		}
	}
}
