package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// DefaultOut is where run and matrix directories go unless --out says.
const DefaultOut = rundir.DefaultRoot

// ValidatedPlan is everything a validated run or matrix hands to the executor.
type ValidatedPlan struct {
	Plan   *harness.Plan
	Config *config.Config // the plan's: --config-dir, --offline and budgets applied
	Args   []string       // the command line, recorded in config.toml
	// JSON asks for machine-readable progress on stdout; Verbose for more
	// log lines.
	JSON    bool
	Verbose bool
	// Force resumes a directory whose configuration changed.
	Force bool
	IO    IOStreams
	// Tune, when set, adjusts the orchestrator's options before the plan
	// runs (a network experiment adds its diffusion barrier).
	Tune func(*harness.ExecOptions)
}

// ExecuteFunc runs a plan. Its error decides the exit code (see ExitCode):
// return an *ExitError for codes 3 and 4.
type ExecuteFunc func(ctx context.Context, x *ValidatedPlan) error

// errNoExecution is returned when the build has no engine or models wired in.
var errNoExecution = errors.New("execution is not available in this build: the command line, configuration and design are valid (see the plan with --dry-run), but nothing can be run yet")

// ExperimentOptions are the flags `run` and `matrix` share.
type ExperimentOptions struct {
	IO      IOStreams
	Execute ExecuteFunc
	// Resolver finds tasks for the plan's preview.
	Resolver ResolverFunc
	// Getenv reads the environment, for the API keys a preview checks.
	Getenv func(string) string
	// Args is the command line as given, for the run's config.toml.
	Args []string
	// GitCommit reports the binary's commit (nil: rundir.GitCommit), for
	// the warning a build without one gets.
	GitCommit func() string
	// Preflight checks the model endpoints before anything is created;
	// NoPreflight (--no-preflight) skips it.
	Preflight   PreflightFunc
	NoPreflight bool

	Tasks   []string
	TaskSet string
	// Split, ValidateTasks and HeldOutTasks divide the tasks (see
	// harness.SplitOptions).
	Split         string
	ValidateTasks []string
	HeldOutTasks  []string
	// EstimateFrom is an earlier run or matrix to measure the estimates from.
	EstimateFrom string
	Iterations   int    // 0: from the configuration
	Seed         *int64 // nil: from the configuration
	ConfigDir    string
	Out          string
	Offline      bool
	Jobs         int // 0: from the configuration
	Resume       string
	Force        bool
	DryRun       bool
	JSON         bool
	// BudgetUSD and BudgetTokens override [budget] when set; 0 means unlimited.
	BudgetUSD    *float64
	BudgetTokens *int64
	Verbose      bool
	// tune is handed on as ValidatedPlan.Tune.
	tune func(*harness.ExecOptions)
}

