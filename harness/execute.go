package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/installed"
	"github.com/mediated-coevo/harness/executor/lab"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/skills"
)

// ExecOptions is everything Execute needs beyond the plan.
type ExecOptions struct {
	// Plan is what runs; its Config is the configuration it runs with.
	Plan *Plan
	// Tasks are the plan's tasks (the evolve split), Pool the tasks the
	// gate validates on (the validation split, else [validation] pool) and
	// HeldOut the held-out split, all resolved by the caller.
	Tasks, Pool, ValidateSplit, HeldOut []*benchmarks.Task
	// Backend provides the trials' sandboxes; Providers reach the models.
	Backend   Backend
	Providers ProviderFunc
	// Connections caps calls per model (max_connections) across every row;
	// nil gives the execution a registry of its own.
	Connections *llm.Connections
	// Args are the command-line arguments, recorded in config.toml.
	Args []string
	// ForceResume continues a run whose configuration changed.
	ForceResume bool
	Events      func(Event)
	// OnStart, when set, is told the directory as soon as it exists.
	OnStart func(dir string)
	// Barrier, when set, gives each row of a matrix its diffusion barrier
	// (a network experiment), called every BarrierInterval iterations. Its
	// rows then all run at once, since the labs of a barrier wait for each
	// other; -j still caps the trials in flight.
	Barrier         func(row RowSpec) BarrierFunc
	BarrierInterval int
	// RowDone, when set, is told how each row this process ran ended, so
	// that labs waiting for it at a barrier stop waiting.
	RowDone func(row RowSpec, status rundir.Status)
}

// RowOutcome is how one row of a plan ended.
type RowOutcome struct {
	Name   string        `json:"name"`
	Dir    string        `json:"dir"`
	Status rundir.Status `json:"status"`
	Result Result        `json:"-"`
	Error  string        `json:"error,omitempty"`
	// skipped: this invocation left the row alone (it had completed, or
	// another process holds it).
	skipped bool
}

// Outcome is how a whole run or matrix ended.
type Outcome struct {
	Dir    string        `json:"dir"`
	Status rundir.Status `json:"status"`
	Rows   []RowOutcome  `json:"rows"`
	// Resumed is true when this invocation continued an earlier one; the
	// trial counts are then of this invocation only.
	Resumed     bool  `json:"resumed"`
	Trials      int   `json:"trials"`
	Scored      int   `json:"scored"`
	EnvFailures int   `json:"env_failures"`
	Err         error `json:"-"`
}

// ExecutePlan carries out a plan with the backend and model providers it is
// given: it creates (or reopens, for --resume) the run or matrix directory
// and runs every row.
func ExecutePlan(ctx context.Context, o ExecOptions) (*Outcome, error) {
	p := o.Plan
	cfg := p.Config()
	switch {
	case cfg == nil:
		return nil, errors.New("execute: the plan has no configuration; build it with BuildRunPlan or BuildMatrixPlan")
	case o.Backend == nil:
		return nil, errors.New("execute: no sandbox backend")
	case o.Providers == nil:
		return nil, errors.New("execute: no model providers")
	}
	trials := newTrialRunner(o.Backend, cfg)
	ledger := newLedger(cfg)

	if events := o.Events; events != nil {
		o.Events = func(e Event) {
			e.Spend = ledger.Total()
			events(e)
		}
	}
	conns := o.Connections
	if conns == nil {
		conns = llm.NewConnections()
	}
	ex := &planExecution{opts: o, cfg: cfg, tasks: o.Tasks, pool: o.Pool, trials: trials, ledger: ledger, conns: conns}
	if p.Kind == rundir.KindMatrix {
		return ex.matrix(ctx)
	}
	return ex.single(ctx)
}

// newLedger is the ledger of a run or matrix under cfg's budget.
func newLedger(cfg *config.Config) *llm.Ledger {
	return llm.NewLedger(llm.Limits{MaxTokens: cfg.Budget.MaxTokens, MaxUSD: cfg.Budget.MaxUSD, WallClock: cfg.Budget.WallClock.Duration,
		ChargeSent: cfg.Budget.ChargeFailed != config.ChargeReported})
}

// planExecution is the state of one ExecutePlan call: the plan's rows share
// its trial runner, ledger and model connections.
type planExecution struct {
	opts   ExecOptions
	cfg    *config.Config
	tasks  []*benchmarks.Task
	pool   []*benchmarks.Task
	trials TrialRunner
	ledger *llm.Ledger
	conns  *llm.Connections
	// eventsMu hands events to opts.Events one at a time: rows and trials
	// run side by side, and a consumer should not have to lock.
	eventsMu sync.Mutex
}

