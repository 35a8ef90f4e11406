package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// writePlanJSON writes the plan as one JSON document.
func writePlanJSON(w io.Writer, p *harness.Plan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// writePlanText writes the plan for people.
func writePlanText(w io.Writer, p *harness.Plan) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan of %s %s: %d %s x %d %s x %d %s = %d trials\n\n",
		p.Kind, p.Name, len(p.Rows), plural(len(p.Rows), "row", "rows"), len(p.Tasks), plural(len(p.Tasks), "task", "tasks"),
		p.Iterations, plural(p.Iterations, "iteration", "iterations"), p.Trials)
	writePlanRows(&b, p)
	writePlanDesign(&b, p)
	writePlanModels(&b, p)
	writePlanOutput(&b, p)
	b.WriteString("\nDry run: nothing was created or started.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writePlanRows writes the table of rows.
func writePlanRows(b *strings.Builder, p *harness.Plan) {
	b.WriteString("Rows:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ROW\tCONDITION\tSKILL UPDATES\tLAB\tROUTING\tSEED")
	for _, r := range p.Rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\n", r.Name, r.Condition, r.Policy, r.Lab, r.Routing.Or(), r.Seed)
	}
	tw.Flush()
	// Rows with their own models, and what they run instead.
	for _, r := range p.Rows {
		if len(r.Models) == 0 {
			continue
		}
		var own []string
		for _, key := range slices.Sorted(maps.Keys(r.Models)) {
			own = append(own, fmt.Sprintf("%s %s", key, r.Models[key]))
		}
		fmt.Fprintf(b, "  row %s runs its own models: %s\n", r.Name, strings.Join(own, ", "))
	}
}

// writePlanDesign writes the tasks, iterations, seeds, trials and the
// power statement.
func writePlanDesign(b *strings.Builder, p *harness.Plan) {
	tasks := strings.Join(p.Tasks, ", ")
	if tasks == "" {
		tasks = "(listed when the run starts)"
	}
	if p.TaskSet != "" {
		tasks += " (task set " + p.TaskSet + ")"
	}
	b.WriteString("\n")
	field(b, fmt.Sprintf("Tasks (%d)", len(p.Tasks)), tasks)
	if len(p.ValidateTasks) > 0 {
		field(b, fmt.Sprintf("Validate on (%d)", len(p.ValidateTasks)), strings.Join(p.ValidateTasks, ", "))
	}
	if len(p.HeldOutTasks) > 0 {
		field(b, fmt.Sprintf("Held out (%d)", len(p.HeldOutTasks)), fmt.Sprintf("%s (initial and final skills of each row, %d %s per task each: %d evaluation trials)",
			strings.Join(p.HeldOutTasks, ", "), p.EvalTrials, plural(p.EvalTrials, "trial", "trials"), p.EvaluationTrials))
	}
	field(b, "Iterations", fmt.Sprint(p.Iterations))
	field(b, "Seeds", joinInts(p.Seeds))
	field(b, "Agent", p.Agent)
	field(b, "Concurrency", fmt.Sprintf("%d trials at once", p.Concurrency))
	trials := fmt.Sprintf("%d", p.Trials)
	if p.RemainingTrials != nil {
		trials = fmt.Sprintf("%d, of which %d remain to run (the estimates below are for what remains)", p.Trials, *p.RemainingTrials)
	}
	if p.ValidationTrials > 0 {
		trials += fmt.Sprintf("; about %d validation trials of skill candidates expected on top", p.ValidationTrials)
	}
	field(b, "Trials", trials)
	if pw := p.Power; pw != nil {
		field(b, "Detectable", detectableText(pw))
	}
}

// writePlanModels writes the model of each role with its share of the
// tokens, then the total, the cost and the budget.
func writePlanModels(b *strings.Builder, p *harness.Plan) {
	b.WriteString("\nModels:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, role := range conditions.ModelRoles() {
		if m, ok := p.Models[role]; ok {
			fmt.Fprintf(tw, "  %s\t%s\t~%s tokens\n", role, m, humanTokens(p.EstimatedTokensByRole[role]))
		}
	}
	// Models only students name, after the roles.
	for _, key := range slices.Sorted(maps.Keys(p.Models)) {
		if !key.IsModel() {
			fmt.Fprintf(tw, "  %s (students)\t%s\t~%s tokens\n", key, p.Models[key], humanTokens(p.EstimatedTokensByRole[key]))
		}
	}
	tw.Flush()
	writePlanStudents(b, p)

	b.WriteString("\n")
	field(b, "Estimated tokens", "~"+humanTokens(p.EstimatedTokens))
	switch {
	case p.Offline:
		field(b, "Estimated cost", "$0 (offline)")
	case p.CostKnown:
		field(b, "Estimated cost", fmt.Sprintf("~$%.2f", p.EstimatedCostUSD))
	default:
		field(b, "Estimated cost", fmt.Sprintf("more than ~$%.2f (some models have no price)", p.EstimatedCostUSD))
	}
	field(b, "Budget", budgetText(p))
}

