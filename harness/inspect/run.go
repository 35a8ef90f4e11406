package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/harness/stats"
	"github.com/mediated-coevo/harness/internal/durable"
)

// RunView is everything `harness inspect RUN_DIR` shows about one run.
type RunView struct {
	ID         string        `json:"id"`
	Path       string        `json:"path"`
	Name       string        `json:"name,omitempty"`
	MatrixID   string        `json:"matrix_id,omitempty"`
	Status     rundir.Status `json:"status"`
	Error      string        `json:"error,omitempty"`
	Condition  string        `json:"condition,omitempty"`
	Policy     string        `json:"skill_update_policy,omitempty"`
	Preset     string        `json:"baseline_preset,omitempty"`
	Lab        string        `json:"lab,omitempty"`
	Agent      string        `json:"agent,omitempty"`
	Seed       int64         `json:"seed"`
	Offline    bool          `json:"offline"`
	StartedAt  time.Time     `json:"started_at"`
	UpdatedAt  time.Time     `json:"updated_at"`
	FinishedAt *time.Time    `json:"finished_at,omitempty"`

	Tasks             []string `json:"tasks"`
	IterationsDone    int      `json:"iterations_done"`
	IterationsPlanned int      `json:"iterations_planned"`

	Trials      int `json:"trials"`
	Scored      int `json:"scored"`
	EnvFailures int `json:"env_failures"`
	Unscored    int `json:"unscored"`
	// MeanReward is the macro mean over tasks of all scored trials.
	MeanReward *float64 `json:"mean_reward"`
	// Statuses counts trials by trial status (scored, agent_timeout,
	// agent_error, verifier_error, env_failure, budget_exhausted).
	Statuses map[rundir.TrialStatus]int `json:"statuses"`
	// Failures are the trials that were not scored, or whose model or tool
	// calls failed, with the cause each recorded, in iteration and task order.
	Failures []TrialFailure `json:"failures"`

	Iterations []IterationStat `json:"iterations"`
	// Evaluation holds the held-out evaluation of skill checkpoints, apart
	// from the training counts above.
	Evaluation   []CheckpointStat   `json:"evaluation"`
	SkillUpdates []SkillUpdate      `json:"skill_updates"`
	Rejected     []RejectedProposal `json:"rejected_proposals"`
	History      HistoryCounts      `json:"history"`

	Spend        []RoleSpend `json:"spend"`
	TotalTokens  int64       `json:"total_tokens"`
	TotalCostUSD float64     `json:"total_cost_usd"`
	// CachedInputTokens is the part of the input tokens the endpoints
	// reported as read from their prompt caches.
	CachedInputTokens int64 `json:"cached_input_tokens"`

	// Warnings note what could not be read (a damaged sidecar line) and
	// what the numbers cannot be used for (offline results).
	Warnings []string `json:"warnings"`
}

// TrialFailure is one trial that failed, or was scored despite failed
// model calls or malformed tool calls.
type TrialFailure struct {
	Iteration          int                `json:"iteration"`
	TaskID             string             `json:"task_id"`
	Status             rundir.TrialStatus `json:"status"`
	Cause              string             `json:"cause,omitempty"`
	ModelFailures      int                `json:"model_failures"`
	MalformedToolCalls int                `json:"malformed_tool_calls"`
}

// CheckpointStat is the held-out evaluation of the skills a run held after
// an iteration (0: its initial skills).
type CheckpointStat struct {
	Checkpoint  int      `json:"checkpoint"`
	Trials      int      `json:"trials"`
	Scored      int      `json:"scored"`
	EnvFailures int      `json:"env_failures"`
	MeanReward  *float64 `json:"mean_reward"`
}

// IterationStat is one iteration of a run.
type IterationStat struct {
	Iteration   int `json:"iteration"`
	Trials      int `json:"trials"`
	Scored      int `json:"scored"`
	EnvFailures int `json:"env_failures"`
	// MeanReward is the mean over tasks of the iteration's scored rewards
	// (each task's trials averaged first); null when none was scored.
	MeanReward   *float64                   `json:"mean_reward"`
	Statuses     map[rundir.TrialStatus]int `json:"statuses"`
	SkillUpdates int                        `json:"skill_updates"`
	Tokens       int64                      `json:"tokens"`
	CostUSD      float64                    `json:"cost_usd"`
}

