package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/network"
)

// isNetwork reports whether dir is a network experiment's directory.
func isNetwork(dir string) bool {
	_, err := network.Design(dir)
	return err == nil
}

// runDiffusion lists the items of a network experiment: a JSON list with
// --json, else one line each.
func runDiffusion(o *InspectOptions) error {
	recs, err := network.Records(o.Dir)
	if err != nil {
		return UsageError(err)
	}
	if o.JSON {
		return inspect.WriteJSON(o.IO.Out, recs)
	}
	return writeDiffusionText(o.IO.Out, recs)
}

func writeDiffusionText(w io.Writer, recs []network.Record) error {
	if len(recs) == 0 {
		_, err := fmt.Fprintln(w, "no items: nothing was exchanged (diffusion none, or no barrier reached yet)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DIFFUSION\tSEED\tITER\tEDGE\tKIND\tDECISION\tRECEIVER\tTOKENS\tREASON")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%d\t%s\n", r.Diffusion, r.Seed, r.Iteration, r.Edge, r.Kind, r.Decision,
			dash(r.ReceiverDecision), r.Tokens, oneLine(r.Reason, 60))
	}
	return tw.Flush()
}

// runNetworkCompare prints the treatments of a network side by side.
func runNetworkCompare(o *InspectOptions) error {
	res, err := network.Compare(o.Dir, inspect.DefaultLevel)
	if err != nil {
		return err
	}
	if o.JSON {
		return inspect.WriteJSON(o.IO.Out, res)
	}
	return writeNetworkCompare(o.IO.Out, res)
}

func writeNetworkCompare(w io.Writer, res []network.TreatmentResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DIFFUSION\tESTIMAND\tMEAN\tINTERVAL (over seeds)\tSENT\tADOPTED\tDIFFUSION TOKENS\tPLANNER CONTEXT (chars/trial)")
	for _, r := range res {
		iv := "- (one seed)"
		if r.Low != nil {
			iv = fmt.Sprintf("[%.3f, %.3f] %.0f%%", *r.Low, *r.High, 100*r.Level)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\t%d\t%d\t%d\t%.0f\n", r.Diffusion, r.Estimand, r.Mean, iv, r.Items, r.Adopted, r.Tokens, r.PlannerContextChars)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nPer lab:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DIFFUSION\tLAB\tMEAN\tSENT\tDIFFUSION TOKENS\tADOPTED FROM\tPLANNER CONTEXT")
	for _, r := range res {
		for _, l := range r.Labs {
			var from []string
			for _, o := range slices.Sorted(maps.Keys(l.AdoptedFrom)) {
				from = append(from, fmt.Sprintf("%s:%d", o, l.AdoptedFrom[o]))
			}
			fmt.Fprintf(tw, "%s\t%s\t%.3f\t%d\t%d\t%s\t%.0f\n", r.Diffusion, l.Lab, l.Mean, l.Sent, l.TokensSent, dash(strings.Join(from, " ")), l.PlannerContextChars)
		}
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
