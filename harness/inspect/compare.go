package inspect

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/harness/stats"
)

// Defaults of CompareOptions.
const (
	DefaultResamples      = 2000
	DefaultLevel          = 0.95
	DefaultBootstrapSeed  = 1
	DefaultDominanceShare = stats.DominanceThreshold
	// DefaultMaxK caps the k Compare chooses for pass@k and pass^k. With as
	// many trials per task as k, both estimates degenerate to "some trial
	// succeeded" and "every trial succeeded"; 5 trials per task is a common
	// reporting point.
	DefaultMaxK = 5
	noFeedback  = "no_feedback"
)

// ErrUnknownBaseline is wrapped by Compare's error when
// CompareOptions.Baseline names no row of the directory: a mistake in what
// was asked for, not in the data, which the command line reports as bad
// usage.
var ErrUnknownBaseline = errors.New("unknown baseline row")

// CompareOptions tunes Compare. The zero value uses the defaults above, so
// the same directory always gives the same numbers.
type CompareOptions struct {
	// Baseline names the row the paired differences are taken against.
	// Empty: the no_feedback row when there is one, else the first row.
	Baseline string
	// Resamples is the number of bootstrap resamples (B); 0 means 2000.
	Resamples int
	// Level is the confidence level of every interval; 0 means 0.95.
	Level float64
	// Seed seeds the bootstrap; 0 means 1. The same seed gives the same
	// intervals.
	Seed uint64
	// DominanceShare is the share of a row's result (or of its difference
	// to the baseline) above which a single task draws a warning; 0 means
	// stats.DominanceThreshold (0.5).
	DominanceShare float64
	// K is the k of pass@k and pass^k, one for every row; 0 chooses it: the
	// fewest trials any task had in any row (scored or not, so a lost trial
	// does not change it), at most DefaultMaxK. Every row's pass@k and pass^k
	// average over the same tasks, those with at least K scored trials in
	// every row (Comparison.PassKTasks); a task with fewer in some row is
	// left out of all of them.
	K int
}

func (o CompareOptions) withDefaults() CompareOptions {
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = DefaultLevel
	}
	if o.Seed == 0 {
		o.Seed = DefaultBootstrapSeed
	}
	if o.DominanceShare <= 0 {
		o.DominanceShare = DefaultDominanceShare
	}
	return o
}

// Comparison compares the rows of a matrix (or the single row of a run).
type Comparison struct {
	ID     string        `json:"id"`
	Path   string        `json:"path"`
	Kind   rundir.Kind   `json:"kind"`
	Status rundir.Status `json:"status"`
	// Baseline is the row every paired difference is taken against, and
	// BaselineReason why that row: "no_feedback row", "first row (no
	// no_feedback row)" or "chosen".
	Baseline       string  `json:"baseline"`
	BaselineReason string  `json:"baseline_reason"`
	Level          float64 `json:"level"`
	Resamples      int     `json:"resamples"`
	BootstrapSeed  uint64  `json:"bootstrap_seed"`
	// K is the k of every row's pass@k and pass^k (see CompareOptions.K);
	// they are reported when K >= 2.
	K int `json:"k"`
	// PassKTasks counts the tasks every row's pass@k and pass^k average
	// over: those with at least K scored trials in every row, so the rows'
	// numbers rest on the same tasks. PassKLeftOut counts the tasks scored
	// in some row but left out for having fewer than K scored trials in
	// some row. Both are 0 when K < 2.
	PassKTasks   int `json:"pass_k_tasks"`
	PassKLeftOut int `json:"pass_k_left_out"`

	Rows     []RowComparison `json:"rows"`
	Warnings []string        `json:"warnings"`
}

