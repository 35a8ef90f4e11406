package stats

import (
	"fmt"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// A row with several seeds is given as one map per seed, task id to the
// rewards of that seed's usable trials on the task.

// SeedCells is the seeds x tasks table of per-seed task means over the
// tasks every seed scored (sorted), ready for TwoWayCI.
func SeedCells(seeds []map[string][]float64) (cells [][]float64, tasks []string) {
	if len(seeds) == 0 {
		return nil, nil
	}
	tasks = commonTasks(seeds)
	cells = make([][]float64, len(seeds))
	for s, m := range seeds {
		cells[s] = make([]float64, len(tasks))
		for t, id := range tasks {
			cells[s][t] = stat.Mean(m[id], nil)
		}
	}
	return cells, tasks
}

// PairedCells is the seeds x tasks table of paired differences, row minus
// base, over the tasks every seed of both scored (sorted). Seeds pair by
// position when both have as many, else the baseline's seeds are pooled
// (its seed-to-seed spread then goes unmeasured).
func PairedCells(row, base []map[string][]float64) (cells [][]float64, tasks []string) {
	if len(row) == 0 || len(base) == 0 {
		return nil, nil
	}
	pairs := pairSeeds(row, base)
	tasks = commonTasks(append(slices.Clone(row), base...))
	cells = make([][]float64, len(row))
	for s := range row {
		cells[s] = make([]float64, len(tasks))
		for t, id := range tasks {
			cells[s][t] = stat.Mean(row[s][id], nil) - stat.Mean(pairs[s][id], nil)
		}
	}
	return cells, tasks
}

// ConditionalOn says, in words for a reader, what an interval or test
// over seeds runs treats as random: with one seed only the tasks (the
// run is one draw of its luck, held fixed), with several the tasks and
// the runs.
func ConditionalOn(seeds int) string {
	if seeds <= 1 {
		return "across tasks, one run: run-to-run variance not estimated"
	}
	return fmt.Sprintf("across tasks and %d runs: run-to-run variance estimated from %d seeds", seeds, seeds)
}

// PairedTest is a row's paired comparison with a baseline.
type PairedTest struct {
	Interval
	// Tasks and Seeds give the table the numbers rest on.
	Tasks, Seeds int
	// P is the two-sided p-value of no difference: SignFlipP over the
	// per-task differences with one seed, the t test of the interval
	// (Interval.P) with several, where flipping tasks alone would ignore
	// the luck a seed shares across its tasks.
	P float64
	// Test names how P was found: "sign-flip" or "t".
	Test string
}

// ComparePaired compares row with base on the tasks every seed of both
// scored: the mean paired difference, its TwoWayCI interval (MeanCI over
// tasks with one seed) and a p-value. draws and seed serve SignFlipP
// beyond ExactFlipsMax tasks. Errors (wrapping ErrTooFew) with fewer than
// two tasks, or for a bad level.
func ComparePaired(row, base []map[string][]float64, level float64, draws int, seed uint64) (PairedTest, error) {
	cells, tasks := PairedCells(row, base)
	if len(tasks) < 2 {
		return PairedTest{}, fmt.Errorf("paired comparison over %d tasks every seed scored: %w (need 2)", len(tasks), ErrTooFew)
	}
	iv, err := TwoWayCI(cells, level)
	if err != nil {
		return PairedTest{}, err
	}
	out := PairedTest{Interval: iv, Tasks: len(tasks), Seeds: len(cells), P: iv.P(), Test: "t"}
	if len(cells) == 1 {
		p, err := SignFlipP(cells[0], draws, seed)
		if err != nil {
			return PairedTest{}, err
		}
		out.P, out.Test = p, "sign-flip"
	}
	return out, nil
}