// SkillUpdate is one committed skill change on the run's timeline.
type SkillUpdate struct {
	Iteration int                `json:"iteration"`
	ID        string             `json:"id"`
	Role      string             `json:"role"`
	Flow      string             `json:"flow,omitempty"` // advisor_gate | reflection
	Rule      string             `json:"rule,omitempty"`
	Numbers   map[string]float64 `json:"numbers,omitempty"`
	OldHash   string             `json:"old_hash"`
	NewHash   string             `json:"new_hash"`
	Evidence  string             `json:"evidence,omitempty"`
	Time      *time.Time         `json:"time,omitempty"`
	// Source is where it was found: "provenance" (skill_updates.jsonl) or
	// "metrics" (only the metric rows know of it).
	Source string `json:"source"`
}

// RejectedProposal is one rejected batch or candidate.
type RejectedProposal struct {
	Iteration int                `json:"iteration"`
	Type      string             `json:"type"` // batch | candidate
	BatchID   string             `json:"batch_id"`
	Proposals int                `json:"proposals"`
	Reason    string             `json:"reason"`
	Advice    string             `json:"advice,omitempty"`
	Rule      string             `json:"rule,omitempty"`
	Numbers   map[string]float64 `json:"numbers,omitempty"`
	Evidence  string             `json:"evidence,omitempty"`
	Time      *time.Time         `json:"time,omitempty"`
}

// HistoryCounts sums up history/history.jsonl.
type HistoryCounts struct {
	// Entries counts entries by "role/kind" (planner/plan, mediator/report, ...).
	Entries  map[string]int `json:"entries"`
	Withheld int            `json:"withheld_reports"`
	// Rewarded counts entries a delayed reward was attached to; Dropped
	// the ids dropped after an unusable trace.
	Rewarded int `json:"rewarded"`
	Dropped  int `json:"dropped"`
}

