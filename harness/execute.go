package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/docker"
	"github.com/mediated-coevo/harness/executor/lab"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/skills"
)

// StatusBudgetExhausted marks a run or matrix stopped by a budget.
const StatusBudgetExhausted = "budget_exhausted"

// ExecOptions is everything Execute needs beyond the plan.
type ExecOptions struct {
	Config *config.Config
	Plan   *Plan
	// Args are the command-line arguments, recorded in config.toml.
	Args []string
	// ForceResume continues a run whose configuration changed.
	ForceResume bool
	Events      func(Event)
	// Backend overrides the Docker backend (tests); nil means Docker.
	Backend executor.Backend
	// OnStart, when set, is told the directory as soon as it exists.
	OnStart func(dir string)
}

// RowOutcome is how one row of a plan ended.
type RowOutcome struct {
	Name   string `json:"name"`
	Dir    string `json:"dir"`
	Status string `json:"status"`
	Result Result `json:"-"`
	Error  string `json:"error,omitempty"`
}

// Outcome is how a whole run or matrix ended.
type Outcome struct {
	Dir    string       `json:"dir"`
	Status string       `json:"status"`
	Rows   []RowOutcome `json:"rows"`
	// Resumed is true when this invocation continued an earlier one; the
	// trial counts are then of this invocation only.
	Resumed     bool  `json:"resumed"`
	Trials      int   `json:"trials"`
	Scored      int   `json:"scored"`
	EnvFailures int   `json:"env_failures"`
	Err         error `json:"-"`
}

// Execute carries out a plan: it resolves the tasks, prepares the sandbox
// backend and the model clients, creates (or reopens, for --resume) the run
// or matrix directory and runs every row.
func Execute(ctx context.Context, o ExecOptions) (*Outcome, error) {
	cfg := o.Config.Clone()
	p := o.Plan
	if p.Offline {
		cfg.SetOffline()
	}
	if p.BudgetTokens > 0 {
		cfg.Budget.MaxTokens = p.BudgetTokens
	}
	if p.BudgetUSD > 0 {
		cfg.Budget.MaxUSD = p.BudgetUSD
	}
	if p.Concurrency > 0 {
		// -j bounds the trials running at once across all rows; max_containers
		// stays a hard cap on live containers above it.
		cfg.ExecutorRuntime.Concurrency = p.Concurrency
		cfg.ExecutorRuntime.MaxContainers = min(max(cfg.ExecutorRuntime.MaxContainers, 1), p.Concurrency)
	}
	// The recorded configuration says what was run, not what the file said.
	if p.Iterations > 0 {
		cfg.Experiment.Iterations = p.Iterations
	}
	if len(p.Seeds) > 0 {
		cfg.Experiment.Seed = p.Seeds[0]
	}
	resolver, err := benchmarks.NewResolver(cfg.ExecutorRuntime)
	if err != nil {
		return nil, err
	}
	tasks, err := resolver.Resolve(ctx, p.Tasks)
	if err != nil {
		return nil, fmt.Errorf("resolve tasks: %w", err)
	}
	var pool []*benchmarks.Task
	if ids := cfg.Validation.Pool; len(ids) > 0 {
		if pool, err = resolver.Resolve(ctx, ids); err != nil {
			return nil, fmt.Errorf("resolve the validation pool: %w", err)
		}
	}
	backend := o.Backend
	if backend == nil {
		d, err := docker.New(ctx, cfg.ExecutorRuntime)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		backend = d
	}
	trials := &executor.Runner{Backend: backend, Runtime: cfg.ExecutorRuntime, RewardMode: cfg.Experiment.RewardMode}
	ledger := llm.NewLedger(llm.Limits{MaxTokens: cfg.Budget.MaxTokens, MaxUSD: cfg.Budget.MaxUSD, WallClock: cfg.Budget.WallClock.Duration})

	if events := o.Events; events != nil {
		o.Events = func(e Event) {
			e.Spend = ledger.Total()
			events(e)
		}
	}
	ex := &execution{opts: o, cfg: cfg, tasks: tasks, pool: pool, trials: trials, ledger: ledger}
	if p.Kind == KindMatrix {
		return ex.matrix(ctx)
	}
	return ex.single(ctx)
}

