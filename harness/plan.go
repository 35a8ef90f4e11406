package harness

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// Agents a trial can be run with.
const (
	AgentLab    = "lab"    // the LLM Executor of the lab
	AgentOracle = "oracle" // runs the task's reference solution
	AgentNop    = "nop"    // does nothing: the floor
)

// ModelDriven reports whether an agent kind calls a model, so that the
// Planner plans its trials: the lab's Executor and installed agents
// ([agents.<name>]) do, oracle and nop do not.
func ModelDriven(kind string) bool { return kind != AgentOracle && kind != AgentNop }

// Agents lists the agent kinds.
func Agents() []string { return []string{AgentLab, AgentOracle, AgentNop} }

// RowSpec is one row of a plan: one run of one condition, policy, lab and
// seed over the plan's tasks and iterations.
type RowSpec struct {
	Name      string               `json:"name"`
	Preset    string               `json:"preset,omitempty"`
	Condition conditions.Condition `json:"condition"`
	Policy    conditions.Policy    `json:"skill_update_policy"`
	Lab       string               `json:"lab"`
	Seed      int64                `json:"seed"`
	// ModelOverrides and LabOverrides are the row's own [models.<key>] and
	// [labs.<name>] keys (a matrix file's [rows.models.<key>] and
	// [rows.labs.<name>]), laid over the configuration for this row only:
	// rows of one matrix can so run different models over the same tasks
	// and seeds. Empty: the configuration as it is.
	ModelOverrides map[string]map[string]any `json:"model_overrides,omitempty"`
	LabOverrides   map[string]map[string]any `json:"lab_overrides,omitempty"`
	// Models names, for a row with overrides, each model it runs that
	// differs from the plan's (Plan.Models), by role or model key.
	Models map[conditions.Role]string `json:"models,omitempty"`
	// Routing is how students' evidence reaches each other's own skills.
	Routing conditions.Routing `json:"routing"`
}

// Label names the row in a run directory name: its preset, or its condition.
func (r RowSpec) Label() string {
	if r.Preset != "" {
		return r.Preset
	}
	return string(r.Condition)
}

// Plan is what a run or matrix will do, worked out before anything starts.
// --dry-run prints it; the executor follows it.
type Plan struct {
	Kind    rundir.Kind `json:"kind"` // run | matrix
	Name    string      `json:"name"`
	Rows    []RowSpec   `json:"rows"`
	Tasks   []string    `json:"tasks"`
	TaskSet string      `json:"task_set,omitempty"`
	// ValidateTasks are the validation split: the gate validates skill
	// candidates on them (instead of [validation] pool). HeldOutTasks are
	// only evaluated, EvalTrials times per task and skill checkpoint. Tasks
	// is then the evolve split.
	ValidateTasks []string `json:"validate_tasks,omitempty"`
	HeldOutTasks  []string `json:"held_out_tasks,omitempty"`
	EvalTrials    int      `json:"eval_trials,omitempty"`
	// EvaluationTrials counts the held-out trials of all rows (on top of
	// Trials); the estimates below include them.
	EvaluationTrials int `json:"evaluation_trials,omitempty"`
	// ValidationTrials is the expected number of validation trials of
	// skill candidates: every Advisor batch the proposals can fill reaching
	// the gate, at the gate's simulated mean trials per decision.
	ValidationTrials int `json:"validation_trials,omitempty"`
	// EstimatedFrom is the earlier run the estimates were measured from;
	// empty when they come from the request model.
	EstimatedFrom string `json:"estimated_from,omitempty"`
	// Power says how small a difference the design can detect.
	Power *PowerStatement `json:"power,omitempty"`
	// Gate states the validation gate's error rates at the planned
	// validation size, per decision and over a row's decisions.
	Gate       *GatePlan `json:"gate,omitempty"`
	Iterations int       `json:"iterations"`
	Seeds      []int64   `json:"seeds"`
	Agent      string    `json:"agent"`
	Offline    bool      `json:"offline"`
	// Concurrency is how many trials run at once (-j).
	Concurrency int `json:"concurrency"`
	// Trials counts rows x tasks x iterations; validation trials of skill
	// candidates come on top and are not counted.
	Trials int `json:"trials"`
	// RemainingTrials, when resuming, counts the trials still to run: the
	// iterations each run or row has not completed. The estimates below
	// then cover only that remaining work.
	RemainingTrials *int `json:"remaining_trials,omitempty"`
	// EstimatedTokens (input + output, all rows) and EstimatedCostUSD come
	// from the request model (plan_requests.go), or from an earlier run's
	// measured spend with --estimate-from; CostKnown is false when some
	// model in use has no price, so the cost leaves it out.
	EstimatedTokens       int64                     `json:"estimated_tokens"`
	EstimatedTokensByRole map[conditions.Role]int64 `json:"estimated_tokens_by_role,omitempty"`
	EstimatedCostUSD      float64                   `json:"estimated_cost_usd"`
	CostKnown             bool                      `json:"cost_known"`
	BudgetUSD             float64                   `json:"budget_usd,omitempty"`
	BudgetTokens          int64                     `json:"budget_tokens,omitempty"`
	// Models maps each role the plan uses to provider/model, and each
	// model only students name, by its [models.<key>] key.
	Models map[conditions.Role]string `json:"models"`
	// Students says, per lab of the rows, which student meets which task
	// (the assignment) and on which model; lab agents only.
	Students []LabPlan `json:"students,omitempty"`
	// Images are the task ids whose images are built, or reused when their
	// build context is unchanged.
	Images []string `json:"images"`
	// ResumeSkips says what a resume does not redo.
	ResumeSkips []string `json:"resume_skips,omitempty"`
	ResumeDir   string   `json:"resume_dir,omitempty"`
	// OnlyRow, when set, restricts a resumed matrix to this one row, run
	// beside other processes running the others (a Slurm array element).
	OnlyRow string `json:"only_row,omitempty"`
	// OnlySeed, when set, restricts a resumed matrix to the rows of this
	// seed, run side by side beside other processes running the other
	// seeds: a network's Slurm array element, whose labs meet at the
	// diffusion barrier and so must run in one process.
	OnlySeed *int64 `json:"only_seed,omitempty"`
	// OutDir is where the run or matrix directory is created (the resumed
	// directory itself when resuming).
	OutDir string `json:"out_dir"`
	// done holds, when resuming, each run's or row's completed iterations.
	done map[string]int
	// diffusion is PlanOptions.Diffusion.
	diffusion func(RowSpec) DiffusionCalls
	// cal, when set, is the earlier run the estimates are measured from.
	cal *calibration
	// config is what the plan runs with; see Config.
	config *config.Config
	// Network, for a network experiment, is its design and stability
	// check, recorded in the new directory's run.json.
	Network *rundir.NetworkRecord `json:"network,omitempty"`
	// Notes are caveats a reader of the plan should know.
	Notes []string `json:"notes,omitempty"`
	// Warnings are what makes a row measure something other than its name
	// says; a run prints them on stderr when it starts, a dry run lists them.
	Warnings []string `json:"warnings,omitempty"`
}

