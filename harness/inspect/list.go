package inspect

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/harness/stats"
)

// DirSummary is one line of the listing: a run or matrix directory.
type DirSummary struct {
	ID        string        `json:"id"`
	Path      string        `json:"path"`
	Kind      rundir.Kind   `json:"kind"` // run | matrix
	Name      string        `json:"name,omitempty"`
	Status    rundir.Status `json:"status"`
	StartedAt time.Time     `json:"started_at"`
	UpdatedAt time.Time     `json:"updated_at"`
	Finished  *time.Time    `json:"finished_at,omitempty"`
	// Rows is the number of rows: 1 for a run, the row directories of a
	// matrix.
	Rows  int `json:"rows"`
	Tasks int `json:"tasks"`
	// IterationsDone and IterationsPlanned are the run's; for a matrix they
	// are summed over its rows.
	IterationsDone    int `json:"iterations_done"`
	IterationsPlanned int `json:"iterations_planned"`
	// Trials counts metric rows; Scored those with a reward; EnvFailures
	// those lost to the environment (never scored as zeros).
	Trials      int `json:"trials"`
	Scored      int `json:"scored"`
	EnvFailures int `json:"env_failures"`
	// MeanReward is the macro mean over tasks of the scored trials (all
	// rows of a matrix pooled); null when nothing was scored yet.
	MeanReward *float64 `json:"mean_reward"`
	// SkillUpdates counts distinct committed skill updates (by run and
	// provenance id).
	SkillUpdates int     `json:"skill_updates"`
	Tokens       int64   `json:"tokens"`
	CostUSD      float64 `json:"cost_usd"`
	Offline      bool    `json:"offline"`
	// Error says why the directory could not be summarized; the listing
	// goes on without it.
	Error string `json:"error,omitempty"`
}

// List summarizes the run and matrix directories directly under root
// (DefaultRoot when empty), oldest first. Given a matrix directory it lists
// the matrix's rows. A directory that cannot be read is listed with Error
// set rather than failing the whole listing.
func List(root string) ([]DirSummary, error) {
	if root == "" {
		root = DefaultRoot
	}
	if m, err := readManifest(root); err == nil && m.Kind == rundir.KindRun {
		return nil, fmt.Errorf("%s is a run directory, not a directory of runs: view it with `harness inspect %s`", root, root)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no experiments under %s: nothing has run here yet (run `harness run` or `harness matrix`, or pass the directory that holds the run directories)", root)
		}
		return nil, fmt.Errorf("list %s: %w", root, err)
	}
	out := []DirSummary{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, rundir.ManifestFile)); err != nil {
			continue // not a run directory (a task cache, notes, ...)
		}
		s, err := Summarize(dir)
		if err != nil {
			s = DirSummary{ID: e.Name(), Path: dir, Status: "unreadable", Error: err.Error()}
		}
		out = append(out, s)
	}
	// Directory names start with a UTC timestamp, so name order is time order.
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Summarize summarizes one run or matrix directory.
func Summarize(dir string) (DirSummary, error) {
	s, err := summaryOf(dir)
	if err != nil {
		return s, err
	}
	files, err := metricFiles(dir)
	if err != nil {
		return s, err
	}
	var agg totals
	if err := scanFiles(files, fullScan, agg.add); err != nil {
		return s, fmt.Errorf("summarize %s: %w", dir, err)
	}
	if err := agg.addTableUpdates(dir); err != nil {
		return s, fmt.Errorf("summarize %s: %w", dir, err)
	}
	agg.fill(&s)
	return s, nil
}

// summaryOf is the part of a directory's summary its manifests give.
func summaryOf(dir string) (DirSummary, error) {
	m, err := readManifest(dir)
	if err != nil {
		return DirSummary{}, err
	}
	s := DirSummary{
		ID: m.ID, Path: dir, Kind: m.Kind, Name: m.Name, Status: m.Status,
		StartedAt: m.StartedAt, UpdatedAt: m.UpdatedAt, Finished: m.FinishedAt,
		Rows: 1, Tasks: len(m.Tasks), Offline: m.Offline,
		IterationsDone: m.CompletedIterations, IterationsPlanned: m.Iterations,
	}
	if s.Name == "" {
		s.Name = m.Preset
	}
	if s.Name == "" {
		s.Name = m.Condition
	}
	if m.Kind == rundir.KindMatrix {
		dirs, err := rowDirs(dir, m)
		if err != nil {
			return s, err
		}
		s.Rows = len(dirs)
		s.IterationsDone, s.IterationsPlanned = 0, 0
		for _, rd := range dirs {
			rm, err := readManifest(rd)
			if err != nil {
				// A row that has not started yet still has its plan.
				s.IterationsPlanned += m.Iterations
				continue
			}
			s.IterationsDone += rm.CompletedIterations
			s.IterationsPlanned += rm.Iterations
			s.Offline = s.Offline || rm.Offline
		}
	}

	return s, nil
}

