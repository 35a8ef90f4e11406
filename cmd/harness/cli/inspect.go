package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// InspectOptions are the arguments of `harness inspect`.
type InspectOptions struct {
	IO       IOStreams
	Dir      string // empty: list the directories under Root
	Root     string
	JSON     bool
	Compare  bool
	Baseline string
	// K fixes the k of pass@k and pass^k; 0 lets Compare choose it.
	K int
	// LastN is the N of the last-N estimand; Effect the difference worth
	// detecting in the power statement (0: their defaults).
	LastN    int
	Effect   float64
	Follow   bool
	Interval time.Duration
	// Calls lists the run's model calls, picked by CallFilter.
	Calls      bool
	CallFilter inspect.CallFilter
	// Tasks prints the per-task table (task x row) of a matrix or run.
	Tasks bool
	// By is what --compare compares: rows (default) or student.
	By string
	// Tournament shows the run's tournaments: candidates, ratings and how
	// the ratings foretold the validated gains.
	Tournament bool
	// Routing lists the items routed between students.
	Routing bool
	// Diffusion lists the items a network experiment's labs exchanged.
	Diffusion bool
}

// MatrixView is what `harness inspect MATRIX` prints without --compare.
type MatrixView struct {
	Matrix inspect.DirSummary   `json:"matrix"`
	Rows   []inspect.DirSummary `json:"rows"`
}

// NewCmdInspect builds `harness inspect [RUN_OR_MATRIX_DIR]`.
func NewCmdInspect(f *Factory, runF func(context.Context, *InspectOptions) error) *cobra.Command {
	o := &InspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect [RUN_OR_MATRIX_DIR]",
		Short: "Read run and matrix directories: summaries, comparisons, live progress",
		Long: `Without an argument, list the run and matrix directories under --root (status, rows,
tasks, iterations, mean reward, skill updates, spend).

With a run directory: per-iteration rewards, the skill-update timeline, rejected
proposals, failures by status, tokens and cost by role.

With a matrix directory: its rows; with --compare, per row and per estimand (whole-curve
mean, mean of the last --last iterations, held-out mean of the final checkpoint) the macro
mean reward with a t interval over tasks (seeds a level above tasks), the interquartile
mean, the paired per-task difference to the no_feedback row (--baseline picks another)
with its interval, a permutation p-value, Holm's correction across rows and the
probability of improvement; pass@k and pass^k over the tasks every row ran at least k
times (--k fixes k); the minimum detectable difference, with a warning when it exceeds
--effect; environment failures and unscored trials counted apart, and a warning when one
task dominates.

--calls lists a run's model calls, one line each (time, caller, role, task, iteration,
model, tokens, latency, retries, fallback or error); --role, --task and --iteration pick
some, and with --json the records themselves are printed, prompts and answers included.

--tasks prints the per-task table of a matrix (or a run): one line per task and row, with
the mean reward, the trials, and the trials without a reward by status.

--tournament shows a run's candidate tournaments ([tournament] n_candidates > 1): each
candidate with its operator, parents, Elo rating, rank and validated gain, the rank
correlation between rating and gain with a 95% interval (or why it cannot be estimated),
and the validation trials spent and saved against validating every candidate.
--routing lists the items routed between students under pooled or mediated routing, one
line each: iteration, from, to, task, the source trial, form, whether a batch holding it
was adopted, and the reason. With --json, a list of objects (empty under isolated).

--follow tails a live run or matrix from its files until it stops. --json everywhere.`,
		Example: `  harness inspect
  harness inspect data/experiments/20261121T050502Z-42-baseline-matrix --compare
  harness inspect data/experiments/20261121T050502Z-42-baseline-matrix --tasks
  harness inspect data/experiments/20261121T050502Z-42-learned_mediator --json
  harness inspect data/experiments/20261121T050502Z-42-learned_mediator --follow
  harness inspect data/experiments/20261121T050502Z-42-learned_mediator --tournament --json
  harness inspect data/experiments/20261121T050502Z-42-learned_mediator --calls --role mediator --iteration 2`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s takes at most one directory (got %d arguments)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IO = f.IO
			if len(args) == 1 {
				o.Dir = args[0]
			}
			if err := checkInspectFlags(cmd, o); err != nil {
				return err
			}
			if !cmd.Flags().Changed("effect") {
				o.Effect = 0 // the matrix's own [stats] effect_of_interest, else the default
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runInspect(cmd.Context(), o)
		},
	}
	addInspectFlags(cmd, o)
	registerTaskCompletion(cmd, f, "task")
	return cmd
}

