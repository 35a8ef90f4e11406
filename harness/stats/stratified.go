package stats

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// The stratified bootstrap (rliable) keeps the tasks fixed and redraws
// what was observed on each: here every seed's trials on every task, with
// replacement, so an interval says how much the estimate moves with other
// trials and runs of the same tasks. It is conditional on the task set; the
// t intervals of the mean are the ones that generalise over tasks.

// IQMCI is the stratified bootstrap percentile interval of the
// interquartile mean of the task means (each task's mean the mean of its
// seeds' means, as the row's mean takes them): B replicates, each
// redrawing every seed's rewards on every task with replacement. Errors
// for no task, a bad level or B < 1.
func IQMCI(seeds []map[string][]float64, B int, level float64, seed uint64) (lo, hi float64, err error) {
	if err := checkBootstrap(B, level); err != nil {
		return 0, 0, err
	}
	ids := unionTasks(seeds)
	if len(ids) == 0 {
		return 0, 0, fmt.Errorf("stratified bootstrap of the interquartile mean over no task: %w", ErrTooFew)
	}
	// cells[t] holds the rewards of each seed that scored task t.
	cells := make([][][]float64, len(ids))
	for t, id := range ids {
		for _, m := range seeds {
			if r := m[id]; len(r) > 0 {
				cells[t] = append(cells[t], r)
			}
		}
	}
	rng := newRand(seed)
	means := make([]float64, len(ids))
	reps := make([]float64, B)
	for b := range reps {
		for t, runs := range cells {
			var sum float64
			for _, r := range runs {
				sum += redrawMean(rng, r)
			}
			means[t] = sum / float64(len(runs))
		}
		reps[b], _ = IQM(means)
	}
	lo, hi = percentiles(reps, level)
	return lo, hi, nil
}

// PoICI is the stratified bootstrap percentile interval of the
// probability of improvement of a over b (ProbabilityOfImprovement): each
// replicate redraws both rows' rewards within every task. Errors when
// no task is shared, for a bad level or B < 1.
func PoICI(a, b map[string][]float64, B int, level float64, seed uint64) (lo, hi float64, err error) {
	if err := checkBootstrap(B, level); err != nil {
		return 0, 0, err
	}
	if _, _, err := ProbabilityOfImprovement(a, b); err != nil {
		return 0, 0, err
	}
	var xs, ys [][]float64
	for _, id := range tasksWithData(a) {
		if len(b[id]) > 0 {
			xs, ys = append(xs, a[id]), append(ys, b[id])
		}
	}
	rng := newRand(seed)
	reps := make([]float64, B)
	var dx, dy []float64
	for i := range reps {
		var sum float64
		for t := range xs {
			dx, dy = redraw(rng, xs[t], dx[:0]), redraw(rng, ys[t], dy[:0])
			w, _ := pairWinShare(dx, dy)
			sum += w
		}
		reps[i] = sum / float64(len(xs))
	}
	lo, hi = percentiles(reps, level)
	return lo, hi, nil
}

func checkBootstrap(B int, level float64) error {
	if err := checkLevel(level); err != nil {
		return err
	}
	if B < 1 {
		return fmt.Errorf("bootstrap with %d resamples: pass at least 1 (2000 is usual)", B)
	}
	return nil
}

// redraw appends len(x) draws from x with replacement to out.
func redraw(rng *rand.Rand, x, out []float64) []float64 {
	for range x {
		out = append(out, x[rng.IntN(len(x))])
	}
	return out
}

// redrawMean is the mean of len(x) draws from x with replacement.
func redrawMean(rng *rand.Rand, x []float64) float64 {
	var s float64
	for range x {
		s += x[rng.IntN(len(x))]
	}
	return s / float64(len(x))
}

// unionTasks are the tasks any seed scored, sorted.
func unionTasks(seeds []map[string][]float64) []string {
	var ids []string
	for _, m := range seeds {
		for id, r := range m {
			if len(r) > 0 && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}