// SummarizeMatrix summarizes a matrix directory and each of its row
// directories (those List would list, in its order) from one pass over
// their metric files, rather than reading every row twice.
func SummarizeMatrix(dir string) (DirSummary, []DirSummary, error) {
	m, err := readManifest(dir)
	if err != nil {
		return DirSummary{}, nil, err
	}
	if m.Kind != rundir.KindMatrix {
		return DirSummary{}, nil, fmt.Errorf("%s is a %s directory, not a matrix", dir, m.Kind)
	}
	files, err := metricFiles(dir)
	if err != nil {
		return DirSummary{}, nil, err
	}
	byDir := map[string][]string{} // row directory -> its parts, in order
	for _, f := range files {
		d := filepath.Dir(filepath.Dir(f))
		byDir[d] = append(byDir[d], f)
	}
	var all totals
	rows := []DirSummary{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return DirSummary{}, nil, fmt.Errorf("list rows of %s: %w", dir, err)
	}
	for _, e := range entries {
		rd := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(rd, rundir.ManifestFile)); !e.IsDir() || err != nil {
			continue
		}
		var t totals
		if err := scanFiles(byDir[rd], fullScan, t.add); err != nil {
			return DirSummary{}, nil, fmt.Errorf("summarize %s: %w", dir, err)
		}
		if err := t.addTableUpdates(rd); err != nil {
			return DirSummary{}, nil, fmt.Errorf("summarize %s: %w", dir, err)
		}
		delete(byDir, rd)
		all.merge(&t)
		rs, err := summaryOf(rd)
		if err != nil {
			rs = DirSummary{ID: e.Name(), Path: rd, Status: "unreadable", Error: err.Error()}
		} else {
			t.fill(&rs)
		}
		rows = append(rows, rs)
	}
	for _, rest := range byDir { // parts outside the row directories
		if err := scanFiles(rest, fullScan, all.add); err != nil {
			return DirSummary{}, nil, fmt.Errorf("summarize %s: %w", dir, err)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	s, err := summaryOf(dir)
	if err != nil {
		return s, nil, err
	}
	all.fill(&s)
	return s, rows, nil
}

// totals aggregates the listing numbers over a stream of metric rows.
type totals struct {
	trials, scored, env int
	offline             bool
	perTask             map[string]*stats.Rewards
	updates             map[[2]string]bool    // (run id, provenance id)
	spend               [len(roles)]RoleSpend // by roles index
}

func (t *totals) add(batch []record) error {
	t.init()
	for i := range batch {
		c := &batch[i]
		t.trials++
		t.offline = t.offline || c.Offline
		if r, ok := c.scoredReward(); ok {
			t.scored++
			rewardsOf(t.perTask, c.TaskID).Add(r)
		} else if c.EnvFailure {
			t.env++
		}
		for _, u := range c.Updates {
			t.updates[[2]string{c.RunID, u.ProvenanceID}] = true
		}
		addSpend(&t.spend, c)
	}
	return nil
}

func (t *totals) init() {
	if t.perTask == nil {
		t.perTask = map[string]*stats.Rewards{}
		t.updates = map[[2]string]bool{}
	}
}

// merge adds o's numbers to t's.
func (t *totals) merge(o *totals) {
	t.init()
	t.trials, t.scored, t.env = t.trials+o.trials, t.scored+o.scored, t.env+o.env
	t.offline = t.offline || o.offline
	for task, r := range o.perTask {
		rewardsOf(t.perTask, task).Merge(*r)
	}
	for k := range o.updates {
		t.updates[k] = true
	}
	for i := range t.spend {
		t.spend[i].Role = roles[i]
		t.spend[i].InputTokens += o.spend[i].InputTokens
		t.spend[i].OutputTokens += o.spend[i].OutputTokens
		t.spend[i].CostUSD += o.spend[i].CostUSD
	}
}

// fill sets the numbers of s that come from the metric rows.
func (t *totals) fill(s *DirSummary) {
	s.Trials, s.Scored, s.EnvFailures = t.trials, t.scored, t.env
	s.Offline = s.Offline || t.offline
	if len(t.perTask) > 0 {
		// In task order, so the sum is the same every time.
		tasks := make([]stats.Rewards, 0, len(t.perTask))
		for _, id := range slices.Sorted(maps.Keys(t.perTask)) {
			tasks = append(tasks, *t.perTask[id])
		}
		s.MeanReward = float(stats.MacroMeanOf(tasks))
	}
	if s.Tasks == 0 {
		s.Tasks = len(t.perTask)
	}
	s.SkillUpdates = len(t.updates)
	for _, r := range t.spend {
		s.Tokens += r.InputTokens + r.OutputTokens
		s.CostUSD += r.CostUSD
	}
}

// RoleSpend is the tokens and cost charged to one role.
type RoleSpend struct {
	Role         string  `json:"role"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

func addSpend(dst *[len(roles)]RoleSpend, c *record) {
	for i, role := range roles {
		dst[i].Role = role
		dst[i].InputTokens += c.InputTokens[i]
		dst[i].OutputTokens += c.OutputTokens[i]
		dst[i].CostUSD += c.CostUSD[i]
	}
}
