package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
)

func TestLedgerLimits(t *testing.T) {
	tests := []struct {
		name    string
		limits  llm.Limits
		charge  llm.Usage
		wantErr string // empty: budget left
	}{
		{"unlimited", llm.Limits{}, llm.Usage{InputTokens: 1e9, CostUSD: 1e6, CostKnown: true}, ""},
		{"under the token limit", llm.Limits{MaxTokens: 100}, llm.Usage{InputTokens: 60, OutputTokens: 39}, ""},
		{"token limit reached", llm.Limits{MaxTokens: 100}, llm.Usage{InputTokens: 60, OutputTokens: 40}, "token limit of 100 reached"},
		{"under the dollar limit", llm.Limits{MaxUSD: 1}, llm.Usage{CostUSD: 0.5, CostKnown: true}, ""},
		{"dollar limit reached", llm.Limits{MaxUSD: 1}, llm.Usage{CostUSD: 1.25, CostKnown: true}, "dollar limit of $1.0000 reached"},
		{"wall clock left", llm.Limits{WallClock: time.Hour}, llm.Usage{}, ""},
		{"wall clock over", llm.Limits{WallClock: time.Minute, Start: time.Now().Add(-2 * time.Minute)}, llm.Usage{}, "wall-clock limit of 1m0s reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := llm.NewLedger(tt.limits)
			l.Charge("planner", tt.charge)
			err := l.Check()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, llm.ErrBudgetExhausted) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Check() = %v, want ErrBudgetExhausted naming %q", err, tt.wantErr)
			}
		})
	}
}

func TestLedgerConcurrentCharges(t *testing.T) {
	l := llm.NewLedger(llm.Limits{})
	const workers, each = 32, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			caller := []string{"planner", "mediator", "executor/student-1/code"}[w%3]
			for range each {
				l.Charge(caller, llm.Usage{InputTokens: 2, OutputTokens: 1, CostUSD: 0.001, CostKnown: true})
				_ = l.Check()
				_ = l.ByCaller()
			}
		}()
	}
	wg.Wait()
	tot := l.Total()
	if tot.Calls != workers*each || tot.InputTokens != 2*workers*each || tot.OutputTokens != workers*each || !tot.CostKnown {
		t.Errorf("total = %+v", tot)
	}
	var sum int64
	for _, u := range l.ByCaller() {
		sum += u.Calls
	}
	if sum != workers*each {
		t.Errorf("calls by caller sum to %d, want %d", sum, workers*each)
	}
}

func TestLedgerUnknownCostMakesTotalUnknown(t *testing.T) {
	l := llm.NewLedger(llm.Limits{})
	l.Charge("a", llm.Usage{InputTokens: 1, CostKnown: true, CostUSD: 0.1})
	l.Charge("b", llm.Usage{InputTokens: 1})
	if l.Total().CostKnown {
		t.Error("total cost is known although one call's was not")
	}
	if !l.ByCaller()["a"].CostKnown || l.ByCaller()["b"].CostKnown {
		t.Errorf("by caller = %+v", l.ByCaller())
	}
}

func TestLedgerChildChargesParent(t *testing.T) {
	matrix := llm.NewLedger(llm.Limits{MaxTokens: 100})
	row1 := matrix.Child("row-a")
	row2 := matrix.ChildWithLimits("row-b", llm.Limits{MaxTokens: 30})

	row1.Charge("planner", llm.Usage{InputTokens: 20})
	row2.Charge("planner", llm.Usage{InputTokens: 30})
	if got := matrix.ByCaller()["row-a/planner"].InputTokens; got != 20 {
		t.Errorf("matrix sees row-a/planner = %d, want 20", got)
	}
	if got := row1.ByCaller()["planner"].InputTokens; got != 20 {
		t.Errorf("row sees planner = %d, want 20", got)
	}
	if err := row1.Check(); err != nil {
		t.Errorf("row-a stopped early: %v", err)
	}
	if err := row2.Check(); !errors.Is(err, llm.ErrBudgetExhausted) || !strings.Contains(err.Error(), "row-b") {
		t.Errorf("row-b Check = %v, want its own limit reached", err)
	}
	// The matrix-wide cap stops every row.
	row1.Charge("executor", llm.Usage{InputTokens: 50})
	if err := row1.Check(); !errors.Is(err, llm.ErrBudgetExhausted) {
		t.Errorf("row-a Check = %v, want the matrix limit reached", err)
	}
	if got := matrix.Total().InputTokens; got != 100 {
		t.Errorf("matrix total = %d, want 100", got)
	}
}

func TestLedgerSnapshotRestore(t *testing.T) {
	l := llm.NewLedger(llm.Limits{MaxTokens: 1000, WallClock: time.Hour, Start: time.Now().Add(-10 * time.Minute)})
	l.Charge("planner", llm.Usage{InputTokens: 100, OutputTokens: 20, CostKnown: true, CostUSD: 0.01})
	l.Charge("mediator", llm.Usage{InputTokens: 5})
	data, err := json.Marshal(l.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var snap llm.LedgerSnapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatal(err)
	}
	r := llm.NewLedger(llm.Limits{MaxTokens: 1000, WallClock: 15 * time.Minute})
	r.Restore(snap)
	if r.Total() != l.Total() {
		t.Errorf("restored total %+v, want %+v", r.Total(), l.Total())
	}
	if r.ByCaller()["planner"] != l.ByCaller()["planner"] {
		t.Errorf("restored planner %+v", r.ByCaller()["planner"])
	}
	if snap.Elapsed < 10*time.Minute {
		t.Errorf("snapshot elapsed %v, want at least 10m", snap.Elapsed)
	}
	if err := r.Check(); err != nil {
		t.Errorf("restored ledger with time left: %v", err)
	}
	// Time spent before the resume counts toward the wall-clock limit.
	r2 := llm.NewLedger(llm.Limits{WallClock: 5 * time.Minute})
	r2.Restore(snap)
	if err := r2.Check(); !errors.Is(err, llm.ErrBudgetExhausted) {
		t.Errorf("Check after restoring 10m into a 5m budget = %v", err)
	}
}