// checkInspectFlags refuses the flags that need a mode or a directory they
// were not given, and values out of range.
func checkInspectFlags(cmd *cobra.Command, o *InspectOptions) error {
	if o.Dir == "" && (o.Compare || o.Follow) {
		return usagef("--compare and --follow need a directory")
	}
	if o.Compare && o.Follow {
		return usagef("--compare and --follow do not combine")
	}
	if o.Routing && (o.Dir == "" || o.Compare || o.Follow || o.Calls || o.Tasks) {
		return usagef("--routing needs a run or matrix directory and does not combine with --compare, --follow, --calls or --tasks")
	}
	if o.Tasks && (o.Dir == "" || o.Compare || o.Follow || o.Calls) {
		return usagef("--tasks needs a run or matrix directory and does not combine with --compare, --follow or --calls")
	}
	if o.Tournament && (o.Dir == "" || o.Compare || o.Follow || o.Calls || o.Tasks) {
		return usagef("--tournament needs a run directory and does not combine with --compare, --follow, --calls or --tasks")
	}
	if o.Diffusion && (o.Dir == "" || o.Compare || o.Follow || o.Calls || o.Tasks) {
		return usagef("--diffusion needs a network experiment directory and does not combine with --compare, --follow, --calls or --tasks")
	}
	if o.Baseline != "" && !o.Compare {
		return usagef("--baseline goes with --compare")
	}
	if err := checkCallFlags(cmd, o); err != nil {
		return err
	}
	fl := cmd.Flags()
	if fl.Changed("by") && (!o.Compare || (o.By != inspect.ByRow && o.By != inspect.ByStudent)) {
		return usagef("--by goes with --compare and is %s or %s (got %q)", inspect.ByRow, inspect.ByStudent, o.By)
	}
	if fl.Changed("k") && (!o.Compare || o.K < 1) {
		return usagef("--k goes with --compare and needs a whole number of at least 1 (got %d)", o.K)
	}
	if fl.Changed("last") && (!o.Compare || o.LastN < 1) {
		return usagef("--last goes with --compare and needs a whole number of at least 1 (got %d)", o.LastN)
	}
	if fl.Changed("effect") && (!o.Compare || !(o.Effect > 0 && o.Effect <= 1)) {
		return usagef("--effect goes with --compare and needs a difference in mean reward in (0, 1] (got %v)", o.Effect)
	}
	return nil
}

