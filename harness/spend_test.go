package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/llm"
)

// interruptedRun is a run of two tasks stopped as its second iteration
// begins, so its checkpoint is iteration 1 and its spend journal holds
// the record written on the way out.
func interruptedRun(t *testing.T) *testRun {
	t.Helper()
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyNone, []string{"a", "b"}, 2, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr.run.Events = func(e Event) {
		if e.Kind == EventIterationStart && e.Iteration == 2 {
			cancel()
		}
	}
	if res := tr.run.Iterate(ctx); res.Status != rundir.StatusInterrupted {
		t.Fatalf("status %s (%v), want interrupted", res.Status, res.Err)
	}
	return tr
}

// rawState is state.json as written, without the journal added.
func rawState(t *testing.T, dir string) *State {
	t.Helper()
	st := rundir.PeekState[feedbackBook, any, llm.LedgerSnapshot](dir)
	if st == nil {
		t.Fatalf("no readable state.json in %s", dir)
	}
	return &State{Ledger: st.Ledger, SpendEpoch: st.SpendEpoch, CompletedIteration: st.CompletedIteration}
}

func appendSpend(t *testing.T, dir string, rec spendRecord) {
	t.Helper()
	l, err := durable.OpenLog(filepath.Join(dir, rundir.SpendJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(rec); err != nil {
		t.Fatal(err)
	}
}

// A crash can stop the process between a trial's journal append and the
// next checkpoint, or between a checkpoint's save and the journal's
// truncation. Either way loading the run counts every charge once, and a
// resume ends with exactly the spend of a run that never crashed there.
func TestSpendJournalCrashWindows(t *testing.T) {
	extra := llm.Usage{InputTokens: 1000, OutputTokens: 10, Calls: 1}
	tests := []struct {
		name string
		// crash changes the interrupted run's directory as a crash at
		// that point would have left it.
		crash func(t *testing.T, dir string)
		// want is what loading the run must count beyond the control's.
		want llm.Usage
	}{
		{"no crash (control)", func(*testing.T, string) {}, llm.Usage{}},
		{"after a journal append, before the checkpoint", func(t *testing.T, dir string) {
			st := rawState(t, dir)
			appendSpend(t, dir, spendRecord{Epoch: st.SpendEpoch, Charges: map[string]llm.Usage{"planner/i0002-a": extra}})
		}, extra},
		{"after the checkpoint's save, before the journal is emptied", func(t *testing.T, dir string) {
			st := rawState(t, dir)
			appendSpend(t, dir, spendRecord{Epoch: st.SpendEpoch, Charges: map[string]llm.Usage{"planner/i0002-a": extra}})
			// The checkpoint folds the journal in and saves under a new
			// epoch; the crash leaves the journal as it was.
			full := mustLoadState(t, dir)
			full.SpendEpoch++
			if err := full.Save(dir); err != nil {
				t.Fatal(err)
			}
		}, extra},
		{"a torn last record", func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, rundir.SpendJournalFile), os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(`{"epoch":99,"charges":{"planner/x":{"input_tok`); err != nil {
				t.Fatal(err)
			}
		}, llm.Usage{}},
	}
	var control struct{ loaded, resumed llm.Usage }
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := interruptedRun(t)
			dir := tr.run.Dir.Path
			tt.crash(t, dir)
			loaded := mustLoadState(t, dir).Ledger.Total
			again := buildTestRun(tr.run.Config, tr.run.Dir, conditions.LearnedMediator, conditions.PolicyNone, []string{"a", "b"}, 2)
			if res := again.run.Iterate(context.Background()); res.Err != nil {
				t.Fatalf("resume: %v", res.Err)
			}
			resumed := mustLoadState(t, dir).Ledger.Total
			if got := again.run.Ledger.Total(); got.Tokens() != resumed.Tokens() || got.Calls != resumed.Calls {
				t.Errorf("state.json after the resume holds %+v; the ledger spent %+v", resumed, got)
			}
			if i == 0 {
				control.loaded, control.resumed = loaded, resumed
				return
			}
			if loaded.Tokens() != control.loaded.Tokens()+tt.want.Tokens() || loaded.Calls != control.loaded.Calls+tt.want.Calls {
				t.Errorf("loaded spend %d tokens, %d calls; want %d, %d", loaded.Tokens(), loaded.Calls,
					control.loaded.Tokens()+tt.want.Tokens(), control.loaded.Calls+tt.want.Calls)
			}
			if resumed.Tokens() != control.resumed.Tokens()+tt.want.Tokens() || resumed.Calls != control.resumed.Calls+tt.want.Calls {
				t.Errorf("spend after the resume %d tokens, %d calls; want %d, %d", resumed.Tokens(), resumed.Calls,
					control.resumed.Tokens()+tt.want.Tokens(), control.resumed.Calls+tt.want.Calls)
			}
		})
	}
}