// emit passes e to opts.Events, one event at a time.
func (ex *planExecution) emit(e Event) {
	if ex.opts.Events == nil {
		return
	}
	ex.eventsMu.Lock()
	defer ex.eventsMu.Unlock()
	ex.opts.Events(e)
}

func (ex *planExecution) manifest(row RowSpec, matrixID string) rundir.Manifest {
	p := ex.opts.Plan
	return rundir.Manifest{Kind: rundir.KindRun, Name: row.Name, MatrixID: matrixID, Tasks: p.Tasks, TaskSet: p.TaskSet,
		ValidateTasks: p.ValidateTasks, HeldOutTasks: p.HeldOutTasks,
		Iterations: p.Iterations, Condition: string(row.Condition), Policy: row.Policy.String(), Preset: row.Preset,
		Lab: row.Lab, Agent: p.Agent, Seed: row.Seed, Offline: p.Offline, Routing: string(row.Routing)}
}

func (ex *planExecution) meta() config.RunMeta {
	return config.RunMeta{Args: ex.opts.Args, Offline: ex.opts.Plan.Offline}
}

// prepareRow creates a row directory with its own copy of the skills.
func (ex *planExecution) prepareRow(base, dirName string, row RowSpec, matrixID string) (*rundir.Dir, error) {
	cfg, err := ex.rowConfig(row)
	if err != nil {
		return nil, err
	}
	cfg = cfg.Clone()
	cfg.Experiment.Seed = row.Seed
	d, err := rundir.Create(base, rundir.Spec{Manifest: ex.manifest(row, matrixID), DirName: dirName, Config: cfg, Meta: ex.meta(),
		Hold: true})
	if err != nil {
		return nil, err
	}
	dst := filepath.Join(d.Path, rundir.SkillsDir)
	src := ex.cfg.Experiment.SkillsDir
	if lab, err := ex.cfg.Lab(row.Lab); err == nil && lab.SkillsDir != "" {
		src = lab.SkillsDir // a lab of a network keeps its own tree
	}
	if src != "" {
		err = skills.CopyTree(src, dst)
	} else {
		err = skills.WriteDefaults(dst)
	}
	if err != nil {
		d.Unlock()
		return nil, fmt.Errorf("copy skills into %s: %w", d.Path, err)
	}
	return d, nil
}

func (ex *planExecution) single(ctx context.Context) (*Outcome, error) {
	p := ex.opts.Plan
	row := p.Rows[0]
	var d *rundir.Dir
	var err error
	if p.ResumeDir != "" {
		d, err = openLocked(p.ResumeDir)
		if err == nil {
			if err = ex.removeLeftovers(ctx, d, false); err != nil {
				d.Unlock()
			}
		}
	} else {
		d, err = ex.prepareRow(p.OutDir, "", row, "")
	}
	if err != nil {
		return nil, err
	}
	defer d.Unlock()
	if p.ResumeDir != "" {
		defer ex.removeLeftovers(context.WithoutCancel(ctx), d, true)
	}
	if ex.opts.OnStart != nil {
		ex.opts.OnStart(d.Path)
	}
	ro := ex.runRow(ctx, d, row, "", ex.ledger)
	out := &Outcome{Dir: d.Path, Status: ro.Status, Rows: []RowOutcome{ro}, Resumed: p.ResumeDir != "", Trials: ro.Result.Trials,
		Scored: ro.Result.Scored, EnvFailures: ro.Result.EnvFailures, Err: ro.Result.Err}
	return out, nil
}

// rowConfig is the configuration a row runs with: the plan's, with the
// row's own models and lab keys laid over it.
func (ex *planExecution) rowConfig(row RowSpec) (*config.Config, error) {
	return ex.opts.Plan.rowConfig(ex.cfg, row)
}