// RowComparison is one row of a Comparison. Seeds of one row (directories
// <row>-seed<S>) are pooled: their trials count per task together.
type RowComparison struct {
	Row            string  `json:"row"`
	BaselinePreset string  `json:"baseline_preset,omitempty"`
	Condition      string  `json:"condition"`
	Policy         string  `json:"skill_update_policy"`
	Lab            string  `json:"lab,omitempty"`
	Seeds          []int64 `json:"seeds"`
	Runs           int     `json:"runs"`
	Offline        bool    `json:"offline"`
	Iterations     int     `json:"iterations"`

	// Tasks counts tasks with at least one scored trial; only they enter
	// the means.
	Tasks       int `json:"tasks"`
	Trials      int `json:"trials"`
	Scored      int `json:"scored"`
	EnvFailures int `json:"env_failures"`
	// Unscored counts trials without a reward that were not environment
	// failures (agent errors, verifier errors).
	Unscored int `json:"unscored"`

	// MeanReward is the macro mean: the mean over tasks of each task's mean
	// scored reward. CILow and CIHigh bound it by a bootstrap over tasks.
	MeanReward *float64 `json:"mean_reward"`
	CILow      *float64 `json:"ci_low"`
	CIHigh     *float64 `json:"ci_high"`

	// Diff is the paired per-task difference to the baseline row; nil on
	// the baseline itself or when the two rows share no scored task.
	Diff *Diff `json:"diff"`

	// PassAtK and PassHatK average, at the comparison's k (Comparison.K),
	// over the tasks with at least k scored trials in every row (the same
	// Comparison.PassKTasks tasks for every row); set when k >= 2 and some
	// task qualifies. PassKSkipped counts the row's scored tasks left out
	// of them (Tasks - PassKTasks), whichever row had too few trials;
	// PassKShort counts the tasks scored in some row that have fewer than
	// k scored trials in this one: the tasks this row leaves out of every
	// row's pass@k and pass^k.
	PassAtK      *float64 `json:"pass_at_k"`
	PassHatK     *float64 `json:"pass_hat_k"`
	PassKSkipped int      `json:"pass_k_skipped"`
	PassKShort   int      `json:"pass_k_short"`

	DominantTask  string   `json:"dominant_task,omitempty"`
	DominantShare *float64 `json:"dominant_share"`
	Warnings      []string `json:"warnings"`
}

// Diff is a paired difference, this row minus the baseline, over the tasks
// both rows scored. CILow and CIHigh are nil when fewer than two tasks are
// shared: one difference gives no interval.
type Diff struct {
	Against string   `json:"against"`
	Tasks   int      `json:"tasks"`
	Mean    float64  `json:"mean"`
	CILow   *float64 `json:"ci_low"`
	CIHigh  *float64 `json:"ci_high"`
	// DominantTask carries the largest share of the difference (gains and
	// losses both count); empty when every task's difference is 0.
	DominantTask  string   `json:"dominant_task,omitempty"`
	DominantShare *float64 `json:"dominant_share"`
}

// rowAgg accumulates one compared row while the metrics stream by.
type rowAgg struct {
	name                           string
	rank                           int
	preset, condition, policy, lab string
	seeds                          map[int64]bool
	runs                           map[string]bool
	offline                        bool
	maxIter                        int
	perTask                        map[string][]float64
	attempts                       map[string]int // trials per task, scored or not
	trials, scored, env, unscored  int
}

func newRowAgg(name string) *rowAgg {
	return &rowAgg{name: name, seeds: map[int64]bool{}, runs: map[string]bool{}, perTask: map[string][]float64{},
		attempts: map[string]int{}}
}

func (a *rowAgg) add(c *record) {
	if a.condition == "" {
		a.preset, a.condition, a.policy, a.lab = c.Preset, c.Condition, c.Policy, c.Lab
	}
	a.seeds[c.Seed] = true
	a.runs[c.RunID] = true
	a.offline = a.offline || c.Offline
	a.maxIter = max(a.maxIter, int(c.Iteration))
	a.trials++
	a.attempts[c.TaskID]++
	if r, ok := c.scoredReward(); ok {
		a.scored++
		a.perTask[c.TaskID] = append(a.perTask[c.TaskID], r)
	} else if c.EnvFailure {
		a.env++
	} else {
		a.unscored++
	}
}

