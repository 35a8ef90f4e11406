package llm

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// ErrBudgetExhausted is wrapped by every error that stops work because a
// token, dollar or wall-clock limit was reached. Its BudgetExhausted method
// lets code that does not import this package recognise it (the trial
// contract, executor.IsBudgetExhausted).
var ErrBudgetExhausted error = budgetExhausted{}

type budgetExhausted struct{}

func (budgetExhausted) Error() string { return "budget exhausted" }

// BudgetExhausted reports true: a limit stopped the work.
func (budgetExhausted) BudgetExhausted() bool { return true }

// Limits caps what a ledger may spend. Zero values mean unlimited.
type Limits struct {
	MaxTokens int64
	MaxUSD    float64
	WallClock time.Duration
	// Start is when the wall clock started; zero means when the ledger was made.
	Start time.Time
	// ChargeSent charges attempts an endpoint received but reported no usage
	// for (errors, timeouts, discarded answers) at an estimate of what they
	// sent (Response.Unreported); false charges only what endpoints report.
	// A child ledger follows its root's setting.
	ChargeSent bool
}

// Ledger records the usage of every model call by caller and enforces
// limits. A child ledger (see Child) also charges its parent, so one
// matrix-wide ledger can cap all of its rows. It is safe for concurrent use.
type Ledger struct {
	mu       sync.Mutex
	limits   Limits
	byCaller map[string]Usage
	total    Usage
	// elapsedBefore is wall-clock time spent before a resume.
	elapsedBefore time.Duration

	parent *Ledger
	prefix string
	now    func() time.Time
	// taps see every charge made here while they are attached.
	taps []*Tap
}

// NewLedger returns an empty ledger with the given limits.
func NewLedger(l Limits) *Ledger {
	if l.Start.IsZero() {
		l.Start = time.Now()
	}
	return &Ledger{limits: l, byCaller: map[string]Usage{}, now: time.Now}
}

// Child returns a ledger with no limits of its own whose charges are also
// recorded in l under prefix + "/" + caller, and whose Check fails when l's does.
func (l *Ledger) Child(prefix string) *Ledger {
	return l.ChildWithLimits(prefix, Limits{})
}

// ChildWithLimits is Child with limits of its own, e.g. a per-run budget
// inside a matrix-wide one.
func (l *Ledger) ChildWithLimits(prefix string, lim Limits) *Ledger {
	c := NewLedger(lim)
	c.parent = l
	c.prefix = prefix
	return c
}

// Limits returns the ledger's own limits.
func (l *Ledger) Limits() Limits {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limits
}

// Charge records one call's usage under caller, here and in every ancestor.
func (l *Ledger) Charge(caller string, u Usage) {
	if u.Calls == 0 {
		u.Calls = 1
	}
	for cur := l; cur != nil; cur = cur.parent {
		cur.mu.Lock()
		cur.byCaller[caller] = cur.byCaller[caller].Add(u)
		cur.total = cur.total.Add(u)
		for _, t := range cur.taps {
			if t.match == nil || t.match(caller) {
				t.charges[caller] = t.charges[caller].Add(u)
			}
		}
		cur.mu.Unlock()
		if cur.prefix != "" {
			caller = cur.prefix + "/" + caller
		}
	}
}

// chargesSent reports the root ledger's ChargeSent.
func (l *Ledger) chargesSent() bool {
	root := l
	for root.parent != nil {
		root = root.parent
	}
	root.mu.Lock()
	defer root.mu.Unlock()
	return root.limits.ChargeSent
}

// Check returns an error wrapping ErrBudgetExhausted naming the first limit
// reached, here or in an ancestor; nil while there is budget left.
func (l *Ledger) Check() error {
	for cur := l; cur != nil; cur = cur.parent {
		if err := cur.checkOwn(); err != nil {
			return err
		}
	}
	return nil
}

func (l *Ledger) checkOwn() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	scope := "budget"
	if l.prefix != "" {
		scope = "budget of " + l.prefix
	}
	lim := l.limits
	if lim.MaxTokens > 0 && l.total.Tokens() >= lim.MaxTokens {
		return fmt.Errorf("%w: %s: token limit of %d reached (%d used)", ErrBudgetExhausted, scope, lim.MaxTokens, l.total.Tokens())
	}
	if lim.MaxUSD > 0 && l.total.CostUSD >= lim.MaxUSD {
		return fmt.Errorf("%w: %s: dollar limit of $%.4f reached ($%.4f spent)", ErrBudgetExhausted, scope, lim.MaxUSD, l.total.CostUSD)
	}
	if lim.WallClock > 0 {
		if el := l.elapsedLocked(); el >= lim.WallClock {
			return fmt.Errorf("%w: %s: wall-clock limit of %s reached (%s elapsed)", ErrBudgetExhausted, scope, lim.WallClock, el.Round(time.Second))
		}
	}
	return nil
}