type execution struct {
	opts   ExecOptions
	cfg    *config.Config
	tasks  []*benchmarks.Task
	pool   []*benchmarks.Task
	trials TrialRunner
	ledger *llm.Ledger
}

func (ex *execution) manifest(row RowSpec, matrixID string) Manifest {
	p := ex.opts.Plan
	return Manifest{Kind: KindRun, Name: row.Name, MatrixID: matrixID, Tasks: p.Tasks, TaskSet: p.TaskSet,
		Iterations: p.Iterations, Condition: string(row.Condition), Policy: row.Policy.String(), Preset: row.Preset,
		Lab: row.Lab, Agent: p.Agent, Seed: row.Seed, Offline: p.Offline}
}

func (ex *execution) meta() config.RunMeta {
	return config.RunMeta{Args: ex.opts.Args, Offline: ex.opts.Plan.Offline}
}

// prepareRow creates a row directory with its own copy of the skills.
func (ex *execution) prepareRow(base, dirName string, row RowSpec, matrixID string) (*RunDir, error) {
	cfg := ex.cfg.Clone()
	cfg.Experiment.Seed = row.Seed
	d, err := CreateRunDir(base, RunDirSpec{Manifest: ex.manifest(row, matrixID), DirName: dirName, Config: cfg, Meta: ex.meta()})
	if err != nil {
		return nil, err
	}
	dst := filepath.Join(d.Path, "skills")
	if src := ex.cfg.Experiment.SkillsDir; src != "" {
		err = skills.CopyTree(src, dst)
	} else {
		err = skills.WriteDefaults(dst)
	}
	if err != nil {
		return nil, fmt.Errorf("copy skills into %s: %w", d.Path, err)
	}
	return d, nil
}

func (ex *execution) single(ctx context.Context) (*Outcome, error) {
	p := ex.opts.Plan
	row := p.Rows[0]
	var d *RunDir
	var err error
	if p.ResumeDir != "" {
		d, err = OpenRunDir(p.ResumeDir)
	} else {
		d, err = ex.prepareRow(p.OutDir, "", row, "")
	}
	if err != nil {
		return nil, err
	}
	if ex.opts.OnStart != nil {
		ex.opts.OnStart(d.Path)
	}
	ro := ex.runRow(ctx, d, row, "", ex.ledger)
	out := &Outcome{Dir: d.Path, Status: ro.Status, Rows: []RowOutcome{ro}, Resumed: p.ResumeDir != "", Trials: ro.Result.Trials,
		Scored: ro.Result.Scored, EnvFailures: ro.Result.EnvFailures, Err: ro.Result.Err}
	return out, nil
}

func (ex *execution) runRow(ctx context.Context, d *RunDir, row RowSpec, matrixID string, ledger *llm.Ledger) RowOutcome {
	p := ex.opts.Plan
	ro := RowOutcome{Name: row.Name, Dir: d.Path}
	clients, err := NewClients(ex.cfg, ledger, row.Seed)
	if err != nil {
		ro.Status, ro.Error, ro.Result = StatusFailed, err.Error(), Result{Status: StatusFailed, Err: err}
		return ro
	}
	newAgent, err := ex.agentFactory(row, clients)
	if err != nil {
		ro.Status, ro.Error, ro.Result = StatusFailed, err.Error(), Result{Status: StatusFailed, Err: err}
		return ro
	}
	run := &Run{Spec: row, Config: ex.cfg, Tasks: ex.tasks, Iterations: p.Iterations, AgentKind: p.Agent,
		Offline: p.Offline, MatrixID: matrixID, Dir: d, Concurrency: max(1, p.Concurrency),
		ForceResume: ex.opts.ForceResume, Meta: ex.meta(), ValidationPool: ex.pool, Trials: ex.trials, NewAgent: newAgent,
		Clients: clients, Ledger: ledger, Events: ex.opts.Events}
	if matrixID != "" {
		run.MatrixLedger = ex.ledger
	}
	ro.Result = run.Execute(ctx)
	ro.Status = ro.Result.Status
	if ro.Result.Err != nil {
		ro.Error = ro.Result.Err.Error()
	}
	return ro
}

