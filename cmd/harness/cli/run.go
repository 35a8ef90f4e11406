package cli

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness"
)

// RunOptions are the flags of `harness run`.
type RunOptions struct {
	ExperimentOptions
	Condition    string
	SkillUpdates string
	Lab          string // empty: the default lab
	Agent        string
	// Routing is --routing; empty: [experiment] routing.
	Routing string
}

// NewCmdRun builds `harness run`. runF replaces the real work in tests.
func NewCmdRun(f *Factory, runF func(context.Context, *RunOptions) error) *cobra.Command {
	o := &RunOptions{}
	var setOptional func() // set below, once the flags exist
	cmd := &cobra.Command{
		Use:   "run --tasks a,b | --task-set NAME [flags]",
		Short: "Run one condition and skill-update policy over tasks and iterations",
		Long: `Run one experiment row: one feedback condition, one skill-update policy, one lab and
one seed, over the given tasks for the given number of iterations. The run writes
one directory under --out.

Everything is checked before anything starts (configuration, design rules, task set,
prices under a dollar budget); a problem exits with code 2 and creates nothing.`,
		Example: `  harness run --task-set smoke --offline --iterations 2 --dry-run
  harness run --tasks fix-build-agentops --condition static_mediator --skill-updates none
  harness run --resume data/experiments/20260101T120000Z-42-learned_mediator`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			setOptional()
			o.IO, o.Execute, o.Resolver, o.Getenv, o.Preflight = f.IO, f.planRunner(), f.Resolver, f.Getenv, f.Preflight
			o.Args = commandLine(cmd)
			if err := o.checkFlags(cmd.Flags(), []string{"condition", "skill-updates", "lab", "agent", "routing"}); err != nil {
				return err
			}
			o.checkModelFreeAgent(cmd.Flags())
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runRun(cmd.Context(), o)
		},
	}
	setOptional = experimentFlags(cmd, &o.ExperimentOptions)
	registerTaskCompletion(cmd, f, "tasks", "validate-tasks", "heldout-tasks")
	fl := cmd.Flags()
	fl.StringVar(&o.Condition, "condition", string(conditions.LearnedMediator), "feedback condition: "+conditionNames())
	fl.StringVar(&o.SkillUpdates, "skill-updates", "all", "skills that may change: none, all, or a comma list of executor, planner, mediator")
	fl.StringVar(&o.Lab, "lab", "", "lab from the configuration (default \"default\")")
	fl.StringVar(&o.Agent, "agent", harness.AgentLab, "agent doing the tasks: lab, oracle (reference solution), nop, or an installed agent ([agents.<name>] or a preset such as claude-code, codex)")
	fl.StringVar(&o.Routing, "routing", "", "how students' evidence reaches each other's own executor skills: isolated, pooled or mediated (default: [experiment] routing)")
	_ = cmd.RegisterFlagCompletionFunc("routing", completeRoutings)
	_ = cmd.RegisterFlagCompletionFunc("condition", completeConditions)
	_ = cmd.RegisterFlagCompletionFunc("skill-updates", completePolicies)
	_ = cmd.RegisterFlagCompletionFunc("agent", completeInstalledAgents)
	_ = cmd.RegisterFlagCompletionFunc("lab", completeLabs)
	return cmd
}

// runRun validates everything in the documented order, then prints the plan
// (--dry-run) or executes it.
func runRun(ctx context.Context, o *RunOptions) error {
	cfg, err := o.loadConfig()
	if err != nil {
		return err
	}
	popts := o.planOptions()
	var notes []string
	var listErr error
	popts.Agent, popts.Lab = o.Agent, o.Lab
	if o.Resume == "" {
		cond, err := conditions.ParseCondition(o.Condition)
		if err != nil {
			return UsageError(err)
		}
		pol, err := conditions.ParsePolicy(o.SkillUpdates)
		if err != nil {
			return UsageError(err)
		}
		popts.Condition, popts.Policy = cond, pol
		if o.Routing != "" {
			r, err := conditions.ParseRouting(o.Routing)
			if err != nil {
				return UsageError(err)
			}
			popts.Routing = []conditions.Routing{r}
		}
		// The plan checks the design rules, then lists the tasks.
		popts.ListTasks = func() (ids []string, set string, err error) {
			ids, set, notes, listErr = o.resolveTasks(ctx, cfg)
			return ids, set, listErr
		}
	}
	p, err := harness.BuildRunPlan(cfg, popts)
	if listErr != nil {
		return listErr // already says how it failed: usage, or interrupted
	}
	if err != nil {
		return UsageError(err)
	}
	p.Notes = append(p.Notes, notes...)
	return o.finish(ctx, p)
}

// checkModelFreeAgent settles the design of a run whose agent calls no
// model (oracle, nop): unless --condition or --skill-updates ask for more,
// nothing learns from its trials, so it runs as no_feedback with no skill
// updates and plans no Planner, Mediator, Advisor or Reflector call and no
// validation trial. A condition asked for explicitly is kept, and its
// model calls are planned, priced and checked like any other.
func (o *RunOptions) checkModelFreeAgent(fl *pflag.FlagSet) {
	if o.Resume != "" || (o.Agent != harness.AgentOracle && o.Agent != harness.AgentNop) {
		return
	}
	if !fl.Changed("condition") {
		o.Condition = string(conditions.NoFeedback)
	}
	if !fl.Changed("skill-updates") && conditions.Condition(o.Condition) == conditions.NoFeedback {
		o.SkillUpdates = "none"
	}
}