// PlanOptions are the choices a plan is built from. Zero values mean the
// configuration's value (iterations, seed, concurrency) or the documented
// default (agent lab, lab "default").
type PlanOptions struct {
	// Name of a matrix (default "baseline" for the six baseline rows).
	Name string
	// Tasks are task ids; TaskSet names the set they came from, if any. A
	// set whose ids are only known once its archive is read may leave Tasks
	// empty.
	Tasks   []string
	TaskSet string
	// ListTasks, when set, gives a new run's Tasks and TaskSet once its
	// design has passed the rules, so that a broken design is refused
	// before a task set is listed (which may download it). Its error is
	// returned as it is.
	ListTasks func() (tasks []string, set string, err error)
	// Condition, Policy, Preset and Lab describe the single row of a run.
	Condition conditions.Condition
	Policy    conditions.Policy
	Preset    string
	Lab       string
	// Routing is the run's routing (its first value), or the values a
	// matrix crosses its rows with; empty means [experiment] routing.
	Routing []conditions.Routing
	// Rows are a matrix's rows; empty means the six baseline presets.
	Rows []MatrixRow
	// Split divides the tasks into evolve, validate and held-out splits.
	Split SplitOptions
	// EstimateFrom is an earlier run or matrix whose measured spend per
	// trial the estimates use instead of the request model.
	EstimateFrom string
	Iterations   int
	Seeds        []int64 // a run uses the first
	Agent        string
	Offline      bool
	Concurrency  int
	// BudgetUSD and BudgetTokens, when set, replace [budget]'s limits (0:
	// unlimited).
	BudgetUSD    *float64
	BudgetTokens *int64
	OutDir       string
	// Resume is a run or matrix directory to continue. Its own design
	// (rows, tasks, seeds) is used; Iterations may extend it.
	Resume string
	// OnlyRow restricts a resumed matrix to one of its rows (see
	// Plan.OnlyRow).
	OnlyRow string
	// OnlySeed restricts a resumed matrix to the rows of one seed (see
	// Plan.OnlySeed).
	OnlySeed *int64
	// Diffusion, for a network, says what Mediator calls a row makes at
	// its diffusion barriers, which the estimate adds; nil: none.
	Diffusion func(RowSpec) DiffusionCalls
}