func (ex *planExecution) runRow(ctx context.Context, d *rundir.Dir, row RowSpec, matrixID string, ledger *llm.Ledger) (ro RowOutcome) {
	p := ex.opts.Plan
	ro = RowOutcome{Name: row.Name, Dir: d.Path}
	if ex.opts.RowDone != nil {
		defer func() { ex.opts.RowDone(row, ro.Status) }()
	}
	cfg, err := ex.rowConfig(row)
	if err != nil {
		ro.Status, ro.Error, ro.Result = rundir.StatusFailed, err.Error(), Result{Status: rundir.StatusFailed, Err: err}
		return ro
	}
	calls, err := OpenCallLog(d.Path, cfg)
	if err != nil {
		ro.Status, ro.Error, ro.Result = rundir.StatusFailed, err.Error(), Result{Status: rundir.StatusFailed, Err: err}
		return ro
	}
	defer calls.Close()
	clients, err := NewClients(cfg, ledger, row.Seed, ex.opts.Providers, calls, ex.conns)
	if err != nil {
		ro.Status, ro.Error, ro.Result = rundir.StatusFailed, err.Error(), Result{Status: rundir.StatusFailed, Err: err}
		return ro
	}
	newAgent, err := agentFactory(cfg, ex.opts.Plan.Agent, row.Lab, clients)
	if err != nil {
		ro.Status, ro.Error, ro.Result = rundir.StatusFailed, err.Error(), Result{Status: rundir.StatusFailed, Err: err}
		return ro
	}
	run := &Run{Spec: row, Config: cfg, Tasks: ex.tasks, Iterations: p.Iterations, AgentKind: p.Agent,
		Offline: p.Offline, MatrixID: matrixID, Dir: d, Concurrency: max(1, p.Concurrency),
		ForceResume: ex.opts.ForceResume, Meta: ex.meta(), ValidationPool: ex.pool, Trials: ex.trials, NewAgent: newAgent,
		Clients: clients, Calls: calls, Ledger: ledger, Events: ex.emit,
		ValidateSplit: ex.opts.ValidateSplit, HeldOut: ex.opts.HeldOut, EvalTrials: p.EvalTrials}
	if ex.opts.Barrier != nil {
		run.Barrier, run.BarrierInterval = ex.opts.Barrier(row), ex.opts.BarrierInterval
	}
	if matrixID != "" {
		run.MatrixLedger = ex.ledger
	}
	ro.Result = run.Iterate(ctx)
	ro.Status = ro.Result.Status
	if ro.Result.Err != nil {
		ro.Error = ro.Result.Err.Error()
	}
	return ro
}

// agentFactory returns the agents of one kind; a lab agent plays lab with
// the model clients.
func agentFactory(cfg *config.Config, kind, labID string, clients *Clients) (AgentFactory, error) {
	switch kind {
	case AgentOracle:
		return func(string) executor.Agent { return executor.OracleAgent{} }, nil
	case AgentNop:
		return func(string) executor.Agent { return executor.NopAgent{} }, nil
	case AgentLab, "":
		settings, err := cfg.Lab(labID)
		if err != nil {
			return nil, err
		}
		if settings.Agent != "" {
			return installedFactory(cfg, settings.Agent, settings, clients)
		}
		roles := []conditions.Role{conditions.RoleExecutor, conditions.RoleCode, conditions.RoleExplore, conditions.RolePlan}
		byRole := map[conditions.Role]*llm.Client{}
		window, maxOut := map[conditions.Role]int{}, map[conditions.Role]int{}
		for _, role := range roles {
			byRole[role] = clients.Get(role)
			if m, err := cfg.Model(role); err == nil {
				window[role] = m.ContextTokens
				maxOut[role] = m.MaxTokens
			}
		}
		students := studentAgents(cfg, settings, clients, byRole, window, maxOut)
		var diligence *float64
		if m, err := cfg.Model(conditions.RoleExecutor); err == nil {
			diligence = m.OfflineDiligence
		}
		return func(student string) executor.Agent {
			if a, ok := students[student]; ok {
				return a()
			}
			a := lab.NewAgent(settings, byRole)
			a.ContextTokens = window
			a.MaxOutputTokens = maxOut
			a.OfflineDiligence = diligence
			return a
		}, nil
	}
	if _, err := cfg.InstalledAgent(kind); err == nil {
		settings, err := cfg.Lab(labID)
		if err != nil {
			return nil, err
		}
		return installedFactory(cfg, kind, settings, clients)
	}
	return nil, fmt.Errorf("unknown agent %q: use lab, oracle, nop or an [agents.<name>] table", kind)
}

