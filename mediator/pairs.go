package mediator

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// PairEntry is one history entry with its delayed reward, as the Reflector
// compares them.
type PairEntry struct {
	ID   string
	Role string
	// Kind is what the entry is (plan, proposal, report); only entries of
	// the same kind are compared, since a plan and a skill edit answer
	// different questions and their rewards say nothing about each other.
	Kind      string
	TaskID    string
	Iteration int
	Content   string
	Reward    float64
	// Source is what the entry was written from: the prior context a plan
	// was written from, say; empty when nothing is recorded.
	Source string
	// Outcome is the result of the entry's own trial (the trial a plan
	// guided, the trial a report or proposal was about); unknown when none
	// is recorded. Reward, the delayed reward, may be a later trial's.
	Outcome Outcome
}

// Pair is a contrastive pair: two entries of the same role and kind whose delayed
// rewards differ by Gap = Better.Reward - Worse.Reward > 0.
type Pair struct {
	Better, Worse PairEntry
	Gap           float64
	// CrossTask is set when the two entries come from different tasks; such
	// pairs only fill up when too few same-task pairs exist.
	CrossTask bool
}

// PairConfig tunes pair formation.
type PairConfig struct {
	// MaxPairs caps the pairs returned; <= 0 gives none.
	MaxPairs int
	// BucketFraction is the share of entries, by reward, in the bottom and
	// in the top bucket. Each bucket holds at least one entry, and the two
	// never overlap.
	BucketFraction float64
	// MinRewardGap is the least reward difference of a pair; a pair always
	// needs some difference.
	MinRewardGap float64
}

// gapTolerance absorbs float error, so 0.7-0.5 counts as a gap of 0.2.
const gapTolerance = 1e-9

// FormPairs forms at most cfg.MaxPairs contrastive pairs from entries,
// which the caller has restricted to one role (entries of different roles,
// or of different kinds, are never paired). Per role, kind and task, entries are sorted by reward and split into
// a bottom and a top bucket; every bottom-top pair whose gap reaches
// cfg.MinRewardGap is a candidate. Same-task pairs are preferred: pairs of
// different tasks (from buckets over all entries) are added only when
// fewer than MaxPairs same-task pairs exist, and are marked CrossTask.
// Pairs are sampled with a PCG generator seeded by seed, so the result
// depends only on the entries (not their order), cfg and seed. The result
// is sorted by gap, largest first. Entries without a task or with a
// non-finite reward are ignored.
func FormPairs(entries []PairEntry, cfg PairConfig, seed int64) []Pair {
	if cfg.MaxPairs <= 0 {
		return nil
	}
	usable := make([]PairEntry, 0, len(entries))
	for _, e := range entries {
		if e.TaskID == "" || math.IsNaN(e.Reward) || math.IsInf(e.Reward, 0) {
			continue
		}
		usable = append(usable, e)
	}
	// A total order makes everything below independent of input order.
	slices.SortFunc(usable, func(a, b PairEntry) int {
		return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.TaskID, b.TaskID), compareEntry(a, b))
	})

	var same []Pair
	for _, group := range groupBy(usable, func(e PairEntry) string { return e.Role + "\x00" + e.Kind + "\x00" + e.TaskID }) {
		bottom, top := buckets(group, cfg.BucketFraction)
		same = append(same, crossBuckets(bottom, top, cfg.MinRewardGap, false)...)
	}

	rng := rand.New(rand.NewPCG(uint64(seed), 0x6d656469)) // second word fixed: one stream per seed
	chosen := sample(rng, same, cfg.MaxPairs)
	if need := cfg.MaxPairs - len(chosen); need > 0 {
		var cross []Pair
		for _, group := range groupBy(usable, func(e PairEntry) string { return e.Role + "\x00" + e.Kind }) {
			sorted := slices.Clone(group)
			slices.SortFunc(sorted, compareEntry)
			bottom, top := buckets(sorted, cfg.BucketFraction)
			cross = append(cross, crossBuckets(bottom, top, cfg.MinRewardGap, true)...)
		}
		chosen = append(chosen, sample(rng, cross, need)...)
	}
	slices.SortStableFunc(chosen, func(a, b Pair) int {
		return cmp.Or(cmp.Compare(b.Gap, a.Gap), compareBool(a.CrossTask, b.CrossTask),
			cmp.Compare(a.Better.ID, b.Better.ID), cmp.Compare(a.Worse.ID, b.Worse.ID))
	})
	return chosen
}

// compareEntry orders entries by reward, then iteration, task and id.
func compareEntry(a, b PairEntry) int {
	return cmp.Or(cmp.Compare(a.Reward, b.Reward), cmp.Compare(a.Iteration, b.Iteration),
		cmp.Compare(a.TaskID, b.TaskID), cmp.Compare(a.ID, b.ID))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	default:
		return 1
	}
}

// groupBy splits sorted entries into runs of equal key, in order.
func groupBy(sorted []PairEntry, key func(PairEntry) string) [][]PairEntry {
	var groups [][]PairEntry
	index := map[string]int{}
	for _, e := range sorted {
		k := key(e)
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], e)
	}
	return groups
}

// buckets returns the bottom and top buckets of entries sorted by reward:
// each floor(n*fraction) entries, at least one, at most half of them so the
// two are disjoint. Fewer than two entries give no buckets.
func buckets(sorted []PairEntry, fraction float64) (bottom, top []PairEntry) {
	n := len(sorted)
	if n < 2 {
		return nil, nil
	}
	k := int(math.Floor(float64(n)*fraction + gapTolerance))
	k = min(max(k, 1), n/2)
	return sorted[:k], sorted[n-k:]
}

// crossBuckets pairs every bottom entry with every top entry whose reward
// is higher by at least minGap. crossTask pairs only entries of different
// tasks; otherwise all entries share a task already.
func crossBuckets(bottom, top []PairEntry, minGap float64, crossTask bool) []Pair {
	var pairs []Pair
	for _, w := range bottom {
		for _, b := range top {
			if crossTask && w.TaskID == b.TaskID {
				continue
			}
			gap := b.Reward - w.Reward
			if gap <= gapTolerance || gap < minGap-gapTolerance {
				continue
			}
			pairs = append(pairs, Pair{Better: b, Worse: w, Gap: gap, CrossTask: crossTask})
		}
	}
	return pairs
}

// sample draws k pairs without replacement (all of them when k >= len),
// by a partial Fisher-Yates shuffle of a copy.
func sample(rng *rand.Rand, pool []Pair, k int) []Pair {
	if k >= len(pool) {
		return slices.Clone(pool)
	}
	p := slices.Clone(pool)
	for i := range k {
		j := i + rng.IntN(len(p)-i)
		p[i], p[j] = p[j], p[i]
	}
	return p[:k]
}