// BuildRunPlan plans one run. It checks everything a run needs from its
// inputs (the design rules, the lab, the agent, prices under a dollar
// budget) and touches nothing on disk except reading a resumed directory.
func BuildRunPlan(cfg *config.Config, o PlanOptions) (*Plan, error) {
	cfg = o.apply(cfg)
	p := &Plan{Kind: rundir.KindRun, OutDir: o.OutDir}
	var resumed *rundir.Manifest
	if o.Resume != "" {
		m, err := resumedRun(&o)
		if err != nil {
			return nil, err
		}
		p.ResumeDir, p.OutDir = o.Resume, o.Resume
		resumed = m
	}
	if o.Condition == "" {
		o.Condition = conditions.LearnedMediator
	}
	if o.Preset != "" {
		pr, err := conditions.LookupPreset(o.Preset)
		if err != nil {
			return nil, err
		}
		o.Condition, o.Policy = pr.Condition, pr.Policy
	}
	if err := conditions.Validate(o.Condition, o.Policy); err != nil {
		return nil, err
	}
	if o.ListTasks != nil && resumed == nil {
		var err error
		if o.Tasks, o.TaskSet, err = o.ListTasks(); err != nil {
			return nil, err
		}
	}
	if err := p.fillCommon(cfg, &o); err != nil {
		return nil, err
	}
	lab, err := labName(cfg, o.Lab)
	if err != nil {
		return nil, err
	}
	p.Name = o.Preset
	if p.Name == "" {
		p.Name = string(o.Condition)
	}
	routing, err := planRouting(cfg, o.Routing)
	if err != nil {
		return nil, err
	}
	if len(routing) > 1 {
		return nil, fmt.Errorf("--routing gives %d values; a run takes one (a matrix crosses its rows with several)", len(routing))
	}
	if err := checkRouting(cfg, lab, o.Condition, o.Policy, routing[0]); err != nil {
		return nil, err
	}
	p.Seeds = p.Seeds[:1]
	p.Rows = []RowSpec{{Name: p.Name, Preset: o.Preset, Condition: o.Condition, Policy: o.Policy, Lab: lab, Seed: p.Seeds[0], Routing: routing[0]}}
	if resumed != nil {
		p.ResumeSkips = resumeSkips("run", *resumed, p.Iterations)
		p.done = map[string]int{p.Name: resumed.CompletedIterations}
	}
	if err := p.calibrate(o.EstimateFrom); err != nil {
		return nil, err
	}
	if err := p.estimate(cfg); err != nil {
		return nil, err
	}
	p.noteValidationSource(cfg)
	p.settle(cfg)
	return p, nil
}

// resumedRun reads the run directory o.Resume names and takes its design
// (condition, policy, tasks, seed, split, agent) into o, so a resume runs
// what the run was started with.
func resumedRun(o *PlanOptions) (*rundir.Manifest, error) {
	d, err := rundir.Open(o.Resume)
	if err != nil {
		return nil, err
	}
	m := d.Manifest()
	if m.Kind != rundir.KindRun {
		return nil, fmt.Errorf("--resume %s: that is a %s directory; resume it with `harness %s --resume`", o.Resume, m.Kind, m.Kind)
	}
	cond, err := conditions.ParseCondition(m.Condition)
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %s: %w", o.Resume, rundir.ManifestFile, err)
	}
	pol, err := conditions.ParsePolicy(m.Policy)
	if err != nil {
		return nil, fmt.Errorf("--resume %s: %s: %w", o.Resume, rundir.ManifestFile, err)
	}
	o.Condition, o.Policy, o.Preset, o.Lab = cond, pol, m.Preset, m.Lab
	o.Routing = []conditions.Routing{conditions.Routing(m.Routing).Or()}
	o.Seeds = []int64{m.Seed}
	o.Tasks, o.TaskSet = m.Tasks, m.TaskSet
	o.Split = SplitOptions{Validate: m.ValidateTasks, HeldOut: m.HeldOutTasks}
	if o.Iterations == 0 {
		o.Iterations = m.Iterations
	}
	if m.Agent != "" {
		o.Agent = m.Agent
	}
	o.Offline = o.Offline || m.Offline
	return &m, nil
}