// installedFactory returns the installed agent of [agents.<name>], its
// calls made by the client of its model role.
func installedFactory(cfg *config.Config, name string, lab config.Lab, clients *Clients) (AgentFactory, error) {
	spec, err := cfg.InstalledAgent(name)
	if err != nil {
		return nil, err
	}
	if clients == nil {
		return nil, fmt.Errorf("agent %s is an installed agent and needs a run's model clients: try it with `harness run --agent %s`", name, name)
	}
	client := clients.Get(spec.AgentModel())
	if client == nil {
		return nil, fmt.Errorf("agent %s: no model client for [models.%s]", name, spec.AgentModel())
	}
	return func(string) executor.Agent {
		return &installed.Agent{AgentName: name, Spec: spec, Client: client, TaskSkillDirs: lab.TaskSkillDirs}
	}, nil
}

// matrix runs every row of a matrix plan, rows concurrently up to -j, all
// sharing one budget and one cap on live containers.
func (ex *planExecution) matrix(ctx context.Context) (*Outcome, error) {
	p := ex.opts.Plan
	if p.OnlyRow != "" || p.OnlySeed != nil {
		return ex.element(ctx)
	}
	md, refused, err := ex.openMatrix()
	if err != nil || refused != nil {
		return refused, err
	}
	defer md.Unlock()
	if ex.opts.OnStart != nil {
		ex.opts.OnStart(md.Path)
	}
	if p.ResumeDir != "" {
		if err := ex.removeLeftovers(ctx, md, false); err != nil {
			return nil, err
		}
		defer ex.removeLeftovers(context.WithoutCancel(ctx), md, true)
	}
	out := &Outcome{Dir: md.Path, Rows: ex.runRows(ctx, md), Resumed: p.ResumeDir != ""}
	out.tally()
	if untouched(out.Rows) {
		// A resume that ran no row leaves the matrix's record as it was.
		return out, nil
	}
	_ = md.UpdateManifest(func(m *rundir.Manifest) {
		m.Status = out.Status
		if out.Err != nil {
			m.Error = out.Err.Error()
		}
		m.MarkFinished()
	})
	return out, nil
}

// openMatrix creates the matrix directory, or reopens it for a resume. A
// refused resume returns its outcome and leaves the directory exactly as it
// was: no row is created, touched or run. The directory is returned locked;
// on an error or a refusal its lock is released.
func (ex *planExecution) openMatrix() (md *rundir.Dir, refused *Outcome, err error) {
	p := ex.opts.Plan
	defer func() {
		if md != nil && (err != nil || refused != nil) {
			md.Unlock()
		}
	}()
	if p.ResumeDir == "" {
		md, err = rundir.Create(p.OutDir, rundir.Spec{Manifest: rundir.Manifest{Kind: rundir.KindMatrix, Name: p.Name,
			Tasks: p.Tasks, TaskSet: p.TaskSet, ValidateTasks: p.ValidateTasks, HeldOutTasks: p.HeldOutTasks,
			Iterations: p.Iterations, Seed: firstSeed(p.Seeds), Seeds: p.Seeds,
			Agent: p.Agent, Offline: p.Offline, Rows: rowNames(p.Rows), Network: p.Network}, Config: ex.cfg, Meta: ex.meta(), Hold: true})
		if err == nil {
			err = md.WriteFileFunc(rundir.MatrixPlanFile, p.WriteMatrixFile)
		}
		return md, nil, err
	}
	if md, err = openLocked(p.ResumeDir); err != nil {
		return nil, nil, err
	}
	if err := ex.checkFingerprint(md); err != nil {
		return md, &Outcome{Dir: md.Path, Status: rundir.StatusFailed, Resumed: true, Err: err}, nil
	}
	if err := ex.restoreMatrixLedger(md, p.Rows); err != nil {
		return md, nil, err
	}
	if ex.opts.ForceResume {
		if err := md.RecordForcedResume(ex.cfg, ex.meta(), 0); err != nil {
			return md, nil, err
		}
	}
	// A resume may extend the matrix; a later one without --iterations
	// continues to the same end.
	if md.Manifest().Iterations != p.Iterations {
		err = md.UpdateManifest(func(m *rundir.Manifest) { m.Iterations = p.Iterations })
	}
	return md, nil, err
}

