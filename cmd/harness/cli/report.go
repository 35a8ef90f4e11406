package cli

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/report"
)

// reportGCPercent is the garbage collection target of `harness report`.
const reportGCPercent = 50

// ReportOptions are the arguments of `harness report`.
type ReportOptions struct {
	IO IOStreams
	// Getenv reads the environment (GOGC, which wins over the report's own
	// collection target).
	Getenv func(string) string
	Dir    string
	Out    string // empty: DIR/report
	JSON   bool
}

// NewCmdReport builds `harness report DIR`.
func NewCmdReport(f *Factory, runF func(context.Context, *ReportOptions) error) *cobra.Command {
	o := &ReportOptions{}
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Write plots (PNG and SVG) and a one-page Markdown summary of a run or matrix",
		Long: `Write, for a run or matrix directory, the reward per iteration per row with an interval
band, the cumulative skill updates per row and the tokens by role per row, each as PNG and
SVG, and summary.md beside them with the comparison table. Files go to DIR/report unless
--out says otherwise.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("%s takes exactly one directory (got %d arguments)", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IO, o.Getenv, o.Dir = f.IO, f.Getenv, args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runReport(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Out, "out", "", "directory for the plots and summary (default DIR/report)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print what was written as JSON")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

func runReport(ctx context.Context, o *ReportOptions) error {
	if _, err := inspect.Kind(o.Dir); err != nil {
		return UsageError(err)
	}
	// A report is one batch pass whose live data (per-task counts) is
	// small next to the garbage a scan of many Parquet files makes; a
	// tighter collection target keeps its peak memory near that live data
	// (under 100 MiB at a million metric rows) for about a tenth more CPU.
	// GOGC, when set, wins.
	if o.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(reportGCPercent))
	}
	sum, err := report.Write(ctx, o.Dir, o.Out)
	if err != nil {
		return err
	}
	if o.JSON {
		return inspect.WriteJSON(o.IO.Out, sum)
	}
	fmt.Fprintf(o.IO.Out, "wrote %s\n", sum.Markdown)
	for _, img := range sum.Images {
		fmt.Fprintf(o.IO.Out, "wrote %s\n", img)
	}
	return nil
}
