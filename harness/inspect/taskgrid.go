package inspect

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// TaskGrid is the per-task view of a matrix (or a run): one line per task,
// one cell per row, so a reader sees which tasks moved and which ones a
// row's mean rests on. Rows are named and ordered as in Compare.
type TaskGrid struct {
	Rows  []string   `json:"rows"`
	Tasks []TaskLine `json:"tasks"`
}

// TaskLine is one task across the rows; Cells follow TaskGrid.Rows.
type TaskLine struct {
	Task  string     `json:"task"`
	Cells []TaskCell `json:"cells"`
}

// TaskCell is one task in one row: its trials, the mean of its scored
// rewards (nil when none was scored) and its trials by status.
type TaskCell struct {
	Trials      int                        `json:"trials"`
	Scored      int                        `json:"scored"`
	EnvFailures int                        `json:"env_failures"`
	MeanReward  *float64                   `json:"mean_reward"`
	Statuses    map[rundir.TrialStatus]int `json:"statuses"`
	sum         float64
}

// Failures counts the cell's trials without a reward, environment failures
// included.
func (c TaskCell) Failures() int { return c.Trials - c.Scored }

// Tasks reads the training rows under dir (a matrix or a run) into a
// TaskGrid; held-out evaluation rows are left out. Only the columns Compare
// reads are decoded.
func Tasks(dir string) (*TaskGrid, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	files, err := metricFiles(dir)
	if err != nil {
		return nil, err
	}
	aggs := map[string]*rowAgg{}
	cells := map[string]map[string]*TaskCell{} // row -> task -> cell
	names := rowNamer{}
	err = scanFiles(files, compareScan, func(batch []record) error {
		for i := range batch {
			c := &batch[i]
			name := names.name(c.Row, c.Seed)
			a := aggs[name]
			if a == nil {
				a = newRowAgg(name)
				aggs[name], cells[name] = a, map[string]*TaskCell{}
			}
			a.seed(c.Seed) // orders the row as Compare does
			if rundir.Phase(c.Phase) == rundir.PhaseEval {
				continue // held-out checkpoints are another estimand, not the learning tasks
			}
			cell := cells[name][c.TaskID]
			if cell == nil {
				cell = &TaskCell{Statuses: map[rundir.TrialStatus]int{}}
				cells[name][c.TaskID] = cell
			}
			cell.Trials++
			cell.Statuses[c.Status]++
			if r, ok := c.scoredReward(); ok {
				cell.Scored++
				cell.sum += r
			} else if c.EnvFailure {
				cell.EnvFailures++
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the tasks of %s: %w", dir, err)
	}
	return buildGrid(orderRows(aggs, m.Rows), cells), nil
}

func buildGrid(rows []*rowAgg, cells map[string]map[string]*TaskCell) *TaskGrid {
	g := &TaskGrid{Rows: make([]string, len(rows)), Tasks: []TaskLine{}}
	taskSet := map[string]bool{}
	for i, a := range rows {
		g.Rows[i] = a.name
		for task := range cells[a.name] {
			taskSet[task] = true
		}
	}
	tasks := make([]string, 0, len(taskSet))
	for task := range taskSet {
		tasks = append(tasks, task)
	}
	sort.Strings(tasks)
	for _, task := range tasks {
		line := TaskLine{Task: task, Cells: make([]TaskCell, len(rows))}
		for i, a := range rows {
			c := cells[a.name][task]
			if c == nil {
				line.Cells[i] = TaskCell{Statuses: map[rundir.TrialStatus]int{}}
				continue
			}
			if c.Scored > 0 {
				c.MeanReward = float(c.sum / float64(c.Scored))
			}
			line.Cells[i] = *c
		}
		g.Tasks = append(g.Tasks, line)
	}
	return g
}

// Statuses lists every status that occurs in the grid, sorted.
func (g *TaskGrid) Statuses() []rundir.TrialStatus {
	set := map[rundir.TrialStatus]bool{}
	for _, l := range g.Tasks {
		for _, c := range l.Cells {
			for s := range c.Statuses {
				set[s] = true
			}
		}
	}
	out := make([]rundir.TrialStatus, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// WriteText prints the grid long-form, one line per task and row (mean
// reward, trials, and the trials without a reward by status), so a wide
// matrix still fits a terminal and piped output stays one record per line.
func (g *TaskGrid) WriteText(w io.Writer, tty bool) error {
	if len(g.Tasks) == 0 {
		_, err := fmt.Fprintln(w, "no training trials yet")
		return err
	}
	t := newTable(tty, "task", "row", "mean reward", "trials", "scored", "failures")
	for _, l := range g.Tasks {
		for i, c := range l.Cells {
			t.add(l.Task, g.Rows[i], num(c.MeanReward), strconv.Itoa(c.Trials), strconv.Itoa(c.Scored), failureCounts(c))
		}
	}
	return t.write(w)
}

// failureCounts lists a cell's unscored trials by status ("agent_error 1,
// env_failure 2"), or "-" when every trial was scored.
func failureCounts(c TaskCell) string {
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(c.Statuses)) {
		if s == rundir.TrialScored || c.Statuses[s] == 0 {
			continue
		}
		parts = append(parts, string(s)+" "+strconv.Itoa(c.Statuses[s]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