// runRows runs the matrix's rows, at most -j at once, and returns how each
// ended in plan order. Each row runs up to -j tasks at once too, so the
// rows share one budget of -j trials in flight; without it -j rows of -j
// tasks would queue for the backend's containers inside their trials.
func (ex *planExecution) runRows(ctx context.Context, md *rundir.Dir) []RowOutcome {
	p := ex.opts.Plan
	rows := make([]RowOutcome, len(p.Rows))
	sem := make(chan struct{}, max(1, p.Concurrency))
	if ex.opts.Barrier != nil {
		sem = make(chan struct{}, len(p.Rows))
	}
	ex.trials = capTrials(ex.trials, p.Concurrency)
	var wg sync.WaitGroup
	for i, row := range p.Rows {
		d, err := ex.openOrCreateRow(md, row)
		if errors.Is(err, rundir.ErrInUse) {
			rows[i] = ex.heldRow(md, row, err)
			continue
		}
		if err != nil {
			rows[i] = RowOutcome{Name: row.Name, Status: rundir.StatusFailed, Error: err.Error(),
				Result: Result{Status: rundir.StatusFailed, Err: err}}
			if ex.opts.RowDone != nil {
				ex.opts.RowDone(row, rundir.StatusFailed)
			}
			continue
		}
		// A completed row is skipped unless a larger --iterations extends it.
		if m := d.Manifest(); m.Status == rundir.StatusCompleted && m.CompletedIterations >= p.Iterations {
			d.Unlock()
			res := Result{Status: rundir.StatusCompleted}
			res.Iterations = completedIterations(d.Path)
			rows[i] = RowOutcome{Name: row.Name, Dir: d.Path, Status: rundir.StatusCompleted, Result: res}
			if err := verifyCompleted(d); err != nil {
				// Never "completed" over a hole; the row's own record stays.
				res.Status, res.Err = rundir.StatusFailed, err
				rows[i] = RowOutcome{Name: row.Name, Dir: d.Path, Status: rundir.StatusFailed, Error: err.Error(), Result: res}
			}
			rows[i].skipped = true
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer d.Unlock()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				rows[i] = RowOutcome{Name: row.Name, Dir: d.Path, Status: rundir.StatusInterrupted,
					Result: Result{Status: rundir.StatusInterrupted, Err: ErrInterrupted}}
				_ = d.UpdateManifest(func(m *rundir.Manifest) { m.Status = rundir.StatusInterrupted })
				return
			}
			defer func() { <-sem }()
			rows[i] = ex.runRow(ctx, d, row, md.ID, ex.ledger.Child(row.Name))
		}()
	}
	wg.Wait()
	return rows
}

// heldRow is the outcome of a row another process is running (err says
// which): it is skipped and said so, and counts as interrupted, so the
// matrix stays resumable rather than failed; the row's own record is that
// process's.
func (ex *planExecution) heldRow(md *rundir.Dir, row RowSpec, err error) RowOutcome {
	msg := fmt.Sprintf("skipped: another process is running it; resume the matrix again once it is done (%v)", err)
	ex.emit(Event{Kind: EventRowHeld, Row: row.Name, Message: msg})
	return RowOutcome{Name: row.Name, Dir: md.RowPath(row.Name), Status: rundir.StatusInterrupted, Error: msg,
		Result: Result{Status: rundir.StatusInterrupted}, skipped: true}
}

// cappedTrials runs at most cap(slots) trials of its inner runner at once.
type cappedTrials struct {
	inner TrialRunner
	slots chan struct{}
}

// capTrials bounds inner to n trials in flight (at least one).
func capTrials(inner TrialRunner, n int) TrialRunner {
	return &cappedTrials{inner: inner, slots: make(chan struct{}, max(1, n))}
}

// Run waits for a slot, then runs the trial; the wait is the trial's queue
// time. A trial cancelled while it waits still goes to the inner runner,
// which records it as it does any trial whose context is cancelled.
func (c *cappedTrials) Run(ctx context.Context, spec executor.TrialSpec) *executor.Trace {
	return c.RunOnTurn(ctx, spec, func() func() { return func() {} })
}

// RunOnTurn is Run that calls onTurn once the trial has its place (or its
// wait was cancelled), just before the inner runner starts it, and the
// function onTurn returns once the inner runner is done, before the place
// is given to another trial.
func (c *cappedTrials) RunOnTurn(ctx context.Context, spec executor.TrialSpec, onTurn func() (ended func())) *executor.Trace {
	start := time.Now()
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
	}
	spec.Queued += time.Since(start)
	defer onTurn()() // runs before the place is freed
	return c.inner.Run(ctx, spec)
}

// turnTaker is a TrialRunner that may hold a trial back before it starts
// (cappedTrials): it says when the trial's turn came and when it ended.
type turnTaker interface {
	RunOnTurn(ctx context.Context, spec executor.TrialSpec, onTurn func() (ended func())) *executor.Trace
}