// experimentFlags binds the shared flags; the returned function copies the
// flags whose zero value is meaningful (seed, budgets) into o once parsed.
func experimentFlags(cmd *cobra.Command, o *ExperimentOptions) func() {
	fl := cmd.Flags()
	var seed, budgetTokens int64
	var budgetUSD float64
	fl.StringSliceVar(&o.Tasks, "tasks", nil, "task ids to run, comma separated (overrides --task-set)")
	fl.StringVar(&o.TaskSet, "task-set", "", "named task set to run: "+taskSetNames())
	fl.StringVar(&o.Split, "split", "", "split the listed tasks in order into evolve:validate:held-out counts, e.g. 3:2:1")
	fl.StringSliceVar(&o.ValidateTasks, "validate-tasks", nil, "tasks the gate validates skill candidates on, never evolved on (comma separated)")
	fl.StringVar(&o.EstimateFrom, "estimate-from", "", "measure the token and cost estimates from this earlier run or matrix (a pilot) instead of the request model's estimate")
	fl.StringSliceVar(&o.HeldOutTasks, "heldout-tasks", nil, "held-out tasks: only the initial and final skills of each row are scored on them (comma separated)")
	fl.IntVar(&o.Iterations, "iterations", 0, "iterations per run (default from [experiment] iterations, 30)")
	fl.Int64Var(&seed, "seed", 0, "seed (default from [experiment] seed, 42)")
	fl.StringVar(&o.ConfigDir, "config-dir", "", "directory whose default.toml is read over the built-in configuration")
	fl.StringVar(&o.Out, "out", DefaultOut, "directory that receives the run directory")
	fl.BoolVar(&o.Offline, "offline", false, "use the offline model provider for every role (no network, no key; never evidence)")
	fl.IntVarP(&o.Jobs, "jobs", "j", 0, "trials running at once (default from [executor_runtime] concurrency)")
	fl.StringVar(&o.Resume, "resume", "", "continue the interrupted run or matrix in this directory")
	fl.BoolVar(&o.Force, "force", false, "with --resume: continue even though the configuration changed (rows will not be comparable)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "print the plan and touch nothing")
	fl.BoolVar(&o.JSON, "json", false, "machine-readable output (the plan with --dry-run)")
	fl.Float64Var(&budgetUSD, "budget-usd", 0, "stop cleanly after spending this many US dollars (0: unlimited)")
	fl.Int64Var(&budgetTokens, "budget-tokens", 0, "stop cleanly after this many model tokens (0: unlimited)")
	fl.BoolVarP(&o.Verbose, "verbose", "v", false, "more log lines")
	fl.BoolVar(&o.NoPreflight, "no-preflight", false, "do not check the model endpoints before the run starts")

	_ = cmd.MarkFlagDirname("config-dir")
	_ = cmd.MarkFlagDirname("out")
	_ = cmd.MarkFlagDirname("resume")
	_ = cmd.RegisterFlagCompletionFunc("task-set", completeTaskSets)
	return func() {
		if fl.Changed("seed") {
			o.Seed = &seed
		}
		if fl.Changed("budget-usd") {
			o.BudgetUSD = &budgetUSD
		}
		if fl.Changed("budget-tokens") {
			o.BudgetTokens = &budgetTokens
		}
	}
}

// checkFlags validates what can be judged from the flags alone.
func (o *ExperimentOptions) checkFlags(fl *pflag.FlagSet, designFlags []string) error {
	if o.Resume != "" {
		var clash []string
		for _, name := range append([]string{"tasks", "task-set", "seed", "split", "validate-tasks", "heldout-tasks"}, designFlags...) {
			if fl.Changed(name) {
				clash = append(clash, "--"+name)
			}
		}
		if len(clash) > 0 {
			return usagef("%s cannot be combined with --resume: a resumed run keeps its own tasks, seeds and design", strings.Join(clash, ", "))
		}
	} else if len(o.Tasks) == 0 && o.TaskSet == "" {
		return usagef("no tasks: name them with --tasks a,b or pick a set with --task-set NAME (for example --task-set %s)", benchmarks.SetSmoke)
	}
	if o.Force && o.Resume == "" {
		return usagef("--force only goes with --resume")
	}
	if fl.Changed("iterations") && o.Iterations < 1 {
		return usagef("--iterations must be at least 1 (got %d)", o.Iterations)
	}
	if fl.Changed("jobs") && o.Jobs < 1 {
		return usagef("-j/--jobs must be at least 1 (got %d)", o.Jobs)
	}
	if o.BudgetUSD != nil && (*o.BudgetUSD < 0 || math.IsNaN(*o.BudgetUSD) || math.IsInf(*o.BudgetUSD, 0)) {
		return usagef("--budget-usd must be a number of at least 0 (got %v)", *o.BudgetUSD)
	}
	if o.BudgetTokens != nil && *o.BudgetTokens < 0 {
		return usagef("--budget-tokens must be at least 0 (got %d)", *o.BudgetTokens)
	}
	if strings.TrimSpace(o.Out) == "" && o.Resume == "" {
		return usagef("--out must name a directory")
	}
	return nil
}

// loadConfig reads the configuration: a resumed directory's own unless
// --config-dir says otherwise. The command-line overrides are the plan's
// to apply (see planOptions). Every problem is a usage error: nothing has
// started.
func (o *ExperimentOptions) loadConfig() (*config.Config, error) {
	var cfg *config.Config
	var err error
	if o.Resume != "" && o.ConfigDir == "" {
		var d *rundir.Dir
		if d, err = rundir.Open(o.Resume); err != nil {
			return nil, UsageError(err)
		}
		cfg, err = d.ResolvedConfig()
	} else {
		cfg, err = config.Load(o.ConfigDir)
	}
	if err != nil {
		return nil, UsageError(fmt.Errorf("invalid configuration: %w", err))
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(o.IO.ErrOut, "warning: "+w)
	}
	return cfg, nil
}

// planOptions are the plan choices run and matrix share, the command-line
// overrides of the configuration among them.
func (o *ExperimentOptions) planOptions() harness.PlanOptions {
	return harness.PlanOptions{
		Split:        harness.SplitOptions{Spec: o.Split, Validate: o.ValidateTasks, HeldOut: o.HeldOutTasks},
		EstimateFrom: o.EstimateFrom,
		Iterations:   o.Iterations, Seeds: o.seeds(), Offline: o.Offline, Concurrency: o.Jobs,
		BudgetUSD: o.BudgetUSD, BudgetTokens: o.BudgetTokens, OutDir: o.Out, Resume: o.Resume,
	}
}

// resolveTasks returns the task ids: --tasks wins over --task-set. A set
// known only from where its tasks are (skillsbench-all) is listed with the
// resolver of cfg: the archive, task_dirs and the cache. A dry run never
// downloads the archive to list it; notes then say what its plan leaves out.
func (o *ExperimentOptions) resolveTasks(ctx context.Context, cfg *config.Config) (ids []string, set string, notes []string, err error) {
	if len(o.Tasks) > 0 {
		return o.Tasks, "", nil, nil
	}
	if o.TaskSet == "" {
		return nil, "", nil, nil
	}
	ts, err := benchmarks.LookupTaskSet(o.TaskSet)
	if err != nil {
		return nil, "", nil, UsageError(err)
	}
	if len(ts.IDs) > 0 {
		return ts.IDs, ts.Name, nil, nil
	}
	res, err := o.Resolver(cfg.ExecutorRuntime)
	if err != nil {
		return nil, "", nil, UsageError(fmt.Errorf("invalid configuration: %w", err))
	}
	// A dry run never downloads the archive, so what it holds is unknown:
	// the plan lists what is here and says what a run would fetch.
	unfetched := o.DryRun && res.ArchiveURL != "" && !res.ArchiveOnDisk()
	if unfetched {
		notes = append(notes, unfetchedNote(ts.Name, res))
		res.RemoteFetch = false
	}
	if ids, err = res.TaskSetIDs(ctx, ts.Name); err != nil {
		if ctx.Err() != nil {
			return nil, "", nil, ctx.Err()
		}
		if unfetched {
			// Nothing here yet: the plan is the archive's tasks, which
			// the note names.
			return nil, ts.Name, notes, nil
		}
		return nil, "", nil, UsageError(fmt.Errorf("list task set %s: %w", ts.Name, err))
	}
	return ids, ts.Name, notes, nil
}

// unfetchedNote says what a run of set would fetch from res's archive,
// which a dry run does not download, and how, given remote_fetch.
func unfetchedNote(set string, res *benchmarks.Resolver) string {
	pin := ""
	if res.ArchiveSHA256 != "" {
		pin = " (sha256 " + res.ArchiveSHA256 + ")"
	}
	if res.RemoteFetch {
		return fmt.Sprintf("task set %s: archive %s%s is not downloaded yet, so this plan covers only the tasks here; the run downloads it and also runs every task it holds", set, res.ArchiveURL, pin)
	}
	return fmt.Sprintf("task set %s: archive %s%s is not downloaded yet, so this plan covers only the tasks here; with remote_fetch = false a run does not download it: "+
		"set remote_fetch = true to have the run fetch it and run every task it holds, or fetch the tasks you want first with `harness tasks sync --tasks a,b`", set, res.ArchiveURL, pin)
}

// seeds is the --seed value as a list (empty: from the configuration).
func (o *ExperimentOptions) seeds() []int64 {
	if o.Seed == nil {
		return nil
	}
	return []int64{*o.Seed}
}

// finish prints a plan for --dry-run, or hands it to the executor.
func (o *ExperimentOptions) finish(ctx context.Context, p *harness.Plan) error {
	cfg := p.Config()
	if note := finishedNote(p); note != "" {
		if !o.DryRun {
			// Nothing to run: say so and how to extend it, start nothing.
			fmt.Fprintln(o.IO.ErrOut, note)
			return nil
		}
		p.Notes = append(p.Notes, note)
	}
	if o.DryRun {
		// The run itself would refuse missing API keys and missing tasks;
		// so does its preview, without writing or fetching anything.
		if callsModels(p) {
			if err := cfg.CheckAPIKeys(o.Getenv); err != nil {
				return UsageError(err)
			}
		}
		if _, err := planTasks(ctx, o.Resolver, p, cfg, true); err != nil {
			return UsageError(err)
		}
		if o.JSON {
			return writePlanJSON(o.IO.Out, p)
		}
		return writePlanText(o.IO.Out, p)
	}
	if o.Execute == nil {
		return &ExitError{Code: ExitFailed, Err: errNoExecution}
	}
	for _, w := range p.Warnings {
		fmt.Fprintln(o.IO.ErrOut, "warning: "+w)
	}
	if w := rundir.BuildWarning(o.gitCommit()); w != "" {
		fmt.Fprintln(o.IO.ErrOut, "warning: "+w)
	}
	if !o.NoPreflight {
		if err := preflight(ctx, o.Preflight, o.Getenv, p, cfg); err != nil {
			return err
		}
	}
	return o.Execute(ctx, &ValidatedPlan{Plan: p, Config: cfg, Args: o.Args, JSON: o.JSON, Verbose: o.Verbose, Force: o.Force, IO: o.IO, Tune: o.tune})
}

// finishedNote says, when p resumes a run or matrix that completed every
// iteration it plans, that there is nothing to run and how to extend it;
// "" otherwise.
func finishedNote(p *harness.Plan) string {
	if p.ResumeDir == "" || p.RemainingTrials == nil || *p.RemainingTrials > 0 {
		return ""
	}
	d, err := rundir.Open(p.ResumeDir)
	if err != nil {
		return ""
	}
	m := d.Manifest()
	if m.Status != rundir.StatusCompleted {
		return "" // its status is still to settle: the resume does that
	}
	n := max(p.Iterations, m.CompletedIterations)
	return fmt.Sprintf("%s is finished: all %d iterations ran, so resuming it runs nothing; to extend it, resume with more iterations, for example: harness %s --resume %s --iterations %d",
		p.ResumeDir, n, p.Kind, p.ResumeDir, 2*n)
}

// plannedTasks are a plan's tasks, resolved: the evolve split, the tasks
// the gate validates on (the validation split, else [validation] pool) and
// the held-out split.
type plannedTasks struct {
	tasks, pool, validate, heldOut []*benchmarks.Task
}

// planTasks finds the plan's tasks with one resolver: the one place run and
// matrix resolve them. A dry run only checks that they are here, fetching
// and writing nothing; a real run fetches what it must.
func planTasks(ctx context.Context, newResolver ResolverFunc, p *harness.Plan, cfg *config.Config, dryRun bool) (plannedTasks, error) {
	var out plannedTasks
	if dryRun && len(p.Tasks) == 0 {
		return out, nil
	}
	res, err := newResolver(cfg.ExecutorRuntime)
	if err != nil {
		return out, err
	}
	if dryRun {
		return out, res.CheckAvailable(slices.Concat(p.Tasks, p.ValidateTasks, p.HeldOutTasks))
	}
	if out.tasks, err = res.Resolve(ctx, p.Tasks); err != nil {
		return out, fmt.Errorf("resolve tasks: %w", err)
	}
	if len(p.ValidateTasks) > 0 {
		if out.validate, err = res.Resolve(ctx, p.ValidateTasks); err != nil {
			return out, fmt.Errorf("resolve the validation split: %w", err)
		}
	} else if ids := cfg.Validation.Pool; len(ids) > 0 {
		if out.pool, err = res.Resolve(ctx, ids); err != nil {
			return out, fmt.Errorf("resolve the validation pool: %w", err)
		}
	}
	if len(p.HeldOutTasks) > 0 {
		if out.heldOut, err = res.Resolve(ctx, p.HeldOutTasks); err != nil {
			return out, fmt.Errorf("resolve the held-out split: %w", err)
		}
	}
	return out, nil
}

// noArgs refuses positional arguments as bad usage.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments (got %q); tasks go in --tasks", cmd.CommandPath(), strings.Join(args, " "))
	}
	return nil
}

// commandLine is the invocation as typed, for the run's records.
func commandLine(cmd *cobra.Command) []string {
	args := []string{cmd.Name()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		args = append(args, "--"+f.Name+"="+flagValue(f))
	})
	return args
}

func flagValue(f *pflag.Flag) string {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return strings.Join(sv.GetSlice(), ",")
	}
	return f.Value.String()
}

// callsModels reports whether a plan calls an endpoint: not offline, and
// some role has calls planned (a no_feedback row of the oracle or nop
// agent has none).
func callsModels(p *harness.Plan) bool {
	return !p.Offline && len(p.Models) > 0
}

// gitCommit is the commit this binary was built from.
func (o *ExperimentOptions) gitCommit() string {
	if o.GitCommit != nil {
		return o.GitCommit()
	}
	return rundir.GitCommit()
}
