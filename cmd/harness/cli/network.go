package cli

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/launch"
	"github.com/mediated-coevo/harness/harness/network"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// NetworkOptions are the flags of `harness network`.
type NetworkOptions struct {
	ExperimentOptions
	Labs      []string
	Topology  string
	Diffusion []string
	Interval  int
	Seeds     []int64
	// Baseline is a no_feedback matrix whose seed-to-seed spread must be
	// under [network] stability_bound; SkipStabilityCheck starts without
	// one, and says so in run.json.
	Baseline           string
	SkipStabilityCheck bool
	// Launcher is where the labs run, local or slurm ("": [launcher]
	// kind); Detach returns once a Slurm array is submitted. Group runs
	// only one seed's labs and treatments of a resumed network (seed<S>):
	// what each element of the Slurm array runs.
	Launcher string
	Detach   bool
	Group    string
	// Scheduler and Executable come from the Factory (see there).
	Scheduler  launch.Runner
	Executable func() (string, error)
}

// networkDesignFlags are the flags a resumed network takes from its
// directory instead.
var networkDesignFlags = []string{"labs", "topology", "diffusion", "diffusion-interval", "seeds", "baseline", "skip-stability-check"}

// NewCmdNetwork builds `harness network`. runF replaces the real work in tests.
func NewCmdNetwork(f *Factory, runF func(context.Context, *NetworkOptions) error) *cobra.Command {
	o := &NetworkOptions{}
	var setOptional func()
	cmd := &cobra.Command{
		Use:   "network --labs a,b,c --tasks a,b | --task-set NAME [flags]",
		Short: "Run several labs side by side and measure what diffusing knowledge between them does",
		Long: `Run a network experiment: each lab ([labs.<name>], with its own models, students and skills
tree) evolves its executor skill on the same tasks and seeds, under each diffusion treatment:

  none       the labs evolve in isolation (the control)
  broadcast  every --diffusion-interval iterations, each lab's adopted skill changes and
             Mediator reports reach every neighbour unfiltered
  mediated   each lab's Mediator decides per neighbour what to send (a skill diff, a note,
             or nothing), within [network] token_budget

The topology says who may send to whom: isolated, ring, star (the first lab is the hub),
full, or edges such as "a->b,b->c". Whatever arrives enters the receiving lab as a
proposal for its own Advisor and validation gate, on its own models: diffusion never
bypasses the gate. Labs of one treatment and seed run side by side and meet at a barrier
after every interval; items travel through files in the experiment directory, and a
resumed network delivers each item exactly once. With --launcher slurm each seed runs as
one element of a Slurm job array, all its labs and treatments side by side.

A network refuses to start (exit 2) unless --baseline names a no_feedback matrix on the
same tasks whose seed-to-seed spread is under [network] stability_bound, or
--skip-stability-check is given (recorded in run.json). See docs/network.md.`,
		Example: `  harness network --labs a,b,c --topology ring --task-set smoke --seeds 1,2 --offline --skip-stability-check
  harness network --labs a,b,c --diffusion none,mediated --tasks t1,t2 --baseline data/experiments/...-baseline-matrix
  harness network --labs a,b,c --task-set smoke --seeds 1,2,3 --launcher slurm --skip-stability-check
  harness inspect DIR --diffusion --json
  harness inspect DIR --compare`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			setOptional()
			o.IO, o.Execute, o.Resolver, o.Getenv, o.Preflight = f.IO, f.planRunner(), f.Resolver, f.Getenv, f.Preflight
			o.Scheduler, o.Executable = f.Scheduler, f.Executable
			o.Args = commandLine(cmd)
			if err := o.checkFlags(cmd.Flags(), networkDesignFlags); err != nil {
				return err
			}
			if err := o.checkLaunchFlags(); err != nil {
				return err
			}
			if o.Seed != nil && len(o.Seeds) > 0 {
				return usagef("--seed and --seeds cannot be combined: use --seeds %d,...", *o.Seed)
			}
			if o.Baseline != "" && o.SkipStabilityCheck {
				return usagef("--baseline and --skip-stability-check cannot be combined: give one")
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runNetwork(cmd.Context(), o)
		},
	}
	setOptional = experimentFlags(cmd, &o.ExperimentOptions)
	registerTaskCompletion(cmd, f, "tasks", "validate-tasks", "heldout-tasks")
	fl := cmd.Flags()
	fl.StringSliceVar(&o.Labs, "labs", nil, "the labs, comma separated, each a [labs.<name>] table (default from [network] labs)")
	fl.StringVar(&o.Topology, "topology", "", `who may send to whom: isolated, ring, star, full, or edges "a->b,b->c" (default from [network] topology, ring)`)
	fl.StringSliceVar(&o.Diffusion, "diffusion", nil, "treatments, comma separated: none, broadcast, mediated (default from [network] diffusion, all three)")
	fl.IntVar(&o.Interval, "diffusion-interval", 0, "iterations between exchanges (default from [network] diffusion_interval, 1)")
	fl.Int64SliceVar(&o.Seeds, "seeds", nil, "run every lab and treatment once per seed, comma separated (default: --seed)")
	fl.StringVar(&o.Baseline, "baseline", "", "a no_feedback matrix directory whose seed-to-seed spread must be under [network] stability_bound")
	fl.BoolVar(&o.SkipStabilityCheck, "skip-stability-check", false, "start without a baseline stability check (recorded in run.json)")
	fl.StringVar(&o.Launcher, "launcher", "", "where the labs run: local (this process) or slurm (one job-array element per seed, running all its labs and treatments; default from [launcher] kind)")
	fl.BoolVar(&o.Detach, "detach", false, "with --launcher slurm: return once the job array is submitted, printing its job id (with --json: the directory and the job)")
	fl.StringVar(&o.Group, "group", "", "with --resume: run only this seed's labs and treatments, seed<S> (what each Slurm array element runs)")
	_ = cmd.MarkFlagDirname("baseline")
	return cmd
}

