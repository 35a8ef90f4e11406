package inspect

import (
	"fmt"
	"slices"
	"sort"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/harness/stats"
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
	// Tasks counts, for each task scored in this iteration (in task id
	// order), its scored rewards by value (several when seeds or students
	// are pooled): all the curve's mean and interval need, in a few bytes
	// per task. Environment failures are not in it.
	Tasks       []stats.Rewards `json:"-"`
	Trials      int             `json:"trials"`
	EnvFailures int             `json:"env_failures"`
	// NewSkillUpdates counts the distinct skill updates (by run and
	// provenance id) first seen in this iteration, summed over runs.
	NewSkillUpdates int `json:"new_skill_updates"`
}

// Series reads every metric row under dir (a run or a matrix) into one
// RowSeries per row, in the order Compare uses. Memory grows with rows x
// iterations x tasks (a count per cell), never with trials or whole rows.
func Series(dir string) ([]RowSeries, error) { return series(dir, false) }

// SeriesByStudent is Series with each row's students apart, one
// RowSeries per row and student named "<row>/<student>", as Compare names
// them with ByStudent.
func SeriesByStudent(dir string) ([]RowSeries, error) { return series(dir, true) }

func series(dir string, byStudent bool) ([]RowSeries, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	files, err := metricFiles(dir)
	if err != nil {
		return nil, err
	}
	sa := newSeriesAgg(byStudent)
	if err := scanFiles(files, fullScan, sa.addBatch); err != nil {
		return nil, fmt.Errorf("read series of %s: %w", dir, err)
	}
	if err := sa.addTableUpdates(dir); err != nil {
		return nil, fmt.Errorf("read series of %s: %w", dir, err)
	}
	return sa.finish(m), nil
}

// seriesAgg accumulates the series of every row while the metrics stream
// by.
type seriesAgg struct {
	// byStudent keeps each row's students apart ("<row>/<student>"), as
	// Compare does with ByStudent.
	byStudent bool
	rows      map[string]*seriesRow
	aggs      map[string]*rowAgg
	names     rowNamer
	tasks     taskIndex
}

type seriesRow struct {
	agg     *rowAgg // for ordering (seeds, runs) only
	iters   map[int]*iterCells
	spend   [len(roles)]RoleSpend
	updates map[[2]string]int // (run, provenance id) -> first iteration
}

func newSeriesAgg(byStudent bool) *seriesAgg {
	return &seriesAgg{byStudent: byStudent, rows: map[string]*seriesRow{}, aggs: map[string]*rowAgg{}, names: rowNamer{}, tasks: taskIndex{}}
}

func (sa *seriesAgg) addBatch(batch []record) error {
	for i := range batch {
		sa.add(&batch[i])
	}
	return nil
}

func (sa *seriesAgg) add(c *record) {
	name := sa.names.name(c.Row, c.Seed)
	if sa.byStudent {
		name += "/" + c.Student
	}
	st := sa.rows[name]
	if st == nil {
		st = &seriesRow{agg: newRowAgg(name), iters: map[int]*iterCells{}, updates: map[[2]string]int{}}
		sa.rows[name], sa.aggs[name] = st, st.agg
	}
	st.agg.seed(c.Seed)
	st.agg.runs[c.RunID] = true
	addSpend(&st.spend, c)
	// The series is the learning curve: evaluation rows of frozen
	// checkpoints spend, but are no iteration of it.
	if rundir.Phase(c.Phase) == rundir.PhaseEval {
		return
	}
	it := st.iters[int(c.Iteration)]
	if it == nil {
		// Sized for the tasks seen so far: most iterations run them all.
		it = &iterCells{IterationSeries: IterationSeries{Iteration: int(c.Iteration)}, cells: make([]stats.Rewards, 0, len(sa.tasks))}
		st.iters[int(c.Iteration)] = it
	}
	it.Trials++
	if r, ok := c.scoredReward(); ok {
		it.add(sa.tasks.of(c.TaskID), r)
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

// addTableUpdates records the updates of dir's updates table, each at the
// iteration that committed it, for rows the metric rows named.
func (sa *seriesAgg) addTableUpdates(dir string) error {
	updates, err := tableUpdates(dir)
	if err != nil {
		return err
	}
	if sa.byStudent {
		// The table names no student; the metric rows' own updates
		// place them.
		return nil
	}
	for _, u := range updates {
		if st := sa.rows[sa.names.name(u.Row, u.Seed)]; st != nil {
			st.updates[[2]string{u.RunID, u.ProvenanceID}] = int(u.Iteration)
		}
	}
	return nil
}

func (sa *seriesAgg) finish(m rundir.Manifest) []RowSeries {
	order := sa.tasks.order()
	var out []RowSeries
	for _, a := range orderRows(sa.aggs, m.Rows) {
		st := sa.rows[a.name]
		for _, first := range st.updates {
			if it := st.iters[first]; it != nil {
				it.NewSkillUpdates++
			}
		}
		rs := RowSeries{Row: a.name, Runs: len(a.runs), Spend: st.spend[:]}
		for i := range rs.Spend {
			rs.Spend[i].Role = roles[i]
		}
		var scratch []stats.Rewards
		for _, it := range st.iters {
			var is IterationSeries
			is, scratch = it.series(order, scratch)
			rs.Iterations = append(rs.Iterations, is)
		}
		sort.Slice(rs.Iterations, func(i, j int) bool { return rs.Iterations[i].Iteration < rs.Iterations[j].Iteration })
		out = append(out, rs)
	}
	return out
}

// taskIndex numbers task ids as a scan meets them, so per-task cells can
// live in slices rather than maps.
type taskIndex map[string]int

func (x taskIndex) of(task string) int {
	i, ok := x[task]
	if !ok {
		i = len(x)
		x[task] = i
	}
	return i
}

// order lists the task indexes in task id order.
func (x taskIndex) order() []int {
	ids := make([]string, 0, len(x))
	for id := range x {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = x[id]
	}
	return out
}

// iterCells is an iteration of a row while the scan runs: a reward count
// per task index.
type iterCells struct {
	IterationSeries
	cells []stats.Rewards
}

func (it *iterCells) add(task int, r float64) {
	if task >= len(it.cells) {
		it.cells = slices.Grow(it.cells, task+1-len(it.cells))[:task+1]
	}
	it.cells[task].Add(r)
}

// series is the finished iteration: the scored tasks' counts in task id
// order, rearranged within the cells' own array (through scratch, which
// it returns for the next iteration), so finishing a large matrix does
// not hold every count twice.
func (it *iterCells) series(order []int, scratch []stats.Rewards) (IterationSeries, []stats.Rewards) {
	out := it.IterationSeries
	scratch = scratch[:0]
	for _, i := range order {
		if i < len(it.cells) && it.cells[i].N() > 0 {
			scratch = append(scratch, it.cells[i])
		}
	}
	out.Tasks = it.cells[:copy(it.cells, scratch)]
	it.cells = nil
	return out, scratch
}
