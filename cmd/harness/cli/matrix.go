package cli

import (
	"cmp"
	"context"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/launch"
)

// MatrixOptions are the flags of `harness matrix`.
type MatrixOptions struct {
	ExperimentOptions
	Presets    []string // empty (and no MatrixFile): the six baseline rows
	MatrixFile string
	Seeds      []int64 // every row runs once per seed
	// Routing are the routing values every row without its own is crossed
	// with (--routing); empty: [experiment] routing.
	Routing []string
	// Launcher is where the rows run, local or slurm ("": [launcher]
	// kind); Detach returns once a Slurm array is submitted.
	Launcher string
	Detach   bool
	// Row runs only this row of a resumed matrix: what each element of a
	// Slurm job array runs.
	Row string
	// Scheduler and Executable come from the Factory (see there).
	Scheduler  launch.Runner
	Executable func() (string, error)
	// network lays the Slurm array out as a network's: one element per
	// seed (see slurmArray).
	network bool
}

// NewCmdMatrix builds `harness matrix`. runF replaces the real work in tests.
func NewCmdMatrix(f *Factory, runF func(context.Context, *MatrixOptions) error) *cobra.Command {
	o := &MatrixOptions{}
	var setOptional func() // set below, once the flags exist
	cmd := &cobra.Command{
		Use:   "matrix --tasks a,b | --task-set NAME [flags]",
		Short: "Run several rows (presets or a custom matrix) on shared tasks, seeds and budgets",
		Long: `Run a matrix: several rows, each a run of one condition and skill-update policy, on the
same tasks, seeds, models and budgets. Without --preset or --matrix the matrix holds
the six baseline rows:

  no_feedback                       no_feedback       none
  full_trace_same_task              full_traces       none
  static_mediator_same_task         static_mediator   none
  planner_only_skill_evolution      learned_mediator  planner
  mediator_only_protocol_evolution  learned_mediator  mediator
  full_coevolution                  learned_mediator  executor,planner,mediator

A custom matrix file (--matrix FILE) is TOML:

  name = "ablation"
  [[rows]]
  preset = "full_coevolution"
  [[rows]]
  name = "planner-hierarchical"
  condition = "learned_mediator"
  skill_updates = "planner"
  lab = "hierarchical"
  seeds = [1, 2, 3]

Every row is checked against the design rules before anything starts; a bad row
exits with code 2, names the row and the rule, and creates nothing.`,
		Example: `  harness matrix --task-set smoke --offline --iterations 2 --dry-run
  harness matrix --task-set skillsbench-10 --seeds 1,2,3 --launcher slurm
  harness matrix --tasks a,b --preset no_feedback,full_coevolution --seeds 1,2,3
  harness matrix --task-set skillsbench-10 --matrix ablation.toml --budget-usd 50`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			setOptional()
			o.IO, o.Execute, o.Resolver, o.Getenv, o.Preflight = f.IO, f.planRunner(), f.Resolver, f.Getenv, f.Preflight
			o.Scheduler, o.Executable = f.Scheduler, f.Executable
			o.Args = commandLine(cmd)
			if err := o.checkFlags(cmd.Flags(), []string{"preset", "matrix", "seeds", "routing"}); err != nil {
				return err
			}
			if err := o.checkLaunchFlags(); err != nil {
				return err
			}
			if len(o.Presets) > 0 && o.MatrixFile != "" {
				return usagef("--preset and --matrix cannot be combined: list the presets as rows of the matrix file")
			}
			if o.Seed != nil && len(o.Seeds) > 0 {
				return usagef("--seed and --seeds cannot be combined: use --seeds %d,...", *o.Seed)
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runMatrix(cmd.Context(), o)
		},
	}
	setOptional = experimentFlags(cmd, &o.ExperimentOptions)
	registerTaskCompletion(cmd, f, "tasks", "validate-tasks", "heldout-tasks")
	fl := cmd.Flags()
	fl.StringSliceVar(&o.Presets, "preset", nil, "rows from presets, comma separated: "+presetNames())
	fl.StringVar(&o.MatrixFile, "matrix", "", "custom matrix file (TOML, see above)")
	fl.Int64SliceVar(&o.Seeds, "seeds", nil, "run every row once per seed, comma separated (default: --seed)")
	fl.StringSliceVar(&o.Routing, "routing", nil, "routing between students, comma separated: every row without its own routing runs once per value (isolated, pooled, mediated; default: [experiment] routing)")
	_ = cmd.RegisterFlagCompletionFunc("routing", completeRoutings)
	fl.StringVar(&o.Launcher, "launcher", "", "where the rows run: local (this process) or slurm (one job-array element per row and seed; default from [launcher] kind)")
	fl.BoolVar(&o.Detach, "detach", false, "with --launcher slurm: return once the job array is submitted, printing its job id (with --json: the directory and the job)")
	fl.StringVar(&o.Row, "row", "", "with --resume: run only this row of the matrix (what each Slurm array element runs)")
	_ = cmd.RegisterFlagCompletionFunc("preset", completePresets)
	_ = cmd.MarkFlagFilename("matrix", "toml")
	return cmd
}