// BuildMatrixPlan plans a matrix: its rows expanded over their seeds, each
// row checked against the design rules and the configuration. It touches
// nothing on disk except reading a resumed directory.
func BuildMatrixPlan(cfg *config.Config, o PlanOptions) (*Plan, error) {
	cfg = o.apply(cfg)
	p := &Plan{Kind: rundir.KindMatrix, OutDir: o.OutDir}
	var resumed *rundir.Dir
	if o.Resume != "" {
		d, err := rundir.Open(o.Resume)
		if err != nil {
			return nil, err
		}
		m := d.Manifest()
		if m.Kind != rundir.KindMatrix {
			return nil, fmt.Errorf("--resume %s: that is a %s directory; resume it with `harness %s --resume`", o.Resume, m.Kind, m.Kind)
		}
		mf, err := LoadMatrixFile(d.Join(rundir.MatrixPlanFile))
		if err != nil {
			return nil, fmt.Errorf("--resume %s: %w", o.Resume, err)
		}
		// Each row of the plan file names its routing (isolated if none).
		o.Name, o.Rows, o.Routing = mf.Name, mf.Rows, []conditions.Routing{conditions.DefaultRouting}
		o.Tasks, o.TaskSet, o.Seeds = m.Tasks, m.TaskSet, m.Seeds
		o.Split = SplitOptions{Validate: m.ValidateTasks, HeldOut: m.HeldOutTasks}
		if o.Iterations == 0 {
			o.Iterations = m.Iterations
		}
		if m.Agent != "" {
			o.Agent = m.Agent
		}
		o.Offline = o.Offline || m.Offline
		p.ResumeDir, p.OutDir = o.Resume, o.Resume
		resumed = d
	}
	if err := p.fillCommon(cfg, &o); err != nil {
		return nil, err
	}
	rows := o.Rows
	p.Name = o.Name
	if len(rows) == 0 {
		rows = BaselineRows()
		if p.Name == "" {
			p.Name = "baseline"
		}
	}
	if p.Name == "" {
		p.Name = "matrix"
	}
	if err := rundir.CheckLabel(p.Name); err != nil {
		return nil, fmt.Errorf("matrix name: %w", err)
	}
	specs, err := routedRows(cfg, rows, o.Routing, p.Seeds)
	if err != nil {
		return nil, err
	}
	// The matrix's seeds, even for one row: its configuration, and so its
	// fingerprint, holds the first.
	p.Seeds = rowSeeds(specs)
	if specs, err = onlyRow(specs, o); err != nil {
		return nil, err
	}
	p.Rows, p.OnlyRow, p.OnlySeed, p.diffusion = specs, o.OnlyRow, o.OnlySeed, o.Diffusion
	if resumed != nil {
		p.done = map[string]int{}
		for _, r := range p.Rows {
			rd, err := resumed.OpenRow(r.Name)
			if err != nil {
				continue // not started: it runs whole
			}
			p.ResumeSkips = append(p.ResumeSkips, resumeSkips("row "+r.Name, rd.Manifest(), p.Iterations)...)
			p.done[r.Name] = rd.Manifest().CompletedIterations
		}
	}
	if err := p.calibrate(o.EstimateFrom); err != nil {
		return nil, err
	}
	if err := p.estimate(cfg); err != nil {
		return nil, err
	}
	p.noteValidationSource(cfg)
	p.settle(cfg)
	return p, nil
}

// apply returns a copy of cfg with the command-line choices of o in place
// of the configuration's own: --offline, the budgets and -j. This is the
// one place they are applied; the plan is checked, estimated and run with
// the copy.
func (o *PlanOptions) apply(cfg *config.Config) *config.Config {
	if cfg == nil {
		return nil
	}
	cfg = cfg.Clone()
	if o.Offline {
		cfg.SetOffline()
	}
	if o.BudgetUSD != nil {
		cfg.Budget.MaxUSD = *o.BudgetUSD
	}
	if o.BudgetTokens != nil {
		cfg.Budget.MaxTokens = *o.BudgetTokens
	}
	if o.Concurrency > 0 {
		cfg.ExecutorRuntime.Concurrency = o.Concurrency
	}
	return cfg
}

// settle records in cfg what the plan decided beyond the command line, so
// the run's config.toml says what was run, and keeps it as the plan's.
func (p *Plan) settle(cfg *config.Config) {
	p.warnEmptySharedNotes(cfg)
	// A resumed offline run stays offline whatever the configuration says.
	if p.Offline {
		cfg.SetOffline()
	}
	// -j bounds the trials running at once across all rows; max_containers
	// stays a hard cap on live containers above it.
	cfg.ExecutorRuntime.Concurrency = p.Concurrency
	cfg.ExecutorRuntime.MaxContainers = min(max(cfg.ExecutorRuntime.MaxContainers, 1), p.Concurrency)
	cfg.Experiment.Iterations = p.Iterations
	if len(p.Seeds) > 0 {
		cfg.Experiment.Seed = p.Seeds[0]
	}
	p.config = cfg
}

// warnEmptySharedNotes warns of shared_notes rows whose Planner would read
// nothing: with [experiment] shared_notes empty, such a row is no_feedback
// under another name. It warns rather than refuses, so a run begun
// without notes still resumes, and a row meant as a control still runs.
func (p *Plan) warnEmptySharedNotes(cfg *config.Config) {
	if !ModelDriven(p.Agent) || strings.TrimSpace(cfg.Experiment.SharedNotes) != "" {
		return
	}
	var rows []string
	for _, r := range p.Rows {
		if r.Condition == conditions.SharedNotes && !slices.Contains(rows, r.Name) {
			rows = append(rows, r.Name)
		}
	}
	if len(rows) == 0 {
		return
	}
	p.Warnings = append(p.Warnings, fmt.Sprintf("row %s uses condition shared_notes, but [experiment] shared_notes is empty: "+
		"its Planner reads no notes, so the row measures no_feedback under another name; write the notes in "+
		"[experiment] shared_notes, or leave the row out", strings.Join(rows, ", ")))
}

// Config returns a copy of the configuration the plan runs with: the one it
// was built from, with the command-line choices, the resumed run's offline
// switch, the container cap, the iterations and the first seed applied.
// It is nil for a plan not made by BuildRunPlan or BuildMatrixPlan.
func (p *Plan) Config() *config.Config { return p.config.Clone() }