// countingProvider counts calls and answers with fixed usage.
type countingProvider struct {
	mu    sync.Mutex
	calls int
	usage llm.Usage
}

func (p *countingProvider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	p.mu.Lock()
	p.calls++
	p.mu.Unlock()
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "ok"}, Usage: p.usage}, nil
}

func (p *countingProvider) Offline() bool { return false }

func TestClientChecksBudgetBeforeCalling(t *testing.T) {
	p := &countingProvider{usage: llm.Usage{InputTokens: 60, OutputTokens: 0}}
	l := llm.NewLedger(llm.Limits{MaxTokens: 100})
	c := &llm.Client{Provider: p, Ledger: l, Role: "planner"}
	ctx := context.Background()
	for i := range 2 {
		if _, err := c.Complete(ctx, llm.Request{}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	_, err := c.Complete(ctx, llm.Request{})
	if !errors.Is(err, llm.ErrBudgetExhausted) {
		t.Fatalf("third call err = %v, want ErrBudgetExhausted", err)
	}
	if p.calls != 2 {
		t.Errorf("provider called %d times, want 2 (refused before the third)", p.calls)
	}
	// A request without a caller is charged to the client's role.
	if got := l.ByCaller()["planner"]; got.Calls != 2 || got.InputTokens != 120 {
		t.Errorf("planner usage = %+v", got)
	}
}

func TestValidatePrices(t *testing.T) {
	priced := config.Model{Provider: "openai", Model: "gpt-x", PriceInputPerMTok: ptr(1.0), PriceOutputPerMTok: ptr(2.0)}
	unpriced := config.Model{Provider: "openai", Model: "qwen-local"}
	offline := config.Model{Provider: "offline"}
	tests := []struct {
		name    string
		models  map[string]config.Model
		maxUSD  float64
		wantErr string
	}{
		{"no dollar budget", map[string]config.Model{"planner": unpriced}, 0, ""},
		{"all priced", map[string]config.Model{"planner": priced, "mediator": priced}, 5, ""},
		{"offline needs no price", map[string]config.Model{"planner": offline}, 5, ""},
		{"missing price", map[string]config.Model{"planner": priced, "code": unpriced}, 5,
			"model qwen-local for role code has no price; a dollar budget needs prices for every model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := llm.ValidatePrices(tt.models, tt.maxUSD)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestLedgerTapCollectsWhatItMatches(t *testing.T) {
	parent := llm.NewLedger(llm.Limits{})
	l := parent.Child("row")
	u := func(n int64) llm.Usage { return llm.Usage{InputTokens: n, Calls: 1} }
	l.Charge("planner/t1", u(1)) // before the taps: seen by neither
	all := l.Tap(nil)
	t1 := l.Tap(func(c string) bool { return strings.HasSuffix(c, "/t1") })
	onParent := parent.Tap(nil)
	l.Charge("planner/t1", u(10))
	l.Charge("mediator/t2", u(100))
	if got := t1.Take(); len(got) != 1 || got["planner/t1"].InputTokens != 10 {
		t.Errorf("matching tap took %+v; want planner/t1's 10 tokens only", got)
	}
	if got := t1.Take(); len(got) != 0 {
		t.Errorf("second Take gave %+v; want nothing new", got)
	}
	if got := onParent.Take(); got["row/mediator/t2"].InputTokens != 100 {
		t.Errorf("parent's tap took %+v; want the charge under the row's prefix", got)
	}
	taken := all.Take()
	all.Return(taken)
	l.Charge("planner/t1", u(5))
	snap, fromTap := l.SnapshotTaking(all)
	if fromTap["planner/t1"].InputTokens != 15 || fromTap["mediator/t2"].InputTokens != 100 {
		t.Errorf("SnapshotTaking took %+v; want what was returned plus the later charge", fromTap)
	}
	if snap.Total.InputTokens != 116 || len(all.Take()) != 0 {
		t.Errorf("snapshot total %d; want 116, with the tap emptied", snap.Total.InputTokens)
	}
	if rest := t1.Close(); rest["planner/t1"].InputTokens != 5 {
		t.Errorf("Close gave %+v; want the 5 tokens not taken yet", rest)
	}
	l.Charge("planner/t1", u(7))
	if got := t1.Take(); len(got) != 0 {
		t.Errorf("closed tap took %+v; want nothing", got)
	}
	snap.Apply(map[string]llm.Usage{"planner/t1": u(7)}, time.Hour)
	if snap.Total.InputTokens != 123 || snap.ByCaller["planner/t1"].InputTokens != 23 || snap.Elapsed != time.Hour {
		t.Errorf("applied snapshot %+v; want the charge added and the elapsed time set", snap)
	}
}