// runOnTurn runs spec on trials, calling onTurn when the trial really
// starts, after any wait for its turn, and what it returns when the trial
// is over, so "trials in flight" never counts one that is still queued or
// one whose place another trial already has.
func runOnTurn(ctx context.Context, trials TrialRunner, spec executor.TrialSpec, onTurn func() (ended func())) *executor.Trace {
	if tt, ok := trials.(turnTaker); ok {
		return tt.RunOnTurn(ctx, spec, onTurn)
	}
	defer onTurn()()
	return trials.Run(ctx, spec)
}

// tally sums the rows' trials and takes the worst status and the first
// error as the matrix's.
func (out *Outcome) tally() {
	out.Status = rundir.StatusCompleted
	for _, ro := range out.Rows {
		out.Trials += ro.Result.Trials
		out.Scored += ro.Result.Scored
		out.EnvFailures += ro.Result.EnvFailures
		out.Status = worseStatus(out.Status, ro.Status)
		if out.Err == nil && ro.Result.Err != nil {
			out.Err = fmt.Errorf("row %s: %w", ro.Name, ro.Result.Err)
		}
	}
}

// checkFingerprint refuses, unless the resume is forced, to resume a matrix
// whose configuration differs from the one it started with: the matrix's
// own run.json and every checkpointed row must agree. It only reads.
func (ex *planExecution) checkFingerprint(md *rundir.Dir) error {
	if ex.opts.ForceResume {
		return nil
	}
	check := func(dir, was string, cfg *config.Config) error {
		now := config.Fingerprint(cfg)
		if was == "" || was == now {
			return nil
		}
		return fmt.Errorf("%w: %s started with fingerprint %s, now %s; resume with the original configuration, or force it (--force) knowing the rows will not be comparable",
			ErrConfigChanged, dir, short(was), short(now))
	}
	if err := check(md.Path, md.Manifest().ConfigFingerprint, ex.cfg); err != nil {
		return err
	}
	for _, row := range ex.opts.Plan.Rows {
		if st := peekState(md.RowPath(row.Name)); st != nil {
			// A row with its own models records their fingerprint.
			cfg, err := ex.rowConfig(row)
			if err != nil {
				return err
			}
			if err := check(md.RowPath(row.Name), st.ConfigFingerprint, cfg); err != nil {
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
func (ex *planExecution) restoreMatrixLedger(md *rundir.Dir, rows []RowSpec) error {
	var elapsed time.Duration
	for _, spec := range rows {
		row := spec.Name
		if _, err := os.Stat(filepath.Join(md.RowPath(row), rundir.ManifestFile)); err != nil {
			continue // not created, or a crash during creation: it starts afresh
		}
		d, err := md.OpenRow(row)
		if err != nil {
			continue // the row reports it when it is opened to run
		}
		// The row is not locked yet: a checkpoint rebuilt here is only
		// read; the row saves it when it is opened to run.
		cfg, err := ex.rowConfig(spec)
		if err != nil {
			return fmt.Errorf("row %s: %w", row, err)
		}
		st, err := loadCheckpoint(d, cfg, nil)
		if err != nil {
			return fmt.Errorf("row %s: %w", row, err)
		}
		if st == nil {
			continue
		}
		for caller, u := range st.Ledger.ByCaller {
			ex.ledger.Charge(row+"/"+caller, u)
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

func (ex *planExecution) openOrCreateRow(md *rundir.Dir, row RowSpec) (*rundir.Dir, error) {
	if _, err := os.Stat(filepath.Join(md.RowPath(row.Name), rundir.ManifestFile)); err == nil {
		d, err := md.OpenRow(row.Name)
		if err == nil {
			err = d.Lock()
		}
		return d, err
	}
	// A row directory without run.json is the remains of a crash during
	// creation: nothing in it was measured, so it is started afresh.
	if err := os.RemoveAll(md.RowPath(row.Name)); err != nil {
		return nil, err
	}
	return ex.prepareRow(md.Path, row.Name, row, md.ID)
}

// worseStatus orders outcomes: interrupted > failed > budget > completed.
func worseStatus(a, b rundir.Status) rundir.Status {
	rank := map[rundir.Status]int{rundir.StatusCompleted: 0, rundir.StatusBudgetExhausted: 1, rundir.StatusFailed: 2, rundir.StatusInterrupted: 3}
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