func addInspectFlags(cmd *cobra.Command, o *InspectOptions) {
	fl := cmd.Flags()
	fl.StringVar(&o.Root, "root", inspect.DefaultRoot, "where to look for directories when none is given")
	fl.BoolVar(&o.JSON, "json", false, "machine-readable output")
	fl.BoolVar(&o.Compare, "compare", false, "compare the rows of a matrix")
	fl.StringVar(&o.By, "by", inspect.ByRow, "with --compare: compare rows, or each row's students apart (student)")
	fl.StringVar(&o.Baseline, "baseline", "", "with --compare: the row to compare against (default: no_feedback)")
	fl.IntVar(&o.K, "k", 0, "with --compare: the k of pass@k and pass^k (default: the fewest trials of any task, at most 5)")
	fl.IntVar(&o.LastN, "last", inspect.DefaultLastN, "with --compare: the N of the last-N-iterations estimand")
	fl.Float64Var(&o.Effect, "effect", inspect.DefaultEffectOfInterest, "with --compare: the difference worth detecting; the power statement warns when the matrix cannot")
	fl.BoolVar(&o.Follow, "follow", false, "tail a live run or matrix until it stops")
	fl.DurationVar(&o.Interval, "interval", inspect.DefaultFollowInterval, "with --follow: how often to look for news")
	fl.BoolVar(&o.Tasks, "tasks", false, "print the per-task table (task x row: mean reward, trials, failures by status)")
	fl.BoolVar(&o.Routing, "routing", false, "list the items routed between students: from, to, iteration, task, trial, form, reason, adopted")
	fl.BoolVar(&o.Calls, "calls", false, "list the run's model calls")
	fl.BoolVar(&o.Tournament, "tournament", false, "show the run's candidate tournaments: operators, parents, ratings, the rating-gain correlation and the validation trials saved")
	fl.BoolVar(&o.Diffusion, "diffusion", false, "list the items a network experiment's labs exchanged, with their provenance")
	fl.StringVar(&o.CallFilter.Role, "role", "", "with --calls: only this role's calls")
	fl.StringVar(&o.CallFilter.Task, "task", "", "with --calls: only calls for this task")
	fl.IntVar(&o.CallFilter.Iteration, "iteration", 0, "with --calls: only calls in this iteration")
	_ = cmd.MarkFlagDirname("root")
}

// checkCallFlags refuses --calls with a mode it does not combine with, and
// the filters without --calls.
func checkCallFlags(cmd *cobra.Command, o *InspectOptions) error {
	fl := cmd.Flags()
	if !o.Calls {
		for _, name := range []string{"role", "task", "iteration"} {
			if fl.Changed(name) {
				return usagef("--%s goes with --calls", name)
			}
		}
		return nil
	}
	switch {
	case o.Dir == "":
		return usagef("--calls needs a run directory")
	case o.Compare || o.Follow:
		return usagef("--calls does not combine with --compare or --follow")
	case fl.Changed("iteration") && o.CallFilter.Iteration < 1:
		return usagef("--iteration needs a whole number of at least 1 (got %d)", o.CallFilter.Iteration)
	}
	return nil
}

func runCalls(o *InspectOptions) error {
	calls, err := inspect.Calls(o.Dir, o.CallFilter)
	if err != nil {
		return err
	}
	if o.JSON {
		return inspect.WriteJSON(o.IO.Out, calls)
	}
	return inspect.WriteCallsText(o.IO.Out, calls, isTerminal(o.IO.Out))
}

func runTournament(o *InspectOptions) error {
	rep, err := inspect.Tournament(o.Dir)
	if err != nil {
		return err
	}
	if o.JSON {
		return inspect.WriteJSON(o.IO.Out, rep)
	}
	return rep.WriteText(o.IO.Out, isTerminal(o.IO.Out))
}

func runRouting(o *InspectOptions) error {
	items, err := inspect.Routing(o.Dir)
	if err != nil {
		return err
	}
	if o.JSON {
		return inspect.WriteJSON(o.IO.Out, items)
	}
	return inspect.WriteRoutingText(o.IO.Out, items)
}

func runTasks(o *InspectOptions) error {
	grid, err := inspect.Tasks(o.Dir)
	if err != nil {
		return err
	}
	if o.JSON {
		return inspect.WriteJSON(o.IO.Out, grid)
	}
	return grid.WriteText(o.IO.Out, isTerminal(o.IO.Out))
}