// Compare reads every metric row under dir (a matrix, or a single run) and
// compares its rows: macro mean reward with a bootstrap interval over tasks,
// the paired per-task difference to the baseline row, pass@k and pass^k,
// environment failures counted apart, and a warning when one task
// dominates. Results are deterministic for given options.
func Compare(dir string, opts CompareOptions) (*Comparison, error) {
	opts = opts.withDefaults()
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	files, err := metricFiles(dir)
	if err != nil {
		return nil, err
	}
	rows := map[string]*rowAgg{}
	names := rowNamer{}
	err = scanFiles(files, compareScan, func(batch []record) error {
		for i := range batch {
			c := &batch[i]
			name := names.name(c.Row, c.Seed)
			a := rows[name]
			if a == nil {
				a = newRowAgg(name)
				rows[name] = a
			}
			a.add(c)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("compare %s: %w", dir, err)
	}
	return compareRows(m, dir, rows, opts)
}

func compareRows(m rundir.Manifest, dir string, rows map[string]*rowAgg, opts CompareOptions) (*Comparison, error) {
	cmp := &Comparison{
		ID: m.ID, Path: dir, Kind: m.Kind, Status: m.Status,
		Level: opts.Level, Resamples: opts.Resamples, BootstrapSeed: opts.Seed,
		Rows: []RowComparison{}, Warnings: []string{},
	}
	ordered := orderRows(rows, m.Rows)
	if len(ordered) == 0 {
		cmp.Warnings = append(cmp.Warnings, "no metric rows yet: nothing to compare")
		return cmp, nil
	}

	var base *rowAgg
	switch {
	case opts.Baseline != "":
		base = rows[opts.Baseline]
		if base == nil {
			return nil, fmt.Errorf("compare %s: %w: no row named %q to compare against (rows: %s)", dir, ErrUnknownBaseline, opts.Baseline, rowNames(ordered))
		}
		cmp.BaselineReason = "chosen"
	default:
		base = rows[noFeedback]
		if base == nil {
			for _, a := range ordered {
				if a.condition == noFeedback && a.policy == "none" {
					base = a
					break
				}
			}
		}
		if base != nil {
			cmp.BaselineReason = "no_feedback row"
		} else {
			base = ordered[0]
			cmp.BaselineReason = "first row (no no_feedback row)"
		}
	}
	cmp.Baseline = base.name
	cmp.K = chooseK(ordered, opts.K)
	if cmp.K < 2 && opts.K <= 0 && anyTaskScoredTwice(ordered) {
		cmp.Warnings = append(cmp.Warnings, "pass@k and pass^k not reported: some row has a task that ran only once, and k is the same for every row")
	}
	scope := newPassKScope(ordered, cmp.K)
	if scope != nil {
		cmp.PassKTasks, cmp.PassKLeftOut = len(scope.tasks), len(scope.all)-len(scope.tasks)
		switch k := cmp.K; {
		case cmp.PassKLeftOut == 0:
		case cmp.PassKTasks == 0:
			cmp.Warnings = append(cmp.Warnings, fmt.Sprintf("pass@%d and pass^%d not reported for any row: no task has at least %d scored trials in every row; %s left out",
				k, k, k, plural(cmp.PassKLeftOut, "task")))
		default:
			cmp.Warnings = append(cmp.Warnings, fmt.Sprintf("pass@%d and pass^%d over %s with at least %d scored trials in every row; %s left out",
				k, k, plural(cmp.PassKTasks, "task"), k, plural(cmp.PassKLeftOut, "task")))
		}
	}

	// Trials arrive in file order; sorting each task's rewards makes the
	// bootstrap independent of that order. Done before the rows are
	// summarized concurrently, which only read them.
	for _, a := range ordered {
		for _, rs := range a.perTask {
			slices.Sort(rs)
		}
	}
	// The bootstraps dominate a comparison's time and rows are independent
	// (each draws from its own generator seeded with opts.Seed), so rows are
	// summarized in parallel; results land by index, so order is kept.
	cmp.Rows = make([]RowComparison, len(ordered))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, a := range ordered {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			cmp.Rows[i] = compareRow(a, base, scope, opts)
		}()
	}
	wg.Wait()
	for _, a := range ordered {
		if a.offline {
			cmp.Warnings = append(cmp.Warnings, "offline results: these runs used the offline model provider and test the machinery, not the agents")
			break
		}
	}
	return cmp, nil
}

// chooseK is the k of pass@k and pass^k for every row: fixed when k > 0,
// else the fewest trials any task had in any row, at most DefaultMaxK.
// Trials count whether scored or not, so an environment failure does not
// change k; it can only leave its task out (see newPassKScope).
func chooseK(rows []*rowAgg, fixed int) int {
	if fixed > 0 {
		return fixed
	}
	k := DefaultMaxK
	for _, a := range rows {
		for _, n := range a.attempts {
			k = min(k, n)
		}
	}
	return k
}

// passKScope is what every row's pass@k and pass^k average over.
type passKScope struct {
	k int
	// all holds the tasks scored in some row, tasks those with at least k
	// scored trials in every row; both sorted, so sums run in one order.
	all, tasks []string
}

// newPassKScope finds the tasks every row's pass@k and pass^k average
// over: those with at least k scored trials in every row. Averaging each
// row over its own such tasks would compare rows over different tasks, and
// a row whose lost trials cluster on hard tasks would look better for
// dropping them. Nil when k < 2: nothing is reported.
func newPassKScope(rows []*rowAgg, k int) *passKScope {
	if k < 2 {
		return nil
	}
	union := map[string]bool{}
	for _, a := range rows {
		for t := range a.perTask {
			union[t] = true
		}
	}
	s := &passKScope{k: k, all: make([]string, 0, len(union)), tasks: []string{}}
	for t := range union {
		s.all = append(s.all, t)
	}
	slices.Sort(s.all)
	for _, t := range s.all {
		if !slices.ContainsFunc(rows, func(a *rowAgg) bool { return len(a.perTask[t]) < k }) {
			s.tasks = append(s.tasks, t)
		}
	}
	return s
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func anyTaskScoredTwice(rows []*rowAgg) bool {
	for _, a := range rows {
		for _, rs := range a.perTask {
			if len(rs) >= 2 {
				return true
			}
		}
	}
	return false
}

// compareRow summarizes a and, unless it is the baseline, its paired
// difference to base.
func compareRow(a, base *rowAgg, scope *passKScope, opts CompareOptions) RowComparison {
	rc := summarizeRow(a, scope, opts)
	if a != base {
		rc.Diff = pairedDiff(a, base, opts)
		switch d := rc.Diff; {
		case d == nil:
			rc.Warnings = append(rc.Warnings, fmt.Sprintf("shares no scored task with %s: no paired difference", base.name))
		case d.Tasks == 1:
			rc.Warnings = append(rc.Warnings, fmt.Sprintf("shares only task %s with %s: the difference is that one task's and has no interval",
				soleTask(a, base), base.name))
		case d.Tasks > 1 && d.DominantShare != nil && *d.DominantShare > opts.DominanceShare:
			rc.Warnings = append(rc.Warnings, fmt.Sprintf("task %s carries %.0f%% of the difference to %s: the difference rests mostly on one task",
				d.DominantTask, 100**d.DominantShare, base.name))
		}
	}
	return rc
}

// soleTask is a task both rows scored (the only one, where it is called).
func soleTask(a, base *rowAgg) string {
	for t := range a.perTask {
		if _, ok := base.perTask[t]; ok {
			return t
		}
	}
	return ""
}

// summarizeRow computes everything about a row that does not involve the
// baseline; scope is what its pass@k and pass^k average over (nil: not
// reported).
func summarizeRow(a *rowAgg, scope *passKScope, opts CompareOptions) RowComparison {
	rc := RowComparison{
		Row: a.name, BaselinePreset: a.preset, Condition: a.condition, Policy: a.policy, Lab: a.lab,
		Runs: len(a.runs), Offline: a.offline, Iterations: a.maxIter,
		Tasks: len(a.perTask), Trials: a.trials, Scored: a.scored, EnvFailures: a.env, Unscored: a.unscored,
		Warnings: []string{},
	}
	for s := range a.seeds {
		rc.Seeds = append(rc.Seeds, s)
	}
	slices.Sort(rc.Seeds)
	if a.env > 0 {
		rc.Warnings = append(rc.Warnings, fmt.Sprintf("environment failures left out of the means (never scored as zeros): %d", a.env))
	}
	if a.unscored > 0 {
		rc.Warnings = append(rc.Warnings, fmt.Sprintf("unscored trials (agent errors, verifier errors) left out of the means: %d; "+
			"`harness inspect` on the row's run directory counts them by status", a.unscored))
	}
	if scope != nil {
		passK(&rc, a, scope)
	}
	if len(a.perTask) == 0 {
		rc.Warnings = append(rc.Warnings, "no scored trials")
		return rc
	}
	rc.MeanReward = float(stats.MacroMean(a.perTask))
	lo, hi := stats.BootstrapMacroCI(a.perTask, opts.Resamples, opts.Level, opts.Seed)
	rc.CILow, rc.CIHigh = float(lo), float(hi)

	task, share := stats.Dominance(a.perTask)
	if task != "" {
		rc.DominantTask = task
		rc.DominantShare = float(share)
	}
	switch {
	case len(a.perTask) == 1:
		// Said whatever the task's mean, 0 included (Dominance names no
		// task then).
		for t := range a.perTask {
			rc.Warnings = append(rc.Warnings, fmt.Sprintf("only task %s was scored: the mean is that one task's", t))
		}
	case task != "" && share > opts.DominanceShare:
		rc.Warnings = append(rc.Warnings, fmt.Sprintf("task %s carries %.0f%% of the mean reward: the result rests mostly on one task", task, 100*share))
	}
	return rc
}

// passK sets rc's pass@k and pass^k, averaged over scope's tasks (every
// one of which a scored at least k times), and counts the tasks left out.
func passK(rc *RowComparison, a *rowAgg, scope *passKScope) {
	k := scope.k
	for _, t := range scope.all {
		if len(a.perTask[t]) < k {
			rc.PassKShort++
		}
	}
	rc.PassKSkipped = len(a.perTask) - len(scope.tasks)
	if rc.PassKShort > 0 {
		rc.Warnings = append(rc.Warnings, fmt.Sprintf("%s (of those scored in some row) with fewer than %d scored trials here: "+
			"left out of every row's pass@%d and pass^%d", plural(rc.PassKShort, "task"), k, k, k))
	}
	if len(scope.tasks) == 0 {
		return
	}
	var at, hat float64
	for _, t := range scope.tasks {
		rs := a.perTask[t]
		c := 0
		for _, r := range rs {
			if r >= Success {
				c++
			}
		}
		at += stats.PassAtK(len(rs), c, k)
		hat += stats.PassHatK(len(rs), c, k)
	}
	n := float64(len(scope.tasks))
	rc.PassAtK, rc.PassHatK = float(at/n), float(hat/n)
}

// pairedDiff compares a to the baseline over the tasks both scored.
func pairedDiff(a, base *rowAgg, opts CompareOptions) *Diff {
	shared := 0
	for t := range a.perTask {
		if _, ok := base.perTask[t]; ok {
			shared++
		}
	}
	if shared == 0 {
		return nil
	}
	mean, lo, hi := stats.PairedDiffCI(a.perTask, base.perTask, opts.Resamples, opts.Level, opts.Seed)
	d := &Diff{Against: base.name, Tasks: shared, Mean: mean, CILow: float(lo), CIHigh: float(hi)}
	if task, share := stats.Dominance(stats.PairedDiffs(a.perTask, base.perTask)); task != "" {
		d.DominantTask, d.DominantShare = task, float(share)
	}
	return d
}

// orderRows puts rows in the matrix's plan order (by the first of their
// directories the manifest names), then the rest by name.
func orderRows(rows map[string]*rowAgg, plan []string) []*rowAgg {
	rank := map[string]int{}
	for i, r := range plan {
		if _, ok := rank[r]; !ok {
			rank[r] = i
		}
	}
	out := make([]*rowAgg, 0, len(rows))
	for _, a := range rows {
		a.rank = len(plan)
		for dirName := range a.dirNames() {
			if i, ok := rank[dirName]; ok && i < a.rank {
				a.rank = i
			}
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].rank != out[j].rank {
			return out[i].rank < out[j].rank
		}
		return out[i].name < out[j].name
	})
	return out
}

// dirNames are the directory names this row's runs may have: the row name
// itself and its per-seed directories.
func (a *rowAgg) dirNames() map[string]bool {
	out := map[string]bool{a.name: true}
	for s := range a.seeds {
		out[fmt.Sprintf("%s-seed%d", a.name, s)] = true
	}
	return out
}

func rowNames(rows []*rowAgg) string {
	names := make([]string, len(rows))
	for i, a := range rows {
		names[i] = a.name
	}
	return fmt.Sprint(names)
}

// rowNamer gives the name a metric row is compared under. A matrix row run
// with several seeds is written as <name>-seed<S> per seed; those runs are
// one row whose trials pool per task. Names are cached: every metric row
// asks.
type rowNamer map[rowSeed]string

type rowSeed struct {
	row  string
	seed int64
}

func (n rowNamer) name(row string, seed int64) string {
	key := rowSeed{row, seed}
	if name, ok := n[key]; ok {
		return name
	}
	name := row
	if base, ok := strings.CutSuffix(row, fmt.Sprintf("-seed%d", seed)); ok && base != "" {
		name = base
	}
	n[key] = name
	return name
}