// Lines of the sidecar files, as far as the views need them.
type (
	provenanceLine struct {
		ID        string             `json:"id"`
		Role      string             `json:"role"`
		Flow      string             `json:"flow"`
		Iteration int                `json:"iteration"`
		Rule      string             `json:"rule"`
		Numbers   map[string]float64 `json:"numbers"`
		OldHash   string             `json:"old_hash"`
		NewHash   string             `json:"new_hash"`
		Evidence  string             `json:"evidence"`
		Time      *time.Time         `json:"time"`
	}
	rejectedLine struct {
		Type      string            `json:"type"`
		BatchID   string            `json:"batch_id"`
		Iteration int               `json:"iteration"`
		Reason    string            `json:"reason"`
		Advice    string            `json:"advice"`
		Proposals []json.RawMessage `json:"proposals"`
		Decision  *struct {
			Rule    string             `json:"rule"`
			Numbers map[string]float64 `json:"numbers"`
		} `json:"decision"`
		Evidence string     `json:"evidence"`
		Time     *time.Time `json:"time"`
	}
	historyLine struct {
		Type  string `json:"type"`
		Entry *struct {
			ID        string   `json:"id"`
			Role      string   `json:"role"`
			Kind      string   `json:"kind"`
			TaskID    string   `json:"task_id"`
			Iteration int      `json:"iteration"`
			Withheld  bool     `json:"withheld"`
			Reward    *float64 `json:"reward"`
			// From and To name the students a routed item went between.
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"entry"`
		IDs       []string `json:"ids"`
		Reward    *float64 `json:"reward"`
		TaskID    string   `json:"task_id"`
		Iteration int      `json:"iteration"`
		Status    string   `json:"status"`
	}
)

// iterAgg accumulates one iteration while the metrics stream by.
type iterAgg struct {
	trials, scored, env int
	statuses            map[rundir.TrialStatus]int
	perTask             map[string][]float64
	updates             map[string]bool
	tokens              int64
	cost                float64
}

// ReadRunView reads one run directory into its view: per-iteration rewards
// and statuses, the skill-update timeline, rejected proposals, failures by
// status, and tokens and cost by role.
func ReadRunView(dir string) (*RunView, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	if m.Kind == rundir.KindMatrix {
		return nil, fmt.Errorf("%s is a matrix: compare its rows with `harness inspect --compare %s`, list them with `harness inspect %s`, or view one row with `harness inspect %s`", dir, dir, dir, filepath.Join(dir, "<row>"))
	}
	v := newRunView(dir, m)
	files, err := metricFiles(dir)
	if err != nil {
		return nil, err
	}
	v.Warnings = append(v.Warnings, missingParts(dir, m.CompletedIterations)...)
	sc := newRunScan(v)
	err = scanFiles(files, fullScan, func(batch []record) error {
		for i := range batch {
			sc.add(&batch[i])
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", dir, err)
	}
	if err := addTableUpdates(dir, sc.iters, sc.updates); err != nil {
		return nil, fmt.Errorf("inspect %s: %w", dir, err)
	}
	sc.finish()
	v.readUpdates(filepath.Join(dir, rundir.SkillUpdatesFile), sc.updates)
	v.readRejected(filepath.Join(dir, rundir.RejectedFile))
	v.readHistory(filepath.Join(dir, rundir.HistoryFile))
	v.warnAbout(m)
	return v, nil
}

// newRunView fills what the manifest says and leaves every list empty (not
// null, for --json).
func newRunView(dir string, m rundir.Manifest) *RunView {
	v := &RunView{
		ID: m.ID, Path: dir, Name: m.Name, MatrixID: m.MatrixID, Status: m.Status, Error: m.Error,
		Condition: m.Condition, Policy: m.Policy, Preset: m.Preset, Lab: m.Lab, Agent: m.Agent,
		Seed: m.Seed, Offline: m.Offline, StartedAt: m.StartedAt, UpdatedAt: m.UpdatedAt, FinishedAt: m.FinishedAt,
		Tasks: m.Tasks, IterationsDone: m.CompletedIterations, IterationsPlanned: m.Iterations,
		Statuses: map[rundir.TrialStatus]int{}, Iterations: []IterationStat{}, SkillUpdates: []SkillUpdate{},
		Rejected: []RejectedProposal{}, Warnings: []string{}, Failures: []TrialFailure{},
		History: HistoryCounts{Entries: map[string]int{}},
	}
	if v.Tasks == nil {
		v.Tasks = []string{}
	}
	return v
}

// warnAbout adds the warnings the manifest calls for: offline results,
// trials with warnings, forced resumes that changed the configuration.
func (v *RunView) warnAbout(m rundir.Manifest) {
	if v.Offline {
		v.Warnings = append(v.Warnings, "offline results: this run used the offline model provider and tests the machinery, not the agents")
	}
	v.Warnings = append(v.Warnings, trialWarnings(m.TrialWarnings)...)
	for _, f := range m.ForcedResumes {
		v.Warnings = append(v.Warnings, fmt.Sprintf("the configuration changed at a forced resume: iterations from %d on ran under %s (earlier ones: %s)",
			f.FromIteration, rundir.ConfigFile, f.KeptConfig))
	}
}

// runScan accumulates one run's metric rows into its view as they stream
// by; finish turns the sums into the view's numbers.
type runScan struct {
	v         *RunView
	iters     map[int]*iterAgg
	perTask   map[string][]float64
	spend     [len(roles)]RoleSpend
	updates   map[string]SkillUpdate // by provenance id, as the metric rows name them
	evals     map[int]*CheckpointStat
	evalTasks map[int]map[string][]float64
}

func newRunScan(v *RunView) *runScan {
	return &runScan{v: v, iters: map[int]*iterAgg{}, perTask: map[string][]float64{}, updates: map[string]SkillUpdate{},
		evals: map[int]*CheckpointStat{}, evalTasks: map[int]map[string][]float64{}}
}

// add counts one metric row: a held-out evaluation trial apart, a training
// trial under its iteration.
func (sc *runScan) add(c *record) {
	addSpend(&sc.spend, c)
	sc.v.CachedInputTokens += c.CachedInputTokens
	if rundir.Phase(c.Phase) == rundir.PhaseEval {
		addEval(sc.evals, sc.evalTasks, c)
		return
	}
	v := sc.v
	it := sc.iters[int(c.Iteration)]
	if it == nil {
		it = &iterAgg{statuses: map[rundir.TrialStatus]int{}, perTask: map[string][]float64{}, updates: map[string]bool{}}
		sc.iters[int(c.Iteration)] = it
	}
	v.Trials++
	it.trials++
	v.Statuses[c.Status]++
	it.statuses[c.Status]++
	v.Offline = v.Offline || c.Offline
	if r, ok := c.scoredReward(); ok {
		v.Scored++
		it.scored++
		sc.perTask[c.TaskID] = append(sc.perTask[c.TaskID], r)
		it.perTask[c.TaskID] = append(it.perTask[c.TaskID], r)
	} else if c.EnvFailure {
		v.EnvFailures++
		it.env++
	} else {
		v.Unscored++
	}
	for _, u := range c.Updates {
		it.updates[u.ProvenanceID] = true
		if _, ok := sc.updates[u.ProvenanceID]; !ok {
			sc.updates[u.ProvenanceID] = SkillUpdate{Iteration: int(c.Iteration), ID: u.ProvenanceID,
				Role: u.Role, OldHash: u.OldHash, NewHash: u.NewHash, Source: "metrics"}
		}
	}
	if c.Status != "scored" || c.Cause != "" || c.ModelFailures > 0 || c.MalformedToolCalls > 0 {
		v.Failures = append(v.Failures, TrialFailure{Iteration: int(c.Iteration), TaskID: c.TaskID, Status: c.Status,
			Cause: c.Cause, ModelFailures: int(c.ModelFailures), MalformedToolCalls: int(c.MalformedToolCalls)})
	}
	for r := range roles {
		it.tokens += c.InputTokens[r] + c.OutputTokens[r]
		it.cost += c.CostUSD[r]
	}
}

// finish computes the means, sorts the iterations, failures and
// checkpoints, and totals the spend by role.
func (sc *runScan) finish() {
	v := sc.v
	if len(sc.perTask) > 0 {
		v.MeanReward = float(stats.MacroMean(sc.perTask))
	}
	for n, it := range sc.iters {
		st := IterationStat{Iteration: n, Trials: it.trials, Scored: it.scored, EnvFailures: it.env,
			Statuses: it.statuses, SkillUpdates: len(it.updates), Tokens: it.tokens, CostUSD: it.cost}
		if len(it.perTask) > 0 {
			st.MeanReward = float(stats.MacroMean(it.perTask))
		}
		v.Iterations = append(v.Iterations, st)
	}
	sort.Slice(v.Iterations, func(i, j int) bool { return v.Iterations[i].Iteration < v.Iterations[j].Iteration })
	sort.Slice(v.Failures, func(i, j int) bool {
		a, b := v.Failures[i], v.Failures[j]
		return a.Iteration < b.Iteration || a.Iteration == b.Iteration && a.TaskID < b.TaskID
	})
	v.Evaluation = []CheckpointStat{}
	for cp, st := range sc.evals {
		if len(sc.evalTasks[cp]) > 0 {
			st.MeanReward = float(stats.MacroMean(sc.evalTasks[cp]))
		}
		v.Evaluation = append(v.Evaluation, *st)
	}
	sort.Slice(v.Evaluation, func(i, j int) bool { return v.Evaluation[i].Checkpoint < v.Evaluation[j].Checkpoint })
	for r, role := range roles {
		sc.spend[r].Role = role
		v.TotalTokens += sc.spend[r].InputTokens + sc.spend[r].OutputTokens
		v.TotalCostUSD += sc.spend[r].CostUSD
	}
	v.Spend = sc.spend[:]
}

// addTableUpdates counts the updates table's updates under the iterations
// that committed them, as the scan does with those old parts carry.
func addTableUpdates(dir string, iters map[int]*iterAgg, fromMetrics map[string]SkillUpdate) error {
	updates, err := tableUpdates(dir)
	if err != nil {
		return err
	}
	for _, u := range updates {
		if it := iters[int(u.Iteration)]; it != nil {
			it.updates[u.ProvenanceID] = true
		}
		if _, ok := fromMetrics[u.ProvenanceID]; !ok {
			fromMetrics[u.ProvenanceID] = SkillUpdate{Iteration: int(u.Iteration), ID: u.ProvenanceID,
				Role: u.Role, OldHash: u.OldHash, NewHash: u.NewHash, Source: "metrics"}
		}
	}
	return nil
}

// readJSONL decodes each complete line of a sidecar file into a fresh T.
// A missing file is empty; a line that does not decode is skipped with a
// warning, so one damaged record does not hide the rest.
func readJSONL[T any](v *RunView, path string, fn func(T)) {
	bad := 0
	err := durable.ReadLog(path, func(line []byte) error {
		var rec T
		if err := json.Unmarshal(line, &rec); err != nil {
			bad++
			return nil
		}
		fn(rec)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		v.Warnings = append(v.Warnings, fmt.Sprintf("read %s: %v", path, err))
	}
	if bad > 0 {
		v.Warnings = append(v.Warnings, fmt.Sprintf("%s: damaged lines skipped: %d", path, bad))
	}
}

func (v *RunView) readUpdates(path string, fromMetrics map[string]SkillUpdate) {
	seen := map[string]bool{}
	readJSONL(v, path, func(p provenanceLine) {
		if p.ID == "" || seen[p.ID] {
			return
		}
		seen[p.ID] = true
		v.SkillUpdates = append(v.SkillUpdates, SkillUpdate{Iteration: p.Iteration, ID: p.ID, Role: p.Role,
			Flow: p.Flow, Rule: p.Rule, Numbers: p.Numbers, OldHash: p.OldHash, NewHash: p.NewHash,
			Evidence: p.Evidence, Time: p.Time, Source: "provenance"})
	})
	// Metrics may know of an update whose provenance line was lost.
	for id, u := range fromMetrics {
		if !seen[id] {
			v.SkillUpdates = append(v.SkillUpdates, u)
		}
	}
	sort.SliceStable(v.SkillUpdates, func(i, j int) bool {
		a, b := v.SkillUpdates[i], v.SkillUpdates[j]
		if a.Iteration != b.Iteration {
			return a.Iteration < b.Iteration
		}
		if a.Source != b.Source {
			return a.Source == "provenance"
		}
		if a.Source == "metrics" {
			return a.ID < b.ID
		}
		return false // keep file order among provenance lines
	})
}

func (v *RunView) readRejected(path string) {
	readJSONL(v, path, func(r rejectedLine) {
		rp := RejectedProposal{Iteration: r.Iteration, Type: r.Type, BatchID: r.BatchID, Proposals: len(r.Proposals),
			Reason: r.Reason, Advice: r.Advice, Evidence: r.Evidence, Time: r.Time}
		if r.Decision != nil {
			rp.Rule, rp.Numbers = r.Decision.Rule, r.Decision.Numbers
		}
		v.Rejected = append(v.Rejected, rp)
	})
}

func (v *RunView) readHistory(path string) {
	readJSONL(v, path, func(h historyLine) {
		switch h.Type {
		case "entry":
			if h.Entry == nil {
				return
			}
			v.History.Entries[h.Entry.Role+"/"+h.Entry.Kind]++
			if h.Entry.Withheld {
				v.History.Withheld++
			}
		case "reward":
			v.History.Rewarded += len(h.IDs)
		case "drop":
			v.History.Dropped += len(h.IDs)
		}
	})
}

// trialWarnings lists each distinct trial warning once, with the trials
// and tasks that had it: the run records them keyed "<task>: <message>",
// and a warning every task raises (an unenforced disk limit) is one line,
// not one per task.
func trialWarnings(byTask map[string]int) []string {
	trials, tasks := map[string]int{}, map[string]int{}
	for key, n := range byTask {
		_, msg, ok := strings.Cut(key, ": ")
		if !ok {
			msg = key
		}
		trials[msg] += n
		tasks[msg]++
	}
	var out []string
	for _, msg := range slices.Sorted(maps.Keys(trials)) {
		out = append(out, fmt.Sprintf("%s: %d trial(s) of %d task(s) (see their traces)", msg, trials[msg], tasks[msg]))
	}
	return out
}

// missingParts warns of every iteration run.json counts as completed whose
// metrics part is not there: a hole a resume refuses to continue over.
func missingParts(dir string, completed int) []string {
	var out []string
	for it := 1; it <= completed; it++ {
		rel := filepath.Join(rundir.MetricsDir, rundir.MetricsPartName(it))
		if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
			out = append(out, fmt.Sprintf("%s is missing, though iteration %d was completed: its trials are not counted here", rel, it))
		}
	}
	return out
}

// addEval counts one held-out evaluation trial under its checkpoint.
func addEval(evals map[int]*CheckpointStat, perTask map[int]map[string][]float64, c *record) {
	cp := int(c.Iteration)
	st := evals[cp]
	if st == nil {
		st = &CheckpointStat{Checkpoint: cp}
		evals[cp], perTask[cp] = st, map[string][]float64{}
	}
	st.Trials++
	if r, ok := c.scoredReward(); ok {
		st.Scored++
		perTask[cp][c.TaskID] = append(perTask[cp][c.TaskID], r)
	} else if c.EnvFailure {
		st.EnvFailures++
	}
}
