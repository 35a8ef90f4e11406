package inspect

import (
	"fmt"
	"slices"
	"sort"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// RowSeries is one row of a run or matrix over its training iterations,
// for plots: rewards per task per iteration, skill updates per iteration
// and spend (evaluation rows included). Seeds of a row are pooled.
type RowSeries struct {
	Row string `json:"row"`
	// Runs counts the row's runs (one per seed).
	Runs       int               `json:"runs"`
	Iterations []IterationSeries `json:"iterations"`
	// Spend sums tokens and cost by role over the row's runs.
	Spend []RoleSpend `json:"spend"`
}

// IterationSeries is one iteration of a row.
type IterationSeries struct {
	Iteration int `json:"iteration"`
	// PerTask holds the scored rewards of each task in this iteration
	// (several when seeds or students are pooled); environment failures
	// are not in it.
	PerTask     map[string][]float64 `json:"per_task"`
	Trials      int                  `json:"trials"`
	EnvFailures int                  `json:"env_failures"`
	// NewSkillUpdates counts the distinct skill updates (by run and
	// provenance id) first seen in this iteration, summed over runs.
	NewSkillUpdates int `json:"new_skill_updates"`
}

// Series reads every metric row under dir (a run or a matrix) into one
// RowSeries per row, in the order Compare uses. Memory grows with the
// scored rewards (one float each), never with whole rows.
func Series(dir string) ([]RowSeries, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	files, err := metricFiles(dir)
	if err != nil {
		return nil, err
	}
	type rowState struct {
		agg     *rowAgg // for ordering (seeds, runs) only
		iters   map[int]*IterationSeries
		spend   [len(roles)]RoleSpend
		updates map[[2]string]int // (run, provenance id) -> first iteration
	}
	rows := map[string]*rowState{}
	aggs := map[string]*rowAgg{}
	names := rowNamer{}
	err = scanFiles(files, fullScan, func(batch []record) error {
		for i := range batch {
			c := &batch[i]
			name := names.name(c.Row, c.Seed)
			st := rows[name]
			if st == nil {
				st = &rowState{agg: newRowAgg(name), iters: map[int]*IterationSeries{}, updates: map[[2]string]int{}}
				rows[name], aggs[name] = st, st.agg
			}
			st.agg.seed(c.Seed)
			st.agg.runs[c.RunID] = true
			addSpend(&st.spend, c)
			// The series is the learning curve: evaluation rows of frozen
			// checkpoints spend, but are no iteration of it.
			if rundir.Phase(c.Phase) == rundir.PhaseEval {
				continue
			}
			it := st.iters[int(c.Iteration)]
			if it == nil {
				it = &IterationSeries{Iteration: int(c.Iteration), PerTask: map[string][]float64{}}
				st.iters[int(c.Iteration)] = it
			}
			it.Trials++
			if r, ok := c.scoredReward(); ok {
				it.PerTask[c.TaskID] = append(it.PerTask[c.TaskID], r)
			} else if c.EnvFailure {
				it.EnvFailures++
			}
			for _, u := range c.Updates {
				key := [2]string{c.RunID, u.ProvenanceID}
				if first, ok := st.updates[key]; !ok || int(c.Iteration) < first {
					st.updates[key] = int(c.Iteration)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read series of %s: %w", dir, err)
	}
	updates, err := tableUpdates(dir)
	if err != nil {
		return nil, fmt.Errorf("read series of %s: %w", dir, err)
	}
	for _, u := range updates {
		if st := rows[names.name(u.Row, u.Seed)]; st != nil {
			st.updates[[2]string{u.RunID, u.ProvenanceID}] = int(u.Iteration)
		}
	}
	var out []RowSeries
	for _, a := range orderRows(aggs, m.Rows) {
		st := rows[a.name]
		for _, first := range st.updates {
			if it := st.iters[first]; it != nil {
				it.NewSkillUpdates++
			}
		}
		rs := RowSeries{Row: a.name, Runs: len(a.runs), Spend: st.spend[:]}
		for i := range rs.Spend {
			rs.Spend[i].Role = roles[i]
		}
		for _, it := range st.iters {
			for _, r := range it.PerTask {
				slices.Sort(r)
			}
			rs.Iterations = append(rs.Iterations, *it)
		}
		sort.Slice(rs.Iterations, func(i, j int) bool { return rs.Iterations[i].Iteration < rs.Iterations[j].Iteration })
		out = append(out, rs)
	}
	return out, nil
}