func runInspect(ctx context.Context, o *InspectOptions) error {
	if o.Dir == "" {
		return runList(o)
	}
	if st, err := os.Stat(o.Dir); errors.Is(err, fs.ErrNotExist) {
		return usagef("%s does not exist; `harness inspect` with no directory lists the runs under %s", o.Dir, o.Root)
	} else if err != nil || !st.IsDir() {
		return usagef("%s is not a run or matrix directory", o.Dir)
	}
	if o.Follow {
		// A run just starting may not have its run.json yet: Follow waits.
		err := inspect.Follow(ctx, o.Dir, o.IO.Out, o.Interval)
		if errors.Is(err, context.Canceled) {
			return &ExitError{Code: ExitInterrupted, Err: err}
		}
		return err
	}
	kind, err := inspect.Kind(o.Dir)
	if err != nil {
		return UsageError(err) // not a run or matrix directory, as report says
	}
	switch {
	case o.Diffusion:
		return runDiffusion(o)
	case o.Compare && isNetwork(o.Dir):
		return runNetworkCompare(o)
	case o.Calls:
		return runCalls(o)
	case o.Tournament:
		return runTournament(o)
	case o.Routing:
		return runRouting(o)
	case o.Tasks:
		return runTasks(o)
	case o.Compare:
		if kind != rundir.KindMatrix && o.By != inspect.ByStudent {
			return usagef("--compare needs a matrix directory (or --by student, which compares a run's students); %s is a run", o.Dir)
		}
		return runCompare(o)
	case kind == rundir.KindMatrix:
		return runMatrixSummary(o)
	default:
		return runRunView(o)
	}
}

// runList lists the run and matrix directories under the root.
func runList(o *InspectOptions) error {
	dirs, err := inspect.List(o.Root)
	if err != nil {
		// A root that is missing, not a directory or a run itself is a
		// wrong path: bad usage, as everywhere.
		return UsageError(err)
	}
	if o.JSON {
		return inspect.WriteJSON(o.IO.Out, dirs)
	}
	if len(dirs) == 0 {
		fmt.Fprintf(o.IO.ErrOut, "no run or matrix directories under %s\n", o.Root)
		return nil
	}
	return inspect.WriteListText(o.IO.Out, dirs, isTerminal(o.IO.Out))
}

// runCompare compares the rows of a matrix.
func runCompare(o *InspectOptions) error {
	effect := o.Effect
	if effect == 0 {
		effect = configuredEffect(o.Dir)
	}
	cmp, err := inspect.Compare(o.Dir, inspect.CompareOptions{Baseline: o.Baseline, K: o.K, LastN: o.LastN, EffectOfInterest: effect, By: o.By})
	if errors.Is(err, inspect.ErrUnknownBaseline) || errors.Is(err, inspect.ErrUnknownBy) {
		return UsageError(err)
	}
	if err != nil {
		return err
	}
	if o.JSON {
		return inspect.WriteJSON(o.IO.Out, cmp)
	}
	return cmp.WriteText(o.IO.Out, isTerminal(o.IO.Out))
}

// runMatrixSummary prints a matrix's summary line and one line per row.
func runMatrixSummary(o *InspectOptions) error {
	sum, rows, err := inspect.SummarizeMatrix(o.Dir)
	if err != nil {
		return err
	}
	if o.JSON {
		return inspect.WriteJSON(o.IO.Out, MatrixView{Matrix: sum, Rows: rows})
	}
	tty := isTerminal(o.IO.Out)
	if err := inspect.WriteListText(o.IO.Out, []inspect.DirSummary{sum}, tty); err != nil {
		return err
	}
	fmt.Fprintln(o.IO.Out)
	return inspect.WriteListText(o.IO.Out, rows, tty)
}

// runRunView prints one run's view.
func runRunView(o *InspectOptions) error {
	view, err := inspect.ReadRunView(o.Dir)
	if err != nil {
		return err
	}
	if o.JSON {
		return inspect.WriteJSON(o.IO.Out, view)
	}
	return view.WriteText(o.IO.Out, isTerminal(o.IO.Out))
}

// configuredEffect is the [stats] effect_of_interest the matrix ran with;
// 0 (the default) when its configuration has none or cannot be read.
func configuredEffect(dir string) float64 {
	d, err := rundir.Open(dir)
	if err != nil {
		return 0
	}
	cfg, err := d.ResolvedConfig()
	if err != nil {
		return 0
	}
	return cfg.Stats.EffectOfInterest
}
