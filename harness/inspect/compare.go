package inspect

import (
	"errors"
	"fmt"
	"maps"
	"math"
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
	// DefaultLastN is how many final training iterations the last-N
	// estimand averages: late enough to show where learning got to, long
	// enough (with a trial per task per iteration) to give each task
	// several trials.
	DefaultLastN = 10
	// DefaultEffectOfInterest is the difference the power statement asks
	// about unless told otherwise.
	DefaultEffectOfInterest = stats.DefaultEffectOfInterest
	noFeedback              = "no_feedback"
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
	// Resamples is the number of random sign patterns the permutation
	// test draws when a comparison has more than stats.ExactFlipsMax tasks
	// (fewer are enumerated exactly); 0 means 2000.
	Resamples int
	// Level is the confidence level of every interval; 0 means 0.95. One
	// minus it is the family-wise level of the Holm decisions.
	Level float64
	// Seed seeds the random sign patterns; 0 means 1. The same seed gives
	// the same p-values.
	Seed uint64
	// LastN is how many final training iterations of each run the last-N
	// estimand averages; 0 means DefaultLastN.
	LastN int
	// EffectOfInterest is the difference worth detecting: the power
	// statement warns when the matrix cannot detect it; 0 means
	// DefaultEffectOfInterest.
	EffectOfInterest float64
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
	// By is what a compared row is: ByRow (empty), each row of the matrix,
	// or ByStudent, each row's students apart ("<row>/<student>"), so the
	// students' curves are compared, paired on the tasks they share, with
	// the intervals and tests rows get.
	By string
}

// What CompareOptions.By groups by.
const (
	ByRow     = "row"
	ByStudent = "student"
)

// ErrUnknownBy is wrapped by Compare's error when CompareOptions.By is
// neither ByRow nor ByStudent.
var ErrUnknownBy = errors.New("unknown grouping")

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
	if o.LastN <= 0 {
		o.LastN = DefaultLastN
	}
	if o.EffectOfInterest <= 0 {
		o.EffectOfInterest = DefaultEffectOfInterest
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
	// Alpha is the family-wise level of the Holm decisions, 1 - Level.
	Alpha         float64 `json:"alpha"`
	Resamples     int     `json:"resamples"`
	BootstrapSeed uint64  `json:"bootstrap_seed"`
	// Headline is the estimand the rows' mean_reward, ci and diff report:
	// held_out when some row has evaluation rows, else last_n. LastN is
	// the N of last_n.
	Headline  string         `json:"headline"`
	LastN     int            `json:"last_n"`
	Estimands []EstimandInfo `json:"estimands"`
	// Power is the minimum detectable difference of the headline
	// comparison; nil when no row could be compared over two tasks.
	// EffectOfInterest is the difference it is held against.
	Power            *PowerStatement `json:"power"`
	EffectOfInterest float64         `json:"effect_of_interest"`
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
// <row>-seed<S>) are one row: each seed is an independent run, a level
// above tasks and trials in every interval.
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

	// Tasks counts tasks with at least one scored trial in any phase.
	Tasks  int `json:"tasks"`
	Trials int `json:"trials"`
	Scored int `json:"scored"`
	// EnvFailures counts trials lost to the environment; Unscored trials
	// without a reward that were not (agent errors, verifier errors, an
	// interrupted trial). Neither is ever scored as 0.
	EnvFailures int `json:"env_failures"`
	Unscored    int `json:"unscored"`

	// MeanReward, CILow, CIHigh, IQM and Diff repeat the headline
	// estimate (Comparison.Headline) of Estimates.
	MeanReward *float64 `json:"mean_reward"`
	CILow      *float64 `json:"ci_low"`
	CIHigh     *float64 `json:"ci_high"`
	IQM        *float64 `json:"iqm"`
	Diff       *Diff    `json:"diff"`
	// Estimates holds every estimand the row has data for, in the order
	// whole_curve, last_n, held_out.
	Estimates []Estimate `json:"estimates"`

	// PassAtK and PassHatK average, at the comparison's k (Comparison.K),
	// over the tasks with at least k scored training trials in every row
	// (the same Comparison.PassKTasks tasks for every row); set when k >= 2
	// and some task qualifies. PassKSkipped counts the row's scored tasks
	// left out of them (Tasks - PassKTasks), whichever row had too few
	// trials; PassKShort counts the tasks scored in some row that have
	// fewer than k scored trials in this one: the tasks this row leaves out
	// of every row's pass@k and pass^k.
	PassAtK      *float64 `json:"pass_at_k"`
	PassHatK     *float64 `json:"pass_hat_k"`
	PassKSkipped int      `json:"pass_k_skipped"`
	PassKShort   int      `json:"pass_k_short"`

	DominantTask  string   `json:"dominant_task,omitempty"`
	DominantShare *float64 `json:"dominant_share"`
	Warnings      []string `json:"warnings"`
}

