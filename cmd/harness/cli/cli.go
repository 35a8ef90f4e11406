// Package cli is the harness command line: flags, output and exit codes.
// Experiment logic lives in package harness; every command here parses its
// flags into an options struct and hands it to a run function, so tests can
// check flag parsing and behaviour separately (NewCmdX(f, runF)).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/launch"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// IOStreams are the standard streams a command reads and writes.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Factory holds what commands need from outside: streams, clock,
// environment, and constructors of the things that do real work. The
// program's composition root fills it (cmd/harness/factory); tests build
// one with buffers and fakes. A nil constructor means the build has none.
type Factory struct {
	IO     IOStreams
	Now    func() time.Time
	Getenv func(string) string
	// Resolver finds tasks as [executor_runtime] says.
	Resolver ResolverFunc
	// Sandbox connects to the engine trials run on.
	Sandbox func(ctx context.Context, rt config.ExecutorRuntime) (SandboxBackend, error)
	// Collector connects to the same engine to remove what runs left.
	Collector func(ctx context.Context, rt config.ExecutorRuntime) (Collector, error)
	// Providers reach the configured models, the offline one included.
	Providers harness.ProviderFunc
	// Preflight checks once that a model's endpoint answers, before a run
	// creates anything; nil skips the check.
	Preflight PreflightFunc
	// Execute, when set, replaces the orchestrator for `run` and `matrix`
	// (tests).
	Execute ExecuteFunc
	// Scheduler runs Slurm's commands for `matrix --launcher slurm`, and
	// Executable names the binary its array elements run.
	Scheduler  launch.Runner
	Executable func() (string, error)
}

// SandboxBackend is the sandbox backend of a connected engine; Close
// releases the connection.
type SandboxBackend interface {
	harness.Backend
	Close() error
}

// planRunner is how `run` and `matrix` carry out a plan: the Execute hook if
// set, else the orchestrator on the factory's engine and models. Nil when
// the build has neither: the commands then stop after validation (exit 1).
func (f *Factory) planRunner() ExecuteFunc {
	switch {
	case f.Execute != nil:
		return f.Execute
	case f.Resolver == nil || f.Sandbox == nil || f.Providers == nil:
		return nil
	}
	return func(ctx context.Context, x *ValidatedPlan) error { return executePlan(ctx, f, x) }
}

// Run executes one command line against f and maps the outcome to an exit
// code, printing an error (if any) once on f.IO.ErrOut.
func Run(ctx context.Context, f *Factory, args []string) int {
	root := NewRootCmd(f)
	if args == nil {
		args = []string{} // never let cobra fall back to os.Args
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	code := ExitCode(err)
	if code == ExitInterrupted && ctx.Err() != nil && !errors.As(err, new(*ExitError)) {
		fmt.Fprintln(f.IO.ErrOut, "interrupted")
		return code
	}
	if msg := errorMessage(err); msg != "" {
		fmt.Fprintln(f.IO.ErrOut, "error: "+msg)
		if code == ExitUsage && isCobraUsage(err) {
			fmt.Fprintln(f.IO.ErrOut, "Run 'harness --help' (or 'harness COMMAND --help') for usage.")
		}
	}
	return code
}

// NewRootCmd builds a fresh command tree. Nothing is shared between trees,
// so flag values never leak from one execution to the next.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "harness",
		Short: "Run and measure experiments on mediated co-evolution of LLM agents",
		Long: `harness runs a lab of LLM agents (a Planner, Executors and a Mediator) on benchmark
tasks inside Docker containers, under controlled feedback conditions and skill-update
policies, and records every measurement, trace and skill version on disk.

Start with a plan: 'harness matrix --task-set smoke --offline --dry-run'.`,
		Version:       rundir.VersionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
		// No Run: cobra then prints help for a bare 'harness' and reports
		// unknown commands, which Run maps to exit code 2.
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetVersionTemplate("harness {{.Version}}\n")
	// Our own --version flag, so -v stays free for the commands' --verbose.
	root.Flags().Bool("version", false, "print the version and git commit")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })
	root.CompletionOptions.HiddenDefaultCmd = false

	root.AddCommand(
		NewCmdRun(f, nil),
		NewCmdMatrix(f, nil),
		NewCmdNetwork(f, nil),
		NewCmdSkills(f),
		NewCmdTasks(f),
		NewCmdGC(f, nil),
		NewCmdInspect(f, nil),
		NewCmdReport(f, nil),
		NewCmdView(f, nil),
		newExitCodesTopic(),
	)
	return root
}

// runGroup is the RunE of a command group (tasks, skills): a bare group
// shows its help, and a subcommand it does not know is bad usage.
func runGroup(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return cmd.Help()
}
