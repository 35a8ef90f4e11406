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
	"os"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// IOStreams are the standard streams a command reads and writes.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// System returns the process's own streams.
func System() IOStreams {
	return IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// Factory holds what commands need from outside: streams and the hooks
// that do real work. Tests build one with buffers and fakes.
type Factory struct {
	IO IOStreams
	// Execute runs a validated plan. Nil means this build cannot execute
	// runs; `run` and `matrix` then stop after validation (exit 1).
	Execute ExecuteFunc
}

// NewFactory returns the factory of the real program.
func NewFactory(stdio IOStreams) *Factory {
	return &Factory{IO: stdio, Execute: executePlan}
}

// Main runs the harness command line with args (without the program name)
// and returns the process exit code. ctx is cancelled on SIGINT/SIGTERM.
func Main(ctx context.Context, args []string, stdio IOStreams) int {
	return Run(ctx, NewFactory(stdio), args)
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
		NewCmdSkills(f),
		NewCmdTasks(f),
		NewCmdGC(f, nil),
		NewCmdInspect(f, nil),
		NewCmdReport(f, nil),
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