func (ex *execution) agentFactory(row RowSpec, clients *Clients) (AgentFactory, error) {
	switch ex.opts.Plan.Agent {
	case AgentOracle:
		return func(string) executor.Agent { return executor.OracleAgent{} }, nil
	case AgentNop:
		return func(string) executor.Agent { return executor.NopAgent{} }, nil
	case AgentLab, "":
		settings, err := ex.cfg.Lab(row.Lab)
		if err != nil {
			return nil, err
		}
		roles := []string{config.RoleExecutor, config.RoleCode, config.RoleExplore, config.RolePlan}
		byRole := map[string]*llm.Client{}
		window, maxOut := map[string]int{}, map[string]int{}
		for _, role := range roles {
			byRole[role] = clients.Get(role)
			if m, err := ex.cfg.Model(role); err == nil {
				window[role] = m.ContextTokens
				maxOut[role] = m.MaxTokens
			}
		}
		return func(string) executor.Agent {
			a := lab.NewAgent(settings, byRole)
			a.ContextTokens = window
			a.MaxOutputTokens = maxOut
			return a
		}, nil
	}
	return nil, fmt.Errorf("unknown agent %q: use lab, oracle or nop", ex.opts.Plan.Agent)
}

// matrix runs every row of a matrix plan, rows concurrently up to -j, all
// sharing one budget and one cap on live containers.
func (ex *execution) matrix(ctx context.Context) (*Outcome, error) {
	p := ex.opts.Plan
	var md *RunDir
	var err error
	if p.ResumeDir != "" {
		if md, err = OpenRunDir(p.ResumeDir); err != nil {
			return nil, err
		}
		// A refused resume leaves the directory exactly as it was: no row
		// is created, touched or run.
		if err := ex.checkFingerprint(md); err != nil {
			return &Outcome{Dir: md.Path, Status: StatusFailed, Resumed: true, Err: err}, nil
		}
		if err := ex.restoreMatrixLedger(md); err != nil {
			return nil, err
		}
		if ex.opts.ForceResume {
			if err := md.RecordForcedResume(ex.cfg, ex.meta(), 0); err != nil {
				return nil, err
			}
		}
		// A resume may extend the matrix; a later one without --iterations
		// continues to the same end.
		err = md.UpdateManifest(func(m *Manifest) { m.Iterations = p.Iterations })
	} else {
		md, err = CreateRunDir(p.OutDir, RunDirSpec{Manifest: Manifest{Kind: KindMatrix, Name: p.Name,
			Tasks: p.Tasks, TaskSet: p.TaskSet, Iterations: p.Iterations, Seed: firstSeed(p.Seeds), Seeds: p.Seeds,
			Agent: p.Agent, Offline: p.Offline, Rows: rowNames(p.Rows)}, Config: ex.cfg, Meta: ex.meta()})
		if err == nil {
			err = md.WriteFileFunc(MatrixPlanFile, p.WriteMatrixFile)
		}
	}
	if err != nil {
		return nil, err
	}
	if ex.opts.OnStart != nil {
		ex.opts.OnStart(md.Path)
	}
	out := &Outcome{Dir: md.Path, Rows: make([]RowOutcome, len(p.Rows)), Resumed: p.ResumeDir != ""}
	sem := make(chan struct{}, max(1, p.Concurrency))
	var wg sync.WaitGroup
	for i, row := range p.Rows {
		d, err := ex.openOrCreateRow(md, row)
		if err != nil {
			out.Rows[i] = RowOutcome{Name: row.Name, Status: StatusFailed, Error: err.Error(),
				Result: Result{Status: StatusFailed, Err: err}}
			continue
		}
		// A completed row is skipped unless a larger --iterations extends it.
		if m := d.Manifest(); m.Status == StatusCompleted && m.CompletedIterations >= p.Iterations {
			res := Result{Status: StatusCompleted}
			res.Iterations = completedIterations(d.Path)
			out.Rows[i] = RowOutcome{Name: row.Name, Dir: d.Path, Status: StatusCompleted, Result: res}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				out.Rows[i] = RowOutcome{Name: row.Name, Dir: d.Path, Status: StatusInterrupted,
					Result: Result{Status: StatusInterrupted, Err: ErrInterrupted}}
				_ = d.UpdateManifest(func(m *Manifest) { m.Status = StatusInterrupted })
				return
			}
			defer func() { <-sem }()
			out.Rows[i] = ex.runRow(ctx, d, row, md.ID, ex.ledger.Child(row.Name))
		}()
	}
	wg.Wait()
	out.Status = StatusCompleted
	for _, ro := range out.Rows {
		out.Trials += ro.Result.Trials
		out.Scored += ro.Result.Scored
		out.EnvFailures += ro.Result.EnvFailures
		out.Status = worseStatus(out.Status, ro.Status)
		if out.Err == nil && ro.Result.Err != nil {
			out.Err = fmt.Errorf("row %s: %w", ro.Name, ro.Result.Err)
		}
	}
	_ = md.UpdateManifest(func(m *Manifest) {
		m.Status = out.Status
		if out.Err != nil {
			m.Error = out.Err.Error()
		}
		m.MarkFinished()
	})
	return out, nil
}