// fillCommon settles what runs and matrices share: tasks, iterations,
// seeds, agent, concurrency, images and budgets.
func (p *Plan) fillCommon(cfg *config.Config, o *PlanOptions) error {
	if cfg == nil {
		return errors.New("plan: no configuration")
	}
	tasks, err := cleanTasks(o.Tasks)
	if err != nil {
		return err
	}
	if len(tasks) == 0 && o.TaskSet == "" {
		return errors.New("no tasks: name them with --tasks a,b or pick a set with --task-set NAME")
	}
	p.Tasks, p.TaskSet = tasks, o.TaskSet
	if err := p.fillSplits(cfg, o); err != nil {
		return err
	}
	tasks = p.allTasks()
	if len(tasks) == 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("the tasks of set %s are listed when the run starts; trial counts and estimates below cover none of them", o.TaskSet))
	}
	p.Iterations = o.Iterations
	if p.Iterations == 0 {
		p.Iterations = cfg.Experiment.Iterations
	}
	if p.Iterations < 1 {
		return fmt.Errorf("iterations must be at least 1 (got %d)", p.Iterations)
	}
	p.Seeds = slices.Clone(o.Seeds)
	if len(p.Seeds) == 0 {
		p.Seeds = []int64{cfg.Experiment.Seed}
	}
	if dup := firstDuplicate(p.Seeds); dup != nil {
		return fmt.Errorf("seed %d is listed twice", *dup)
	}
	p.Agent = o.Agent
	if p.Agent == "" {
		p.Agent = AgentLab
	}
	if !slices.Contains(Agents(), p.Agent) {
		if _, err := cfg.InstalledAgent(p.Agent); err != nil {
			return fmt.Errorf("unknown agent %q: choose one of %s, or an installed agent: %w", p.Agent, strings.Join(Agents(), ", "), err)
		}
	}
	if note := tournamentNote(cfg); note != "" {
		p.Notes = append(p.Notes, note)
	}
	p.Offline = o.Offline
	if p.Offline {
		p.Notes = append(p.Notes, "offline: every role is played by the offline provider; results test the machinery and are never evidence")
	}
	p.Concurrency = o.Concurrency
	if p.Concurrency == 0 {
		p.Concurrency = cfg.ExecutorRuntime.Concurrency
	}
	if p.Concurrency < 1 {
		return fmt.Errorf("concurrency (-j) must be at least 1 (got %d)", p.Concurrency)
	}
	if mc := cfg.ExecutorRuntime.MaxContainers; mc > 0 && p.Concurrency > mc {
		p.Notes = append(p.Notes, fmt.Sprintf("-j %d is more than [executor_runtime] max_containers = %d: at most %d trials run at once, the rest wait for a container; raise max_containers to run more",
			p.Concurrency, mc, mc))
	}
	p.Images = slices.Clone(tasks)
	slices.Sort(p.Images)
	p.BudgetUSD, p.BudgetTokens = cfg.Budget.MaxUSD, cfg.Budget.MaxTokens
	if p.BudgetUSD < 0 || math.IsNaN(p.BudgetUSD) || math.IsInf(p.BudgetUSD, 0) {
		return fmt.Errorf("the dollar budget must be a finite number of at least 0 (got %v)", p.BudgetUSD)
	}
	if p.BudgetTokens < 0 {
		return fmt.Errorf("the token budget must be at least 0 (got %d)", p.BudgetTokens)
	}
	return nil
}