// checkLaunchFlags validates --launcher, --detach and --group.
func (o *NetworkOptions) checkLaunchFlags() error {
	switch {
	case o.Launcher != "" && o.Launcher != config.LauncherLocal && o.Launcher != config.LauncherSlurm:
		return usagef("--launcher must be %s or %s (got %q)", config.LauncherLocal, config.LauncherSlurm, o.Launcher)
	case o.Group != "" && o.Resume == "":
		return usagef("--group runs one seed of an existing network: give the network with --resume DIR")
	case o.Group != "" && o.Launcher == config.LauncherSlurm:
		return usagef("--group runs one seed here; it cannot be combined with --launcher slurm")
	case o.Detach && o.Launcher == config.LauncherLocal:
		return usagef("--detach needs --launcher slurm: a local network runs in this process")
	}
	if o.Group != "" {
		if _, err := parseSeedGroup(o.Group); err != nil {
			return UsageError(err)
		}
	}
	return nil
}

// parseSeedGroup reads --group seed<S>.
func parseSeedGroup(g string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(g, "seed"), 10, 64)
	if err != nil || !strings.HasPrefix(g, "seed") {
		return 0, fmt.Errorf("--group %q: give a seed of the network as seed<S>, such as seed1", g)
	}
	return n, nil
}

// settings are the network's design: a resumed directory's own, else
// [network] with the flags over it, validated.
func (o *NetworkOptions) settings(cfgNet network.Settings) (network.Settings, *rundir.NetworkRecord, error) {
	if o.Resume != "" {
		m, err := network.Design(o.Resume)
		if err != nil {
			return network.Settings{}, nil, UsageError(err)
		}
		n := m.Network
		return network.Settings{Labs: n.Labs, Topology: n.Topology, Diffusion: n.Diffusion, Interval: n.DiffusionInterval,
			TokenBudget: n.TokenBudget, StabilityBound: n.StabilityBound}, nil, nil
	}
	s := cfgNet
	if len(o.Labs) > 0 {
		s.Labs = o.Labs
	}
	if o.Topology != "" {
		s.Topology = o.Topology
	}
	if len(o.Diffusion) > 0 {
		s.Diffusion = o.Diffusion
	}
	if o.Interval != 0 {
		s.Interval = o.Interval
	}
	rec := &rundir.NetworkRecord{Labs: s.Labs, Topology: s.Topology, Diffusion: s.Diffusion, DiffusionInterval: s.Interval,
		TokenBudget: s.TokenBudget, StabilityBound: s.StabilityBound, SkipStabilityCheck: o.SkipStabilityCheck}
	return s, rec, nil
}

