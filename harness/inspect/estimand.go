package inspect

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/mediated-coevo/harness/harness/stats"
)

// The estimands `inspect --compare` reports: what a mean reward estimates.
const (
	// WholeCurve is the mean over every training iteration, on the tasks
	// the row evolved on: the area under the learning curve.
	WholeCurve = "whole_curve"
	// LastN is the mean over the last N training iterations of each run:
	// where learning got to, still on the tasks the row evolved on.
	LastN = "last_n"
	// HeldOut is the mean of the row's final skill checkpoint on held-out
	// tasks (evaluation rows): whether what was learned carries over.
	HeldOut = "held_out"
)

// EstimandInfo says in words what an estimand estimates.
type EstimandInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

func estimandInfos(lastN int) []EstimandInfo {
	return []EstimandInfo{
		{WholeCurve, "mean reward over every training iteration, on the tasks the row evolved on"},
		{LastN, fmt.Sprintf("mean reward over the last %d training iterations of each run, on the tasks the row evolved on", lastN)},
		{HeldOut, "mean reward of the row's final skill checkpoint on held-out tasks (evaluation rows); " +
			"vs_initial compares it with the row's own initial skills on the same tasks"},
	}
}

// Estimate is one estimand of one row.
type Estimate struct {
	Estimand string `json:"estimand"`
	// FromIteration and ToIteration bound the training iterations used
	// (over the row's runs); Checkpoint is the evaluated checkpoint
	// iteration of held_out (the largest over the row's runs).
	FromIteration int  `json:"from_iteration,omitempty"`
	ToIteration   int  `json:"to_iteration,omitempty"`
	Checkpoint    *int `json:"checkpoint,omitempty"`
	// Tasks, Seeds and Scored are the tasks, seeds and scored trials the
	// estimate rests on.
	Tasks  int `json:"tasks"`
	Seeds  int `json:"seeds"`
	Scored int `json:"scored"`
	// Mean is the macro mean (every task weighs the same; with several
	// seeds a task's mean is the mean of its seeds' means), CILow and
	// CIHigh its t interval (over tasks, or over the seeds x tasks table),
	// IQM the interquartile mean of the task means.
	Mean   *float64 `json:"mean"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	// ConditionalOn says what the interval treats as random: tasks only
	// with one seed (the run is held fixed), tasks and runs with several.
	ConditionalOn string   `json:"conditional_on"`
	IQM           *float64 `json:"iqm"`
	// IQMLow and IQMHigh are rliable's stratified bootstrap interval of
	// the IQM: the tasks held fixed, each seed's trials redrawn per task.
	IQMLow  *float64 `json:"iqm_ci_low"`
	IQMHigh *float64 `json:"iqm_ci_high"`
	// Diff is the paired difference to the baseline row's same estimand;
	// VsInitial (held_out only) to the row's own initial checkpoint.
	Diff      *Diff `json:"diff"`
	VsInitial *Diff `json:"vs_initial,omitempty"`
}

// PowerStatement is the power of the headline comparison, for the test
// that decides its significance (Test): the smallest difference to the
// baseline the matrix detects with 80% power at the 5% level (two-sided),
// and the power at the effect of interest, for its tasks x trials x seeds
// and the variance estimated from the rows' differences.
type PowerStatement struct {
	Estimand string `json:"estimand"`
	// Tasks, Trials and Seeds are the design: the fewest paired tasks,
	// trials per task and seed (median over tasks), and seeds of any
	// compared row.
	Tasks  int `json:"tasks"`
	Trials int `json:"trials"`
	Seeds  int `json:"seeds"`
	// Test is the test the statement is about: "sign-flip" (one seed,
	// power simulated) or "t" (several seeds).
	Test string `json:"test"`
	// Variance is the mean over compared rows of their estimated
	// components (see stats.Variance).
	Variance VarianceComponents `json:"variance"`
	// MinDetectable is nil when no difference up to 1 can be detected:
	// Note then says why (a design whose test cannot reach significance,
	// or too much noise).
	MinDetectable *float64 `json:"min_detectable_diff"`
	// PowerAtEffect is the chance of a significant result when the true
	// difference is EffectOfInterest (before Holm's correction).
	PowerAtEffect    *float64 `json:"power_at_effect"`
	EffectOfInterest float64  `json:"effect_of_interest"`
	// Underpowered is true when the effect of interest is detected with
	// less than 80% power.
	Underpowered bool   `json:"underpowered"`
	Note         string `json:"note,omitempty"`
}

// VarianceComponents is stats.Variance with JSON names.
type VarianceComponents struct {
	Task        float64 `json:"task"`
	Seed        float64 `json:"seed"`
	Interaction float64 `json:"interaction"`
	Trial       float64 `json:"trial"`
}

// seedAgg holds one seed (one run) of a row as counts: per task, its
// scored training rewards over the whole run and over each of the latest
// iterations that may still fall among the last N; per checkpoint and
// task, its scored evaluation rewards. Memory grows with tasks x N, not
// with trials.
type seedAgg struct {
	train            map[string]*taskTrain
	minIter, maxIter int32 // over training rows, scored or not
	hasTrain         bool
	lastN            int32
	eval             map[int32]map[string]*stats.Rewards // checkpoint -> task -> scored rewards
}

// taskTrain is one task's scored training rewards in one seed.
type taskTrain struct {
	all stats.Rewards
	// recent holds the rewards of single iterations, at least those after
	// maxIter - lastN; older ones are dropped as maxIter grows, since the
	// last-N window can only move later.
	recent []iterRewards
}

type iterRewards struct {
	iteration int32
	rewards   stats.Rewards
}

func (sa *seedAgg) addTrain(it int32, task string, r float64, ok bool) {
	if !sa.hasTrain || it < sa.minIter {
		sa.minIter = it
	}
	sa.maxIter = max(sa.maxIter, it)
	sa.hasTrain = true
	if !ok {
		return
	}
	tt := sa.train[task]
	if tt == nil {
		tt = &taskTrain{}
		sa.train[task] = tt
	}
	tt.all.Add(r)
	i := len(tt.recent) - 1
	for i >= 0 && tt.recent[i].iteration != it {
		i--
	}
	if i < 0 {
		tt.recent = append(tt.recent, iterRewards{iteration: it})
		i = len(tt.recent) - 1
	}
	tt.recent[i].rewards.Add(r)
	if len(tt.recent) > 2*int(sa.lastN)+1 {
		cut := sa.maxIter - sa.lastN
		tt.recent = slices.DeleteFunc(tt.recent, func(e iterRewards) bool { return e.iteration <= cut })
	}
}

// addEval records an evaluation row; its checkpoint counts as evaluated
// even when the trial was not scored.
func (sa *seedAgg) addEval(ckpt int32, task string, r float64, ok bool) {
	m := sa.eval[ckpt]
	if m == nil {
		m = map[string]*stats.Rewards{}
		sa.eval[ckpt] = m
	}
	if ok {
		rewardsOf(m, task).Add(r)
	}
}

// finalCheckpoint is the largest evaluated checkpoint; false when none.
func (sa *seedAgg) finalCheckpoint() (int32, bool) {
	var best int32
	found := false
	for c := range sa.eval {
		if !found || c > best {
			best, found = c, true
		}
	}
	return best, found
}

// sample is what one estimand of a row rests on: per seed (in seed
// order), task -> scored rewards. Seeds without data are left out.
type sample struct {
	seeds    []map[string][]float64
	from, to int // training iterations used
	ckpt     int // held-out checkpoint
}

// sampleOf picks the trials of an estimand from a row: initial selects
// checkpoint 0 instead of the final one for held_out, and is empty when a
// seed's final checkpoint is 0 itself.
func (a *rowAgg) sampleOf(estimand string, lastN int, initial bool) sample {
	ids := make([]int64, 0, len(a.seeds))
	for s := range a.seeds {
		ids = append(ids, s)
	}
	slices.Sort(ids)
	out := sample{from: math.MaxInt32}
	for _, id := range ids {
		sa := a.seeds[id]
		m := map[string][]float64{}
		switch estimand {
		case HeldOut:
			final, ok := sa.finalCheckpoint()
			switch {
			case !ok || (initial && final == 0):
				continue
			case initial:
				m = expand(sa.eval[0])
			default:
				m = expand(sa.eval[final])
				out.ckpt = max(out.ckpt, int(final))
			}
		default:
			if !sa.hasTrain {
				continue
			}
			cut := sa.minIter - 1
			if estimand == LastN {
				cut = max(cut, sa.maxIter-int32(lastN))
			}
			for task, tt := range sa.train {
				if vs := tt.since(cut, sa.minIter); len(vs) > 0 {
					m[task] = vs
				}
			}
			out.from, out.to = min(out.from, int(cut)+1), max(out.to, int(sa.maxIter))
		}
		if len(m) > 0 {
			out.seeds = append(out.seeds, m)
		}
	}
	return out
}

// since lists, in ascending order, the task's rewards of iterations after
// cut (all of them when cut is before the run's first iteration).
func (tt *taskTrain) since(cut, first int32) []float64 {
	if cut < first {
		return tt.all.AppendValues(nil)
	}
	var r stats.Rewards
	for _, e := range tt.recent {
		if e.iteration > cut {
			r.Merge(e.rewards)
		}
	}
	return r.AppendValues(nil)
}

// expand lists each task's counted rewards, in ascending order: the form
// the interval and test functions take, built for one estimand at a time.
func expand(m map[string]*stats.Rewards) map[string][]float64 {
	out := make(map[string][]float64, len(m))
	for t, r := range m {
		if r.N() > 0 {
			out[t] = r.AppendValues(nil)
		}
	}
	return out
}

// pooled merges a sample's seeds per task.
func (s sample) pooled() map[string][]float64 {
	out := map[string][]float64{}
	for _, m := range s.seeds {
		for t, r := range m {
			out[t] = append(out[t], r...)
		}
	}
	return out
}

// taskMeans is, per task, the mean over the seeds that scored it of their
// task means: seeds weigh the same whatever their trial counts.
func (s sample) taskMeans() (ids []string, means []float64) {
	sum, n := map[string]float64{}, map[string]int{}
	for _, m := range s.seeds {
		for t, r := range m {
			if len(r) > 0 {
				sum[t] += mean(r)
				n[t]++
			}
		}
	}
	for t := range sum {
		ids = append(ids, t)
	}
	slices.Sort(ids)
	means = make([]float64, len(ids))
	for i, t := range ids {
		means[i] = sum[t] / float64(n[t])
	}
	return ids, means
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// estimate summarizes one estimand of a row (its value only; differences
// are added by the caller).
func estimate(name string, s sample, opts CompareOptions) Estimate {
	level := opts.Level
	e := Estimate{Estimand: name, Seeds: len(s.seeds), ConditionalOn: stats.ConditionalOn(len(s.seeds))}
	if name == HeldOut {
		e.Checkpoint = &s.ckpt
	} else if len(s.seeds) > 0 {
		e.FromIteration, e.ToIteration = s.from, s.to
	}
	for _, m := range s.seeds {
		for _, r := range m {
			e.Scored += len(r)
		}
	}
	ids, means := s.taskMeans()
	e.Tasks = len(ids)
	if len(ids) == 0 {
		return e
	}
	e.Mean = float(mean(means))
	if v, err := stats.IQM(means); err == nil {
		e.IQM = float(v)
	}
	if lo, hi, err := stats.IQMCI(s.seeds, opts.Resamples, level, opts.Seed); err == nil {
		e.IQMLow, e.IQMHigh = float(lo), float(hi)
	}
	var iv stats.Interval
	var err error
	if len(s.seeds) == 1 {
		iv, err = stats.MeanCI(means, level)
	} else {
		cells, _ := stats.SeedCells(s.seeds)
		iv, err = stats.TwoWayCI(cells, level)
	}
	if err == nil {
		// Rewards lie in [0, 1], and so does their mean: clipping the
		// interval there loses no coverage.
		e.CILow, e.CIHigh = float(max(iv.Low, 0)), float(min(iv.High, 1))
	}
	return e
}

// pairedDiff compares a row's sample with another's over the tasks both
// scored; nil when they share none.
func pairedDiff(row, other sample, against string, opts CompareOptions) *Diff {
	a, b := row.pooled(), other.pooled()
	diffs := stats.PairedDiffs(a, b)
	if len(diffs) == 0 {
		return nil
	}
	d := &Diff{Against: against, Tasks: len(diffs), Seeds: len(row.seeds), Mean: stats.MacroMean(diffs),
		ConditionalOn: stats.ConditionalOn(len(row.seeds))}
	// Fewer than two tasks scored by every seed of both leave the mean of
	// the shared tasks without an interval or test.
	if res, err := stats.ComparePaired(row.seeds, other.seeds, opts.Level, opts.Resamples, opts.Seed); err == nil {
		d.Tasks, d.Mean = res.Tasks, res.Mean
		// A difference of rewards in [0, 1] lies in [-1, 1].
		d.CILow, d.CIHigh = float(max(res.Low, -1)), float(min(res.High, 1))
		d.P, d.Test = float(res.P), res.Test
	}
	if poi, _, err := stats.ProbabilityOfImprovement(a, b); err == nil {
		d.PoI = float(poi)
	}
	if lo, hi, err := stats.PoICI(a, b, opts.Resamples, opts.Level, opts.Seed); err == nil {
		d.PoILow, d.PoIHigh = float(lo), float(hi)
	}
	if task, share := stats.Dominance(diffs); task != "" {
		d.DominantTask, d.DominantShare = task, float(share)
	}
	if v, design, err := stats.EstimateVariance(row.seeds, other.seeds); err == nil {
		d.variance, d.design = &v, design
		if mdd, err := stats.MinDetectableDiff(design, v); err == nil {
			d.MinDetectable = float(mdd)
		}
	}
	return d
}

// applyHolm adjusts, per estimand, the p-values of the rows' differences
// to the baseline by Holm's method and decides them at alpha; the
// held-out differences to each row's own initial skills are a family of
// their own.
func applyHolm(rows []RowComparison, alpha float64) {
	for _, name := range []string{WholeCurve, LastN, HeldOut} {
		for _, pick := range []func(*Estimate) *Diff{
			func(e *Estimate) *Diff { return e.Diff },
			func(e *Estimate) *Diff { return e.VsInitial },
		} {
			var family []*Diff
			for i := range rows {
				for j := range rows[i].Estimates {
					e := &rows[i].Estimates[j]
					if d := pick(e); e.Estimand == name && d != nil && d.P != nil {
						family = append(family, d)
					}
				}
			}
			holm(family, alpha)
		}
	}
}

func holm(family []*Diff, alpha float64) {
	if len(family) == 0 {
		return
	}
	p := make([]float64, len(family))
	for i, d := range family {
		p[i] = *d.P
	}
	adj, reject, err := stats.Holm(p, alpha)
	if err != nil {
		return // alpha comes from a checked level; p-values are in [0, 1]
	}
	for i, d := range family {
		d.PHolm, d.Significant = float(adj[i]), reject[i]
	}
}

// powerStatement states the power of the headline comparison: the
// variance is the mean of the compared rows' estimates, the design the
// smallest of theirs. Rows compared over fewer than two tasks give a
// statement that says no test is possible; nil when no row was compared.
func powerStatement(rows []RowComparison, headline string, effect float64) *PowerStatement {
	var v stats.Variance
	var d stats.Design
	n, compared, tasks := 0, 0, 0
	for _, r := range rows {
		if r.Diff == nil {
			continue
		}
		compared++
		tasks = max(tasks, r.Diff.Tasks)
		if r.Diff.variance == nil {
			continue
		}
		rv, rd := *r.Diff.variance, r.Diff.design
		v.Task, v.Seed, v.Interaction, v.Trial = v.Task+rv.Task, v.Seed+rv.Seed, v.Interaction+rv.Interaction, v.Trial+rv.Trial
		if n == 0 {
			d = rd
		}
		d.Tasks, d.Trials, d.Seeds = min(d.Tasks, rd.Tasks), min(d.Trials, rd.Trials), min(d.Seeds, rd.Seeds)
		n++
	}
	if compared == 0 {
		return nil
	}
	if n == 0 {
		return &PowerStatement{Estimand: headline, Tasks: tasks, EffectOfInterest: effect, Underpowered: true,
			Note: fmt.Sprintf("%s shared with the baseline: no interval, test or power is possible; compare on 2 tasks or more (6 or more with one seed)", plural(tasks, "task"))}
	}
	k := float64(n)
	v = stats.Variance{Task: v.Task / k, Seed: v.Seed / k, Interaction: v.Interaction / k, Trial: v.Trial / k}
	ps := &PowerStatement{
		Estimand: headline, Tasks: d.Tasks, Trials: d.Trials, Seeds: d.Seeds, Test: d.Test(),
		Variance:         VarianceComponents{Task: v.Task, Seed: v.Seed, Interaction: v.Interaction, Trial: v.Trial},
		EffectOfInterest: effect, Underpowered: true,
	}
	if p, err := stats.Power(d, v, effect); err == nil {
		ps.PowerAtEffect = float(p)
		ps.Underpowered = p < stats.PowerTarget
	}
	switch mdd, err := stats.MinDetectableDiff(d, v); {
	case err == nil:
		ps.MinDetectable = float(mdd)
	case errors.Is(err, stats.ErrUnreachable):
		_, ps.Note = d.Reachable()
	case errors.Is(err, stats.ErrUndetectable):
		ps.Note = err.Error()
	default:
		// Variance components of zero leave nothing to detect against.
		ps.Note = fmt.Sprintf("no power statement: %v", err)
	}
	return ps
}
