package inspect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

	files, err := metricFiles(dir)
	if err != nil {
		return s, err
	}
	var agg totals
	agg.init()
	if err := scanFiles(files, fullScan, agg.add); err != nil {
		return s, fmt.Errorf("summarize %s: %w", dir, err)
	}
	s.Trials, s.Scored, s.EnvFailures = agg.trials, agg.scored, agg.env
	s.Offline = s.Offline || agg.offline
	if len(agg.perTask) > 0 {
		s.MeanReward = float(stats.MacroMean(agg.perTask))
	}
	if s.Tasks == 0 {
		s.Tasks = len(agg.perTask)
	}
	updates, err := tableUpdates(dir)
	if err != nil {
		return s, fmt.Errorf("summarize %s: %w", dir, err)
	}
	for _, u := range updates {
		agg.updates[[2]string{u.RunID, u.ProvenanceID}] = true
	}
	s.SkillUpdates = len(agg.updates)
	for _, r := range agg.spend {
		s.Tokens += r.InputTokens + r.OutputTokens
		s.CostUSD += r.CostUSD
	}
	return s, nil
}

// totals aggregates the listing numbers over a stream of metric rows.
type totals struct {
	trials, scored, env int
	offline             bool
	perTask             map[string][]float64
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
			t.perTask[c.TaskID] = append(t.perTask[c.TaskID], r)
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
		t.perTask = map[string][]float64{}
		t.updates = map[[2]string]bool{}
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