// writePlanOutput writes the images, where the run goes (or what a resume
// skips) and the plan's notes.
func writePlanOutput(b *strings.Builder, p *harness.Plan) {
	images := strings.Join(p.Images, ", ")
	if images == "" {
		images = "(those of the tasks, once listed)"
	}
	fmt.Fprintf(b, "\nImages to build or reuse (%d): %s\n", len(p.Images), images)

	if p.ResumeDir != "" {
		fmt.Fprintf(b, "\nResuming %s:\n", p.ResumeDir)
		if len(p.ResumeSkips) == 0 {
			b.WriteString("  nothing is skipped: no iteration was completed yet\n")
		}
		for _, s := range p.ResumeSkips {
			fmt.Fprintf(b, "  %s\n", s)
		}
	} else {
		b.WriteString("\n")
		field(b, "Output", filepath.Join(p.OutBase(), outName(p))+string(filepath.Separator))
	}

	if len(p.Warnings) > 0 {
		b.WriteString("\nWARNINGS:\n")
		for _, w := range p.Warnings {
			fmt.Fprintf(b, "  - %s\n", w)
		}
	}
	if len(p.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range p.Notes {
			fmt.Fprintf(b, "  - %s\n", n)
		}
	}
}

// field writes one "Label:  value" line with the values aligned.
func field(b *strings.Builder, label, value string) {
	fmt.Fprintf(b, "%-18s%s\n", label+":", value)
}

func outName(p *harness.Plan) string {
	seed := int64(0)
	if len(p.Seeds) > 0 {
		seed = p.Seeds[0]
	}
	if p.Kind == rundir.KindMatrix {
		return fmt.Sprintf("<UTC time>-%d-%s-matrix", seed, p.Name)
	}
	return fmt.Sprintf("<UTC time>-%d-%s", seed, p.Rows[0].Label())
}

func budgetText(p *harness.Plan) string {
	var parts []string
	if p.BudgetUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%g", p.BudgetUSD))
	}
	if p.BudgetTokens > 0 {
		parts = append(parts, humanTokens(p.BudgetTokens)+" tokens")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " and ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func joinInts(xs []int64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// humanTokens writes a token count compactly (1.2M, 350k).
func humanTokens(n int64) string {
	switch {
	case n >= 1_000_000_000:
		return fmt.Sprintf("%.1fG", float64(n)/1e9)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// detectableText states the plan's power: the smallest detectable
// difference, or why there is none, and the power at the effect of
// interest.
func detectableText(pw *harness.PowerStatement) string {
	design := fmt.Sprintf("%s test, %s estimate over %d tasks x %d trials x %d %s", pw.Test, pw.Estimand, pw.Tasks, pw.TrialsPerTask,
		pw.Seeds, plural(pw.Seeds, "seed", "seeds"))
	if pw.MinDetectable == nil {
		return fmt.Sprintf("no difference (%s; %s)", pw.Note, design)
	}
	return fmt.Sprintf("differences of %.2f or more from the baseline (80%% power, 5%% level; %s; effect of interest %.2f, detected %.0f%% of the time)",
		*pw.MinDetectable, design, pw.EffectOfInterest, 100*pw.PowerAtEffect)
}

// writePlanStudents writes each lab's students and how they meet the tasks.
func writePlanStudents(b *strings.Builder, p *harness.Plan) {
	for _, lp := range p.Students {
		of := "lab " + lp.Lab
		if lp.Row != "" {
			of += " in row " + lp.Row
		}
		fmt.Fprintf(b, "\nStudents of %s (assignment %s):\n", of, lp.Assignment)
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  STUDENT\tMODEL\tMODE\tSKILL")
		for _, st := range lp.Students {
			skill := "the lab's"
			if st.OwnSkill {
				skill = "its own"
			}
			fmt.Fprintf(tw, "  %s\t%s [models.%s]\t%s\t%s\n", st.ID, st.Model, st.ModelKey, st.ExecutorMode, skill)
		}
		tw.Flush()
	}
}