// runMatrix validates everything in the documented order, then prints the
// plan (--dry-run) or executes it.
func runMatrix(ctx context.Context, o *MatrixOptions) error {
	cfg, err := o.loadConfig()
	if err != nil {
		return err
	}
	popts := o.planOptions()
	var notes []string
	popts.Agent = harness.AgentLab
	if len(o.Seeds) > 0 {
		popts.Seeds = o.Seeds
	}
	for _, v := range o.Routing {
		r, err := conditions.ParseRouting(v)
		if err != nil {
			return UsageError(err)
		}
		popts.Routing = append(popts.Routing, r)
	}
	if o.Resume == "" {
		switch {
		case o.MatrixFile != "":
			mf, err := harness.LoadMatrixFile(o.MatrixFile)
			if err != nil {
				return UsageError(err)
			}
			popts.Rows, popts.Name = mf.Rows, mf.Name
			if popts.Name == "" {
				popts.Name = strings.TrimSuffix(filepath.Base(o.MatrixFile), filepath.Ext(o.MatrixFile))
			}
		case len(o.Presets) > 0:
			rows, err := harness.PresetRows(o.Presets)
			if err != nil {
				return UsageError(err)
			}
			popts.Rows, popts.Name = rows, "presets"
			if len(rows) == 1 {
				popts.Name = rows[0].Name
			}
		}
		if popts.Tasks, popts.TaskSet, notes, err = o.resolveTasks(ctx, cfg); err != nil {
			return err
		}
	}
	if o.Resume != "" && isNetwork(o.Resume) {
		// Its rows meet at the diffusion barrier, which only the network
		// command runs; resumed as a plain matrix they would not exchange.
		return usagef("%s is a network experiment: resume it with `harness network --resume %s`", o.Resume, o.Resume)
	}
	popts.OnlyRow = o.Row
	p, err := harness.BuildMatrixPlan(cfg, popts)
	if err != nil {
		return UsageError(err)
	}
	p.Notes = append(p.Notes, notes...)
	switch kind := cmp.Or(o.Launcher, cfg.Launcher.Kind, config.LauncherLocal); {
	case o.Row != "" || kind == config.LauncherLocal:
		if o.Detach {
			return usagef("--detach needs --launcher slurm: a local matrix runs in this process")
		}
	default:
		p.Notes = append(p.Notes, "each row runs as one element of a Slurm job array (launcher slurm; see docs/scale.md)")
		o.Execute = o.runOnSlurm
	}
	return o.finish(ctx, p)
}

// checkLaunchFlags validates --launcher, --detach and --row.
func (o *MatrixOptions) checkLaunchFlags() error {
	switch {
	case o.Launcher != "" && o.Launcher != config.LauncherLocal && o.Launcher != config.LauncherSlurm:
		return usagef("--launcher must be %s or %s (got %q)", config.LauncherLocal, config.LauncherSlurm, o.Launcher)
	case o.Row != "" && o.Resume == "":
		return usagef("--row runs one row of an existing matrix: give the matrix with --resume DIR")
	case o.Row != "" && o.Launcher == config.LauncherSlurm:
		return usagef("--row runs one row here; it cannot be combined with --launcher slurm")
	case o.Detach && o.Launcher == config.LauncherLocal:
		return usagef("--detach needs --launcher slurm: a local matrix runs in this process")
	}
	return nil
}