// checkStability is the baseline-stability gate: exit 2, naming the fix,
// unless the baseline is stable or the check is skipped.
func (o *NetworkOptions) checkStability(s network.Settings, rec *rundir.NetworkRecord) error {
	if o.SkipStabilityCheck {
		return nil
	}
	if o.Baseline == "" {
		return usagef("refusing to start: a network needs a stable baseline: pass --baseline DIR naming a no_feedback matrix on the same tasks over two or more seeds " +
			"(harness matrix --preset no_feedback --seeds 1,2,3), or --skip-stability-check to start without one (recorded in run.json)")
	}
	st, err := network.CheckStability(o.Baseline, s.StabilityBound)
	if err != nil {
		return UsageError(fmt.Errorf("refusing to start: %w", err))
	}
	rec.Baseline, rec.BaselineSpread = o.Baseline, &st.Spread
	return nil
}

// runNetwork validates the design and the stability gate, then plans the
// network as a matrix of one row per treatment, lab and seed, and runs it
// with the diffusion barrier.
func runNetwork(ctx context.Context, o *NetworkOptions) error {
	cfg, err := o.loadConfig()
	if err != nil {
		return err
	}
	s, rec, err := o.settings(network.FromConfig(cfg.Network))
	if err != nil {
		return err
	}
	if err := s.Validate(cfg); err != nil {
		return UsageError(err)
	}
	if rec != nil {
		if err := o.checkStability(s, rec); err != nil {
			return err
		}
	}
	popts := o.planOptions()
	popts.Agent = harness.AgentLab
	popts.Diffusion = s.DiffusionCalls
	if len(o.Seeds) > 0 {
		popts.Seeds = o.Seeds
	}
	if o.Group != "" {
		seed, _ := parseSeedGroup(o.Group) // checked with the flags
		popts.OnlySeed = &seed
	}
	var notes []string
	if o.Resume == "" {
		popts.Rows, popts.Name = s.Rows(), "network"
		if popts.Tasks, popts.TaskSet, notes, err = o.resolveTasks(ctx, cfg); err != nil {
			return err
		}
	}
	p, err := harness.BuildMatrixPlan(cfg, popts)
	if err != nil {
		return UsageError(err)
	}
	p.Network = rec
	p.Notes = append(p.Notes, notes...)
	p.Notes = append(p.Notes, networkNote(s))
	switch kind := cmp.Or(o.Launcher, cfg.Launcher.Kind, config.LauncherLocal); {
	case o.Group != "" || kind == config.LauncherLocal:
		if o.Detach {
			return usagef("--detach needs --launcher slurm: a local network runs in this process")
		}
	default:
		p.Notes = append(p.Notes, "each seed runs as one element of a Slurm job array, all its labs and treatments side by side (launcher slurm; see docs/scale.md)")
		submit := &MatrixOptions{ExperimentOptions: o.ExperimentOptions, Detach: o.Detach, Scheduler: o.Scheduler, Executable: o.Executable, network: true}
		o.Execute = submit.runOnSlurm
		return o.finish(ctx, p)
	}
	x, err := network.NewExchange("", s)
	if err != nil {
		return UsageError(err)
	}
	o.tune = func(opts *harness.ExecOptions) {
		started := opts.OnStart
		opts.OnStart = func(dir string) {
			x.SetDir(dir)
			if started != nil {
				started(dir)
			}
		}
		opts.Barrier, opts.BarrierInterval, opts.RowDone = x.Barrier, s.Interval, x.Stopped
	}
	return o.finish(ctx, p)
}

// networkNote says, in the plan, who may send to whom.
func networkNote(s network.Settings) string {
	nb, _ := network.Neighbours(s.Labs, s.Topology)
	var edges []string
	for _, from := range s.Labs {
		for _, to := range nb[from] {
			edges = append(edges, from+"->"+to)
		}
	}
	if len(edges) == 0 {
		edges = []string{"no edges"}
	}
	return fmt.Sprintf("network of labs %s, topology %s (%s); diffusion %s every %d iteration(s); each lab runs %s with executor-skill updates",
		strings.Join(s.Labs, ", "), s.Topology, strings.Join(edges, ", "), strings.Join(s.Diffusion, ", "), s.Interval, network.RowCondition)
}