// The journal is folded into state.json at every checkpoint and emptied,
// so it holds only the spend since the last one.
func TestSpendJournalEmptiedAtCheckpoints(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyNone, []string{"a", "b"}, 2, nil)
	dir := tr.run.Dir.Path
	var midIteration, atCheckpoint []spendRecord
	tr.run.Events = func(e Event) {
		switch e.Kind {
		case EventTrialDone:
			if e.Iteration == 2 {
				midIteration = readJSONL[spendRecord](t, filepath.Join(dir, rundir.SpendJournalFile))
			}
		case EventIterationDone:
			atCheckpoint = readJSONL[spendRecord](t, filepath.Join(dir, rundir.SpendJournalFile))
		}
	}
	tr.execute(t)
	if len(midIteration) == 0 {
		t.Error("no journal record after a trial of iteration 2")
	}
	if len(atCheckpoint) != 0 {
		t.Errorf("%d journal records after a checkpoint; want none", len(atCheckpoint))
	}
	raw, full := rawState(t, dir), mustLoadState(t, dir)
	if raw.Ledger.Total != full.Ledger.Total || full.Ledger.Total != tr.run.Ledger.Total() {
		t.Errorf("state.json %+v, with the journal %+v; the run spent %+v", raw.Ledger.Total, full.Ledger.Total, tr.run.Ledger.Total())
	}
}

// cachingProvider reports half of every prompt as read from a cache.
type cachingProvider struct{ inner llm.Provider }

func (p cachingProvider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := p.inner.Complete(ctx, req)
	resp.Usage.CachedInputTokens = resp.Usage.InputTokens / 2
	return resp, err
}

func (p cachingProvider) Offline() bool { return p.inner.Offline() }

// The cached input tokens a provider reports are charged to the ledger and
// land in the metric rows of the trials they were spent on.
func TestCachedInputTokensReachMetrics(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyNone, []string{"a", "b"}, 2, nil)
	for _, c := range tr.run.Clients.byRole {
		c.Provider = cachingProvider{c.Provider}
	}
	tr.execute(t)
	var inRows int64
	for it := 1; it <= 2; it++ {
		rows, err := rundir.ReadMetricsFile(filepath.Join(tr.run.Dir.MetricsDir(), rundir.MetricsPartName(it)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			inRows += r.CachedInputTokens
		}
	}
	total := tr.run.Ledger.Total().CachedInputTokens
	if inRows == 0 || inRows != total {
		t.Errorf("metric rows hold %d cached input tokens; the ledger %d", inRows, total)
	}
	if saved := mustLoadState(t, tr.run.Dir.Path).Ledger.Total.CachedInputTokens; saved != total {
		t.Errorf("state.json's ledger holds %d cached input tokens; want %d", saved, total)
	}
}

// A journal line that is complete but does not decode is damage: the
// resume is refused and the directory, run.json included, left as it was.
func TestDamagedSpendJournalRefusesResume(t *testing.T) {
	tr := interruptedRun(t)
	dir := tr.run.Dir.Path
	path := filepath.Join(dir, rundir.SpendJournalFile)
	if err := os.WriteFile(path, []byte("{\"epoch\": oops}\n{\"epoch\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tr.run.Dir.Manifest().Status
	again := buildTestRun(tr.run.Config, tr.run.Dir, conditions.LearnedMediator, conditions.PolicyNone, []string{"a", "b"}, 2)
	res := again.run.Iterate(context.Background())
	if !errors.Is(res.Err, rundir.ErrDamaged) || !strings.Contains(res.Err.Error(), "spend journal") {
		t.Fatalf("resume: %v; want the damaged spend journal refused", res.Err)
	}
	if got := again.run.Dir.Manifest().Status; got != before {
		t.Errorf("run.json status %s after the refused resume; want %s as before", got, before)
	}
	if got, _ := os.ReadFile(path); !strings.HasPrefix(string(got), "{\"epoch\": oops}") {
		t.Errorf("the journal was changed: %q", got)
	}
}