func (l *Ledger) elapsedLocked() time.Duration {
	return l.elapsedBefore + l.now().Sub(l.limits.Start)
}

// ByCaller returns a copy of the usage per caller.
func (l *Ledger) ByCaller() map[string]Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.byCaller)
}

// Total returns the usage of all callers together.
func (l *Ledger) Total() Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Elapsed is the wall-clock time spent so far, resumes included.
func (l *Ledger) Elapsed() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.elapsedLocked()
}

// Tap collects the charges a ledger receives from the moment it is
// attached, by caller (in that ledger's caller paths). Reading a tap costs
// in proportion to what it collected, not to the ledger's size, so
// per-trial bookkeeping need not copy the whole ledger.
type Tap struct {
	l       *Ledger
	match   func(caller string) bool
	charges map[string]Usage
}

// Tap attaches a tap that collects the charges whose caller match accepts
// (all of them when match is nil). Detach it with Close.
func (l *Ledger) Tap(match func(caller string) bool) *Tap {
	t := &Tap{l: l, match: match, charges: map[string]Usage{}}
	l.mu.Lock()
	l.taps = append(l.taps, t)
	l.mu.Unlock()
	return t
}

// Take returns what the tap collected since it was attached or last taken,
// and empties it.
func (t *Tap) Take() map[string]Usage {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	c := t.charges
	t.charges = map[string]Usage{}
	return c
}

// Return gives back charges Take returned that could not be recorded, so
// the next Take has them again.
func (t *Tap) Return(charges map[string]Usage) {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	for caller, u := range charges {
		t.charges[caller] = t.charges[caller].Add(u)
	}
}

// Close detaches the tap and returns what it collected since last taken.
func (t *Tap) Close() map[string]Usage {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	t.l.taps = slices.DeleteFunc(t.l.taps, func(o *Tap) bool { return o == t })
	c := t.charges
	t.charges = map[string]Usage{}
	return c
}

// SnapshotTaking is Snapshot and t.Take in one step, so that no charge is
// both in the snapshot and in what the tap collects next. t must be
// attached to l.
func (l *Ledger) SnapshotTaking(t *Tap) (LedgerSnapshot, map[string]Usage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	taken := t.charges
	t.charges = map[string]Usage{}
	return LedgerSnapshot{ByCaller: maps.Clone(l.byCaller), Total: l.total, Elapsed: l.elapsedLocked()}, taken
}

// LedgerSnapshot is a ledger's state as JSON, saved in checkpoints.
type LedgerSnapshot struct {
	ByCaller map[string]Usage `json:"by_caller"`
	Total    Usage            `json:"total"`
	// Elapsed is the wall-clock time spent so far, so a resumed run keeps
	// counting toward its wall-clock limit from there.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Snapshot returns the ledger's state for a checkpoint.
func (l *Ledger) Snapshot() LedgerSnapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LedgerSnapshot{ByCaller: maps.Clone(l.byCaller), Total: l.total, Elapsed: l.elapsedLocked()}
}

// Apply adds charges made after the snapshot was taken, and sets the
// elapsed wall-clock time to what it was when they were recorded.
func (s *LedgerSnapshot) Apply(charges map[string]Usage, elapsed time.Duration) {
	if s.ByCaller == nil {
		s.ByCaller = map[string]Usage{}
	}
	for caller, u := range charges {
		s.ByCaller[caller] = s.ByCaller[caller].Add(u)
		s.Total = s.Total.Add(u)
	}
	s.Elapsed = max(s.Elapsed, elapsed)
}

// Restore replaces the ledger's state with a snapshot and restarts its wall
// clock from the snapshot's elapsed time. Only this ledger changes: restore
// a parent from its own snapshot, since its totals already include the child's.
func (l *Ledger) Restore(s LedgerSnapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byCaller = maps.Clone(s.ByCaller)
	if l.byCaller == nil {
		l.byCaller = map[string]Usage{}
	}
	l.total = s.Total
	l.elapsedBefore = s.Elapsed
	l.limits.Start = l.now()
}