// Diff is a paired difference, this row minus another, over the tasks
// both scored. CILow and CIHigh are nil when fewer than two tasks are
// shared: one difference gives no interval.
type Diff struct {
	Against string `json:"against"`
	Tasks   int    `json:"tasks"`
	// Seeds is how many of this row's seeds the interval treats as
	// independent runs.
	Seeds  int      `json:"seeds"`
	Mean   float64  `json:"mean"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	// P is the two-sided p-value of no difference, found by Test
	// ("sign-flip": paired permutation over tasks, one seed; "t": the test
	// the interval inverts, several seeds). PHolm is it adjusted by Holm's
	// method across the rows compared with the same row on the same
	// estimand, and Significant whether PHolm <= Comparison.Alpha: the
	// family-wise decision.
	P           *float64 `json:"p"`
	Test        string   `json:"test,omitempty"`
	PHolm       *float64 `json:"p_holm"`
	Significant bool     `json:"significant"`
	// ConditionalOn says what the interval and p treat as random: tasks
	// only with one seed (the run is held fixed), tasks and runs with
	// several.
	ConditionalOn string `json:"conditional_on"`
	// PoI is the probability of improvement: per task the chance that a
	// trial of this row beats one of the other (ties half), averaged.
	// PoILow and PoIHigh are its stratified bootstrap interval (rliable):
	// the tasks held fixed, both rows' trials redrawn per task.
	PoI     *float64 `json:"poi"`
	PoILow  *float64 `json:"poi_ci_low"`
	PoIHigh *float64 `json:"poi_ci_high"`
	// MinDetectable is the difference this comparison would detect with
	// 80% power at the 5% level, from its own variance and design.
	MinDetectable *float64 `json:"min_detectable_diff"`
	// DominantTask carries the largest share of the difference (gains and
	// losses both count); empty when every task's difference is 0.
	DominantTask  string   `json:"dominant_task,omitempty"`
	DominantShare *float64 `json:"dominant_share"`

	variance *stats.Variance // for the comparison's power statement
	design   stats.Design
}

// rowAgg accumulates one compared row while the metrics stream by.
type rowAgg struct {
	name                           string
	rank                           int
	preset, condition, policy, lab string
	seeds                          map[int64]*seedAgg
	runs                           map[string]bool
	offline                        bool
	maxIter                        int
	perTask                        map[string]*stats.Rewards // scored training rewards, seeds pooled
	lastN                          int                       // the last-N estimand's N, which bounds what seeds keep
	attempts                       map[string]int            // training trials per task, scored or not
	tasks                          map[string]bool           // tasks scored in any phase
	trials, scored, env, unscored  int
	otherPhase                     map[string]int // rows of a phase neither train nor eval
}

func newRowAgg(name string) *rowAgg {
	return &rowAgg{name: name, seeds: map[int64]*seedAgg{}, runs: map[string]bool{}, perTask: map[string]*stats.Rewards{},
		attempts: map[string]int{}, tasks: map[string]bool{}, otherPhase: map[string]int{}}
}

// seed returns the aggregate of one of the row's seeds, creating it.
func (a *rowAgg) seed(s int64) *seedAgg {
	sa := a.seeds[s]
	if sa == nil {
		sa = &seedAgg{train: map[string]*taskTrain{}, eval: map[int32]map[string]*stats.Rewards{}, lastN: int32(max(a.lastN, 1))}
		a.seeds[s] = sa
	}
	return sa
}

func (a *rowAgg) add(c *record) {
	if a.condition == "" {
		a.preset, a.condition, a.policy, a.lab = c.Preset, c.Condition, c.Policy, c.Lab
	}
	sa := a.seed(c.Seed)
	a.runs[c.RunID] = true
	a.offline = a.offline || c.Offline
	a.trials++
	r, ok := c.scoredReward()
	switch {
	case ok:
		a.scored++
		a.tasks[c.TaskID] = true
	case c.EnvFailure:
		a.env++
	default:
		a.unscored++
	}
	switch rundir.Phase(c.Phase) {
	case rundir.PhaseEval:
		sa.addEval(c.Checkpoint, c.TaskID, r, ok)
	case rundir.PhaseTrain, "":
		a.maxIter = max(a.maxIter, int(c.Iteration))
		a.attempts[c.TaskID]++
		sa.addTrain(c.Iteration, c.TaskID, r, ok)
		if ok {
			rewardsOf(a.perTask, c.TaskID).Add(r)
		}
	default:
		a.otherPhase[c.Phase]++
	}
}

// Compare reads every metric row under dir (a matrix, or a single run) and
// compares its rows on each estimand (whole curve, last N iterations,
// held-out): macro mean reward with a t interval over tasks (seeds a level
// above tasks), the interquartile mean, the paired per-task difference to
// the baseline row with its interval, a permutation p-value, Holm's
// correction across the rows and the probability of improvement; pass@k
// and pass^k; the minimum detectable difference; environment failures
// counted apart; and a warning when one task dominates. Results are
// deterministic for given options.
func Compare(dir string, opts CompareOptions) (*Comparison, error) {
	opts = opts.withDefaults()
	if opts.By != "" && opts.By != ByRow && opts.By != ByStudent {
		return nil, fmt.Errorf("%w %q: compare by %s or %s", ErrUnknownBy, opts.By, ByRow, ByStudent)
	}
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	files, err := metricFiles(dir)
	if err != nil {
		return nil, err
	}
	ca := newCompareAgg(opts)
	if err := scanFiles(files, compareScan, ca.addBatch); err != nil {
		return nil, fmt.Errorf("compare %s: %w", dir, err)
	}
	return compareRows(m, dir, ca.rows, opts)
}

// CompareAndSeries is Compare and Series of dir from one pass over its
// metric files: what `harness report` shows, for the price of one scan.
func CompareAndSeries(dir string, opts CompareOptions) (*Comparison, []RowSeries, error) {
	opts = opts.withDefaults()
	m, err := readManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	files, err := metricFiles(dir)
	if err != nil {
		return nil, nil, err
	}
	ca, sa := newCompareAgg(opts), newSeriesAgg(opts.By == ByStudent)
	err = scanFiles(files, fullScan, func(batch []record) error {
		for i := range batch {
			ca.add(&batch[i])
			sa.add(&batch[i])
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read metrics of %s: %w", dir, err)
	}
	if err := sa.addTableUpdates(dir); err != nil {
		return nil, nil, fmt.Errorf("read series of %s: %w", dir, err)
	}
	cmp, err := compareRows(m, dir, ca.rows, opts)
	if err != nil {
		return nil, nil, err
	}
	return cmp, sa.finish(m), nil
}

// compareAgg accumulates the compared rows while the metrics stream by.
type compareAgg struct {
	rows  map[string]*rowAgg
	names rowNamer
	lastN int
	// byStudent keeps each row's students apart.
	byStudent bool
}

func newCompareAgg(opts CompareOptions) *compareAgg {
	return &compareAgg{rows: map[string]*rowAgg{}, names: rowNamer{}, lastN: opts.LastN, byStudent: opts.By == ByStudent}
}

func (ca *compareAgg) addBatch(batch []record) error {
	for i := range batch {
		ca.add(&batch[i])
	}
	return nil
}

func (ca *compareAgg) add(c *record) {
	name := ca.names.name(c.Row, c.Seed)
	if ca.byStudent {
		name += "/" + c.Student
	}
	a := ca.rows[name]
	if a == nil {
		a = newRowAgg(name)
		a.lastN = ca.lastN
		ca.rows[name] = a
	}
	a.add(c)
}

func compareRows(m rundir.Manifest, dir string, rows map[string]*rowAgg, opts CompareOptions) (*Comparison, error) {
	cmp := &Comparison{
		ID: m.ID, Path: dir, Kind: m.Kind, Status: m.Status,
		Level: opts.Level, Alpha: math.Round((1-opts.Level)*1e9) / 1e9, Resamples: opts.Resamples, BootstrapSeed: opts.Seed,
		Headline: LastN, LastN: opts.LastN, Estimands: estimandInfos(opts.LastN), EffectOfInterest: opts.EffectOfInterest,
		Rows: []RowComparison{}, Warnings: []string{},
	}
	ordered := orderRows(rows, m.Rows)
	if len(ordered) == 0 {
		cmp.Warnings = append(cmp.Warnings, "no metric rows yet: nothing to compare")
		return cmp, nil
	}
	base, reason, err := chooseBaseline(rows, ordered, opts.Baseline)
	if err != nil {
		return nil, fmt.Errorf("compare %s: %w", dir, err)
	}
	cmp.Baseline, cmp.BaselineReason = base.name, reason
	for _, a := range ordered {
		if len(a.sampleOf(HeldOut, opts.LastN, false).seeds) > 0 {
			cmp.Headline = HeldOut
		}
	}
	cmp.K = chooseK(ordered, opts.K)
	if cmp.K < 2 && opts.K <= 0 && anyTaskScoredTwice(ordered) {
		cmp.Warnings = append(cmp.Warnings, "pass@k and pass^k not reported: some row has a task that ran only once, and k is the same for every row")
	}
	scope := newPassKScope(ordered, cmp.K)
	cmp.Warnings = append(cmp.Warnings, scope.warnings(cmp)...)

	// Rows are independent once the baseline's samples are taken, and a
	// permutation test over 20 tasks walks a million sign patterns, so rows
	// are summarized in parallel; results land by index, so order is kept.
	baseSamples := map[string]sample{}
	for _, name := range []string{WholeCurve, LastN, HeldOut} {
		baseSamples[name] = base.sampleOf(name, opts.LastN, false)
	}
	cmp.Rows = make([]RowComparison, len(ordered))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, a := range ordered {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			cmp.Rows[i] = compareRow(a, base, baseSamples, scope, cmp.Headline, opts)
		}()
	}
	wg.Wait()
	applyHolm(cmp.Rows, cmp.Alpha)
	cmp.Power = powerStatement(cmp.Rows, cmp.Headline, opts.EffectOfInterest)
	cmp.Warnings = append(cmp.Warnings, powerWarnings(cmp.Power)...)
	if w := oneSeedWarning(cmp.Rows); w != "" {
		cmp.Warnings = append(cmp.Warnings, w)
	}
	for _, a := range ordered {
		if a.offline {
			cmp.Warnings = append(cmp.Warnings, "offline results: these runs used the offline model provider and test the machinery, not the agents")
			break
		}
	}
	return cmp, nil
}

// chooseBaseline finds the row the differences are taken against, and
// says why that one.
func chooseBaseline(rows map[string]*rowAgg, ordered []*rowAgg, chosen string) (*rowAgg, string, error) {
	if chosen != "" {
		if base := rows[chosen]; base != nil {
			return base, "chosen", nil
		}
		return nil, "", fmt.Errorf("%w: no row named %q to compare against (rows: %s)", ErrUnknownBaseline, chosen, rowNames(ordered))
	}
	if base := rows[noFeedback]; base != nil {
		return base, "no_feedback row", nil
	}
	for _, a := range ordered {
		if a.condition == noFeedback && a.policy == "none" {
			return a, "no_feedback row", nil
		}
	}
	return ordered[0], "first row (no no_feedback row)", nil
}

// warnings say which tasks pass@k and pass^k average over when some were
// left out; none when every task qualifies or k < 2.
func (s *passKScope) warnings(cmp *Comparison) []string {
	if s == nil {
		return nil
	}
	cmp.PassKTasks, cmp.PassKLeftOut = len(s.tasks), len(s.all)-len(s.tasks)
	switch k := cmp.K; {
	case cmp.PassKLeftOut == 0:
		return nil
	case cmp.PassKTasks == 0:
		return []string{fmt.Sprintf("pass@%d and pass^%d not reported for any row: no task has at least %d scored trials in every row; %s left out",
			k, k, k, plural(cmp.PassKLeftOut, "task"))}
	default:
		return []string{fmt.Sprintf("pass@%d and pass^%d over %s with at least %d scored trials in every row; %s left out",
			k, k, plural(cmp.PassKTasks, "task"), k, plural(cmp.PassKLeftOut, "task"))}
	}
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
		if !slices.ContainsFunc(rows, func(a *rowAgg) bool { return scoredTrials(a.perTask[t]) < k }) {
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
			if rs.N() >= 2 {
				return true
			}
		}
	}
	return false
}

// compareRow summarizes a on every estimand it has data for and, unless
// it is the baseline, its paired differences to base; the headline
// estimand is repeated at the top of the row.
func compareRow(a, base *rowAgg, baseSamples map[string]sample, scope *passKScope, headline string, opts CompareOptions) RowComparison {
	rc := summarizeRow(a, scope)
	head := -1
	var headSample sample
	for _, name := range []string{WholeCurve, LastN, HeldOut} {
		s := a.sampleOf(name, opts.LastN, false)
		if len(s.seeds) == 0 {
			continue
		}
		e := estimate(name, s, opts)
		if bs := baseSamples[name]; a != base && len(bs.seeds) > 0 {
			e.Diff = pairedDiff(s, bs, base.name, opts)
		}
		if name == HeldOut {
			if init := a.sampleOf(HeldOut, opts.LastN, true); len(init.seeds) > 0 {
				e.VsInitial = pairedDiff(s, init, "initial checkpoint", opts)
			}
		}
		rc.Estimates = append(rc.Estimates, e)
		if name == headline {
			head, headSample = len(rc.Estimates)-1, s
		}
	}
	if head < 0 {
		if rc.Scored > 0 {
			rc.Warnings = append(rc.Warnings, fmt.Sprintf("no %s estimate (%s): no scored trial of that kind", headline, headlineNeeds(headline)))
		}
		return rc
	}
	h := rc.Estimates[head]
	rc.MeanReward, rc.CILow, rc.CIHigh, rc.IQM, rc.Diff = h.Mean, h.CILow, h.CIHigh, h.IQM, h.Diff
	rc.Warnings = append(rc.Warnings, headlineWarnings(&rc, headSample, base.name, opts)...)
	return rc
}

func headlineNeeds(estimand string) string {
	if estimand == HeldOut {
		return "evaluation rows of a skill checkpoint"
	}
	return "training rows"
}

// headlineWarnings flag a headline resting on one task, or mostly on one.
func headlineWarnings(rc *RowComparison, s sample, base string, opts CompareOptions) []string {
	var out []string
	pooled := s.pooled()
	task, share := stats.Dominance(pooled)
	if task != "" {
		rc.DominantTask, rc.DominantShare = task, float(share)
	}
	switch {
	case len(pooled) == 1:
		// Said whatever the task's mean, 0 included (Dominance names no
		// task then).
		for t := range pooled {
			out = append(out, fmt.Sprintf("only task %s was scored: the mean is that one task's", t))
		}
	case task != "" && share > opts.DominanceShare:
		out = append(out, fmt.Sprintf("task %s carries %.0f%% of the mean reward: the result rests mostly on one task", task, 100*share))
	}
	if rc.Row == base {
		return out
	}
	switch d := rc.Diff; {
	case d == nil:
		out = append(out, fmt.Sprintf("shares no scored task with %s: no paired difference", base))
	case d.CILow == nil && d.Tasks <= 1:
		out = append(out, fmt.Sprintf("shares only task %s with %s: the difference is that one task's and has no interval", soleTask(d, pooled), base))
	case d.DominantShare != nil && *d.DominantShare > opts.DominanceShare:
		out = append(out, fmt.Sprintf("task %s carries %.0f%% of the difference to %s: the difference rests mostly on one task",
			d.DominantTask, 100**d.DominantShare, base))
	}
	return out
}

// soleTask names the task of a difference over one task: its dominant
// task, or (when that difference is 0) the row's only task.
func soleTask(d *Diff, pooled map[string][]float64) string {
	if d.DominantTask != "" {
		return d.DominantTask
	}
	for t := range pooled {
		return t
	}
	return ""
}

// summarizeRow computes the counts of a row and its pass@k and pass^k;
// scope is what those average over (nil: not reported).
func summarizeRow(a *rowAgg, scope *passKScope) RowComparison {
	rc := RowComparison{
		Row: a.name, BaselinePreset: a.preset, Condition: a.condition, Policy: a.policy, Lab: a.lab,
		Runs: len(a.runs), Offline: a.offline, Iterations: a.maxIter,
		Tasks: len(a.tasks), Trials: a.trials, Scored: a.scored, EnvFailures: a.env, Unscored: a.unscored,
		Estimates: []Estimate{}, Warnings: []string{},
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
	for _, ph := range slices.Sorted(maps.Keys(a.otherPhase)) {
		rc.Warnings = append(rc.Warnings, fmt.Sprintf("%d metric rows of phase %q left out of every estimand (neither train nor eval)", a.otherPhase[ph], ph))
	}
	if scope != nil {
		passK(&rc, a, scope)
	}
	if a.scored == 0 {
		rc.Warnings = append(rc.Warnings, "no scored trials")
	}
	return rc
}

// passK sets rc's pass@k and pass^k, averaged over scope's tasks (every
// one of which a scored at least k times), and counts the tasks left out.
func passK(rc *RowComparison, a *rowAgg, scope *passKScope) {
	k := scope.k
	for _, t := range scope.all {
		if scoredTrials(a.perTask[t]) < k {
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
		n, c := rs.N(), rs.AtLeast(Success)
		at += stats.PassAtK(n, c, k)
		hat += stats.PassHatK(n, c, k)
	}
	n := float64(len(scope.tasks))
	rc.PassAtK, rc.PassHatK = float(at/n), float(hat/n)
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

// rewardsOf returns the counts kept for task, creating them.
func rewardsOf(m map[string]*stats.Rewards, task string) *stats.Rewards {
	r := m[task]
	if r == nil {
		r = &stats.Rewards{}
		m[task] = r
	}
	return r
}

// scoredTrials is how many rewards r counts; 0 for none kept.
func scoredTrials(r *stats.Rewards) int {
	if r == nil {
		return 0
	}
	return r.N()
}

// powerWarnings say when the matrix cannot detect the effect of interest,
// or cannot reach significance at all.
func powerWarnings(p *PowerStatement) []string {
	switch {
	case p == nil || !p.Underpowered:
		return nil
	case p.MinDetectable == nil:
		return []string{"underpowered: " + p.Note}
	}
	at := ""
	if p.PowerAtEffect != nil {
		at = fmt.Sprintf(" (power %.0f%% there)", 100**p.PowerAtEffect)
	}
	return []string{fmt.Sprintf("underpowered: at %s x %s x %s the smallest difference the %s test detects "+
		"with 80%% power is %.3f, above the effect of interest %.3f%s; add tasks or seeds (more trials only shrink the trial noise)",
		plural(p.Tasks, "task"), plural(p.Trials, "trial"), plural(p.Seeds, "seed"), p.Test, *p.MinDetectable, p.EffectOfInterest, at)}
}

// oneSeedWarning names the rows with a single seed: their intervals and
// p-values hold the run fixed, so a rerun's luck is not in them.
func oneSeedWarning(rows []RowComparison) string {
	var one []string
	for _, r := range rows {
		if len(r.Seeds) == 1 {
			one = append(one, r.Row)
		}
	}
	if len(one) == 0 {
		return ""
	}
	return fmt.Sprintf("one seed (%s): every interval and p-value is across tasks, one run: run-to-run variance not estimated, "+
		"so a rerun with another seed may differ by more than they say; run 3 or more seeds (--seeds) before claiming a difference",
		strings.Join(one, ", "))
}