// cleanTasks trims ids, drops empty ones and refuses duplicates.
func cleanTasks(in []string) ([]string, error) {
	var out []string
	for _, t := range in {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if slices.Contains(out, t) {
			return nil, fmt.Errorf("task %q is listed twice", t)
		}
		if strings.ContainsAny(t, `/\`) || t == "." || t == ".." {
			return nil, fmt.Errorf("task id %q is not a plain name: give the task's id, not a path", t)
		}
		out = append(out, t)
	}
	return out, nil
}

func firstDuplicate(xs []int64) *int64 {
	for i, x := range xs {
		if slices.Contains(xs[:i], x) {
			return &xs[i]
		}
	}
	return nil
}

func labName(cfg *config.Config, name string) (string, error) {
	if name == "" {
		name = config.DefaultLab
	}
	if _, err := cfg.Lab(name); err != nil {
		return "", err
	}
	return name, nil
}

// resumeSkips describes what resuming a run or row with manifest m skips.
func resumeSkips(what string, m rundir.Manifest, iterations int) []string {
	done := m.CompletedIterations
	switch {
	case m.Status == rundir.StatusCompleted && done >= iterations:
		return []string{fmt.Sprintf("%s: completed (%d iterations); skipped", what, done)}
	case done >= iterations:
		return []string{fmt.Sprintf("%s: all %d iterations done; only its status is settled", what, done)}
	case done > 0:
		return []string{fmt.Sprintf("%s: iterations 1-%d done; resumes at iteration %d", what, done, done+1)}
	}
	return nil
}

// estimate fills the trial count, the models in use, and the token and
// cost estimate, and refuses a dollar budget with an unpriced model. Each
// row is priced with its own models (its overrides laid over cfg).
func (p *Plan) estimate(cfg *config.Config) error {
	if err := p.fillStudents(cfg); err != nil {
		return err
	}
	rows, err := p.countTrials(cfg)
	if err != nil {
		return err
	}

	unpriced, err := p.price(cfg, rows)
	if err != nil {
		return err
	}
	if err := p.checkPrices(cfg); err != nil {
		return err
	}
	p.power(cfg)
	p.gateRates(cfg)
	if p.BudgetUSD > 0 && p.EstimatedCostUSD > p.BudgetUSD {
		p.Notes = append(p.Notes, fmt.Sprintf("the estimated cost ($%.2f) exceeds the dollar budget ($%g): the run stops cleanly when the budget is spent (exit code 4) and can be resumed", p.EstimatedCostUSD, p.BudgetUSD))
	}
	if p.BudgetTokens > 0 && p.EstimatedTokens > p.BudgetTokens {
		p.Notes = append(p.Notes, fmt.Sprintf("the estimated tokens (%d) exceed the token budget (%d): the run stops cleanly when the budget is spent (exit code 4) and can be resumed", p.EstimatedTokens, p.BudgetTokens))
	}
	if len(unpriced) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("no price configured for %s: the cost estimate leaves them out", strings.Join(unpriced, ", ")))
	}
	if p.cal != nil {
		p.Notes = append(p.Notes, fmt.Sprintf("estimates are measured from %s: its tokens per trial (%d trials), by row and role, validation trials, reviews and reflection included, priced with this configuration",
			p.cal.dir, p.cal.trials))
		return nil
	}
	agent := "the offline agent's calls"
	if !p.Offline {
		agent = "half of each agent's call cap"
	}
	p.Notes = append(p.Notes, fmt.Sprintf("estimates come from a model of what each role sends per call (its prompt, its skill, its inputs) and how many calls each trial, batch and reflection makes, with %s and %.0f%% of trials proposing an edit; --estimate-from an earlier run measures them instead",
		agent, 100*proposalRate))
	return nil
}

// price fills the models in use, the tokens by role and the cost from
// each row's estimate, priced with the row's own configuration; rows whose
// models differ from cfg's name theirs (RowSpec.Models). It returns the
// models that have no price.
func (p *Plan) price(cfg *config.Config, rows []rowEstimate) ([]string, error) {
	p.Models = map[conditions.Role]string{}
	p.EstimatedTokensByRole = map[conditions.Role]int64{}
	p.CostKnown = true
	var unpriced []string
	for i, rt := range rows {
		for _, role := range append(conditions.ModelRoles(), studentOnlyModels(rt.tokens)...) {
			t := rt.tokens[role]
			in, out := int64(t.in+0.5), int64(t.out+0.5)
			if in+out == 0 {
				continue
			}
			m, err := rt.cfg.ModelByKey(string(role))
			if err != nil {
				return nil, err
			}
			label := modelLabel(m, role)
			if base, err := cfg.ModelByKey(string(role)); rt.cfg != cfg && (err != nil || modelLabel(base, role) != label) {
				if p.Rows[i].Models == nil {
					p.Rows[i].Models = map[conditions.Role]string{}
				}
				p.Rows[i].Models[role] = label
			} else if _, ok := p.Models[role]; !ok {
				p.Models[role] = label
			}
			p.EstimatedTokensByRole[role] += in + out
			p.EstimatedTokens += in + out
			if m.Provider == config.ProviderOffline {
				continue // no money changes hands
			}
			if m.PriceInputPerMTok == nil || m.PriceOutputPerMTok == nil {
				p.CostKnown = false
				if !slices.Contains(unpriced, label) {
					unpriced = append(unpriced, label)
				}
				continue
			}
			p.EstimatedCostUSD += float64(in)**m.PriceInputPerMTok/1e6 + float64(out)**m.PriceOutputPerMTok/1e6
		}
	}
	// A role only overridden rows use still has a model in the plan's
	// list: the configuration's.
	for role := range p.EstimatedTokensByRole {
		if _, ok := p.Models[role]; !ok {
			if m, err := cfg.ModelByKey(string(role)); err == nil {
				p.Models[role] = modelLabel(m, role)
			}
		}
	}
	return unpriced, nil
}

// rowEstimate is one row's estimated tokens by model, and the
// configuration (the row's own) that prices them.
type rowEstimate struct {
	cfg    *config.Config
	tokens map[conditions.Role]roleTokens
}

// countTrials counts the plan's trials (each row's tasks times the trials
// its lab's assignment gives each task, times the iterations), the
// evaluation and expected validation trials, and estimates each row's
// tokens by model under the row's own configuration: by role, with each
// student's share of the Executor's work, and each own-skill student's
// validation, under the model it names.
func (p *Plan) countTrials(cfg *config.Config) ([]rowEstimate, error) {
	p.Trials = 0
	if p.done != nil {
		p.RemainingTrials = new(int)
	}
	var out []rowEstimate
	for _, r := range p.Rows {
		rowCfg, err := p.rowConfig(cfg, r)
		if err != nil {
			return nil, err
		}
		lab, err := rowCfg.Lab(r.Lab)
		if err != nil {
			return nil, err
		}
		done := p.done[r.Name]
		p.Trials += len(p.Tasks) * trialsPerTask(lab) * p.Iterations
		remaining := len(p.Tasks) * trialsPerTask(lab) * max(p.Iterations-done, 0)
		if p.RemainingTrials != nil {
			*p.RemainingTrials += remaining
		}
		// Held-out evaluation: the initial and final skills, EvalTrials
		// trials of each held-out task.
		eval := evalCheckpoints * len(p.HeldOutTasks) * p.EvalTrials
		p.EvaluationTrials += eval
		validation := p.expectedValidation(rowCfg, r, lab, max(p.Iterations-done, 0))
		for _, v := range validation {
			p.ValidationTrials += v
		}
		row := map[conditions.Role]roleTokens{}
		p.rowTokens(row, rowCfg, lab, r, done, remaining, eval)
		if p.Agent == AgentLab {
			shareStudents(row, lab)
		}
		if p.cal == nil {
			// Measured spend already holds its validation trials.
			p.validationTokens(row, rowCfg, lab, validation)
		}
		out = append(out, rowEstimate{cfg: rowCfg, tokens: row})
	}
	return out, nil
}

func pluralHas(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

func modelLabel(m config.Model, role conditions.Role) string {
	switch {
	case m.Provider == config.ProviderOffline:
		return m.RecordedName(role)
	case m.Provider == "":
		return m.Model
	case m.Model == "":
		return m.Provider
	}
	return m.Provider + "/" + m.Model
}

// rowTokens adds a row's estimated tokens for its remaining training
// trials and its eval evaluation trials: measured per trial when the plan
// is calibrated (validation included), else from the request model
// (rowRequests; validation comes from validationTokens).
func (p *Plan) rowTokens(tokens map[conditions.Role]roleTokens, cfg *config.Config, lab config.Lab, r RowSpec, done, remaining, eval int) {
	if p.cal != nil {
		// Measured spend per training trial already holds its share of
		// validation trials.
		per := p.cal.perTrial(r.Name)
		addTokens(tokens, per.all, float64(remaining))
		addTokens(tokens, per.work, float64(eval))
		return
	}
	m := requestModel{cfg: cfg, lab: lab, agent: p.Agent, offline: p.Offline, skill: p.skillTokens(cfg)}
	rowRequests(tokens, m, r, len(p.Tasks)*trialsPerTask(lab), max(p.Iterations-done, 0), done)
	if p.diffusion != nil {
		diffusionRequests(tokens, m, p.diffusion(r), max(p.Iterations-done, 0), done)
	}
	m.work(tokens, float64(eval), true)
}

// validationTokens adds the validation trials of each skill line of a
// row's lab (validation, as planLines lists them) under the agent that
// plays them: the lab's Executor for the lab's skill, and for an
// own-skill student's the student's model and executor mode, since its
// gate measures on the model that will use the skill.
func (p *Plan) validationTokens(into map[conditions.Role]roleTokens, cfg *config.Config, lab config.Lab, validation []int) {
	skill := p.skillTokens(cfg)
	for i, l := range planLines(lab) {
		n := float64(validation[i])
		if n == 0 {
			continue
		}
		settings := lab
		if l.student != nil {
			settings.ExecutorMode = l.student.ExecutorMode
		}
		m := requestModel{cfg: cfg, lab: settings, agent: p.Agent, offline: p.Offline, skill: skill}
		if l.student == nil || l.student.ModelKey == string(conditions.RoleExecutor) || p.Agent != AgentLab {
			m.work(into, n, false)
			continue
		}
		// Unplanned work is the Executor's family alone: all of it is
		// the student's model's.
		work := map[conditions.Role]roleTokens{}
		m.work(work, n, false)
		key := conditions.Role(l.student.ModelKey)
		for _, t := range work {
			a := into[key]
			into[key] = roleTokens{a.in + t.in, a.out + t.out}
		}
	}
}

// rowRequests adds what a row's remaining iterations send: per trial its
// plan and Executor loop, the Mediator's report or the compactor's summary
// as the condition asks, a proposal when executor updates get feedback;
// per expected batch an Advisor review and a Planner draft; per reflection
// one Reflector call for each meta-skill the policy lets evolve.
func rowRequests(tokens map[conditions.Role]roleTokens, m requestModel, r RowSpec, tasks, iterations, done int) {
	trials := float64(tasks * iterations)
	if trials == 0 {
		return
	}
	m.work(tokens, trials, true)
	if r.Condition.MediatorRuns() {
		m.add(tokens, kindReport, trials)
	}
	if r.Condition == conditions.FullTraces {
		m.add(tokens, kindSummary, trials)
	}
	if r.Policy.Executor && r.Condition.ProposalFeedback() != conditions.FeedbackNone {
		m.add(tokens, kindProposal, trials)
		batches := float64(expectedBatches(m.cfg, r, m.lab, tasks, iterations))
		m.add(tokens, kindAdvice, batches)
		m.add(tokens, kindDraft, batches)
		tournamentRequests(tokens, m, r, batches, iterations, done)
		m.add(tokens, kindRoute, routeCalls(m.lab, r, iterations))
	}
	if every := m.cfg.Experiment.CoevoInterval; every > 0 {
		// Reflections fall on every multiple of the interval, so those still
		// to come are the multiples above the iterations already done.
		reflections := float64(max((done+iterations)/every-done/every, 0))
		if r.Policy.Planner {
			m.add(tokens, kindReflect, reflections)
		}
		if r.Policy.Mediator && r.Condition == conditions.LearnedMediator {
			m.add(tokens, kindReflect, reflections)
		}
	}
}

// checkPrices refuses a dollar budget when a configured model has no price.
func (p *Plan) checkPrices(cfg *config.Config) error {
	if p.BudgetUSD <= 0 {
		return nil
	}
	// Every configured role is checked, not only those the estimate
	// expects to call: a budget must never meet a call it cannot price.
	var missing []string
	for _, role := range sortedModelKeys(cfg) {
		m, err := cfg.ModelByKey(string(role))
		if err != nil || m.Provider == config.ProviderOffline {
			continue
		}
		if m.PriceInputPerMTok == nil || m.PriceOutputPerMTok == nil {
			missing = append(missing, fmt.Sprintf("models.%s (%s)", role, m.Model))
		}
	}
	// A row's own models are called too.
	for _, r := range p.Rows {
		if len(r.ModelOverrides) == 0 {
			continue
		}
		rc, err := p.rowConfig(cfg, r)
		if err != nil {
			return err
		}
		for _, key := range slices.Sorted(maps.Keys(r.ModelOverrides)) {
			m, err := rc.ModelByKey(key)
			if err != nil || m.Provider == config.ProviderOffline {
				continue
			}
			if m.PriceInputPerMTok == nil || m.PriceOutputPerMTok == nil {
				missing = append(missing, fmt.Sprintf("row %s's models.%s (%s)", r.Name, key, m.Model))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("a dollar budget of $%g is set, but %s %s no price: add price_input_per_mtok and price_output_per_mtok to each in your --config-dir file (a row's in its [rows.models.<key>] table), or budget tokens with --budget-tokens instead",
			p.BudgetUSD, strings.Join(missing, ", "), pluralHas(len(missing)))
	}
	return nil
}

// RunDirSpecFor is the directory spec of one row of the plan (the run
// itself for a run plan). cfg, args and matrixID are what the row records.
func (p *Plan) RunDirSpecFor(r RowSpec, cfg *config.Config, args []string, matrixID string) rundir.Spec {
	spec := rundir.Spec{
		Manifest: rundir.Manifest{
			Kind: rundir.KindRun, Name: r.Name, MatrixID: matrixID,
			Tasks: slices.Clone(p.Tasks), TaskSet: p.TaskSet,
			ValidateTasks: slices.Clone(p.ValidateTasks), HeldOutTasks: slices.Clone(p.HeldOutTasks), Iterations: p.Iterations,
			Condition: string(r.Condition), Policy: r.Policy.String(), Preset: r.Preset,
			Lab: r.Lab, Agent: p.Agent, Seed: r.Seed, Offline: p.Offline, Routing: string(r.Routing),
		},
		Config: cfg,
		Meta:   config.RunMeta{Args: slices.Clone(args), Offline: p.Offline},
	}
	if matrixID != "" {
		spec.DirName = r.Name
	}
	return spec
}

// MatrixDirSpec is the directory spec of the matrix itself.
func (p *Plan) MatrixDirSpec(cfg *config.Config, args []string) rundir.Spec {
	rows := make([]string, len(p.Rows))
	for i, r := range p.Rows {
		rows[i] = r.Name
	}
	seed := int64(0)
	if len(p.Seeds) > 0 {
		seed = p.Seeds[0]
	}
	return rundir.Spec{
		Manifest: rundir.Manifest{
			Kind: rundir.KindMatrix, Name: p.Name, Rows: rows,
			Tasks: slices.Clone(p.Tasks), TaskSet: p.TaskSet,
			ValidateTasks: slices.Clone(p.ValidateTasks), HeldOutTasks: slices.Clone(p.HeldOutTasks), Iterations: p.Iterations,
			Agent: p.Agent, Seed: seed, Seeds: slices.Clone(p.Seeds), Offline: p.Offline,
		},
		Config: cfg,
		Meta:   config.RunMeta{Args: slices.Clone(args), Offline: p.Offline},
	}
}

// OutBase is the directory a new run or matrix directory goes into.
func (p *Plan) OutBase() string {
	if p.OutDir == "" {
		return filepath.FromSlash(rundir.DefaultRoot)
	}
	return p.OutDir
}