// checkFingerprint refuses, unless the resume is forced, to resume a matrix
// whose configuration differs from the one it started with: the matrix's
// own run.json and every checkpointed row must agree. It only reads.
func (ex *execution) checkFingerprint(md *RunDir) error {
	if ex.opts.ForceResume {
		return nil
	}
	now := config.Fingerprint(ex.cfg)
	check := func(dir, was string) error {
		if was == "" || was == now {
			return nil
		}
		return fmt.Errorf("%w: %s started with fingerprint %s, now %s; resume with the original configuration, or force it (--force) knowing the rows will not be comparable",
			ErrConfigChanged, dir, short(was), short(now))
	}
	if err := check(md.Path, md.Manifest().ConfigFingerprint); err != nil {
		return err
	}
	for _, row := range ex.opts.Plan.Rows {
		if st := peekState(md.RowPath(row.Name)); st != nil {
			if err := check(md.RowPath(row.Name), st.ConfigFingerprint); err != nil {
				return err
			}
		}
	}
	return nil
}

// restoreMatrixLedger charges the matrix ledger with what finished and
// checkpointed rows already spent, and restores its wall clock, so a
// resumed matrix keeps one budget. A row whose state cannot be trusted
// stops the resume before any row runs.
func (ex *execution) restoreMatrixLedger(md *RunDir) error {
	var elapsed time.Duration
	for _, row := range ex.opts.Plan.Rows {
		if _, err := os.Stat(filepath.Join(md.RowPath(row.Name), ManifestFile)); err != nil {
			continue // not created, or a crash during creation: it starts afresh
		}
		d, err := md.OpenRow(row.Name)
		if err != nil {
			continue // the row reports it when it is opened to run
		}
		st, err := loadCheckpoint(d)
		if err != nil {
			return fmt.Errorf("row %s: %w", row.Name, err)
		}
		if st == nil {
			continue
		}
		for caller, u := range st.Ledger.ByCaller {
			ex.ledger.Charge(row.Name+"/"+caller, u)
		}
		// The latest matrix clock any row saved; a row's own clock is a
		// lower bound for states that predate it.
		elapsed = max(elapsed, st.MatrixElapsed, st.Ledger.Elapsed)
	}
	snap := ex.ledger.Snapshot()
	snap.Elapsed = max(snap.Elapsed, elapsed)
	ex.ledger.Restore(snap)
	return nil
}

func (ex *execution) openOrCreateRow(md *RunDir, row RowSpec) (*RunDir, error) {
	if _, err := os.Stat(filepath.Join(md.RowPath(row.Name), ManifestFile)); err == nil {
		return md.OpenRow(row.Name)
	}
	// A row directory without run.json is the remains of a crash during
	// creation: nothing in it was measured, so it is started afresh.
	if err := os.RemoveAll(md.RowPath(row.Name)); err != nil {
		return nil, err
	}
	return ex.prepareRow(md.Path, row.Name, row, md.ID)
}

// worseStatus orders outcomes: interrupted > failed > budget > completed.
func worseStatus(a, b string) string {
	rank := map[string]int{StatusCompleted: 0, StatusBudgetExhausted: 1, StatusFailed: 2, StatusInterrupted: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func rowNames(rows []RowSpec) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Name
	}
	return out
}

func firstSeed(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}
