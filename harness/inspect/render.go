package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/harness/stats"
)

// WriteJSON writes v (a []DirSummary, *RunView or *Comparison) as indented
// JSON with the documented field names.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// table prints aligned columns on a terminal and tab-separated values
// otherwise, so piped output stays easy to cut and awk.
type table struct {
	tty    bool
	header []string
	rows   [][]string
}

func newTable(tty bool, header ...string) *table { return &table{tty: tty, header: header} }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) error {
	clean := func(s string) string { return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s) }
	if !t.tty {
		for _, r := range append([][]string{t.header}, t.rows...) {
			cells := make([]string, len(r))
			for i, c := range r {
				cells[i] = clean(c)
			}
			if _, err := fmt.Fprintln(w, strings.Join(cells, "\t")); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := make([]string, len(t.header))
	for i, h := range t.header {
		head[i] = strings.ToUpper(h)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = clean(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// num formats an optional number; "-" stands for "no value".
func num(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

func signed(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func interval(lo, hi *float64) string {
	if lo == nil || hi == nil {
		return "-"
	}
	return "[" + num(lo) + ", " + num(hi) + "]"
}

func usd(v float64) string { return "$" + strconv.FormatFloat(v, 'f', 2, 64) }

// tokens is exact when piped and short (12.3k, 4.5M) on a terminal.
func tokens(n int64, tty bool) string {
	if !tty {
		return strconv.FormatInt(n, 10)
	}
	switch {
	case n >= 1_000_000_000:
		return strconv.FormatFloat(float64(n)/1e9, 'f', 1, 64) + "G"
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 10_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "-"
	}
	return h
}

func truncate(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

// statusText is a status as shown in text: a stopped one says why.
func statusText(s rundir.Status) string {
	if s == StatusStopped {
		return string(s) + " (" + StoppedReason + ")"
	}
	return string(s)
}

// WriteListText prints a listing as a table.
func WriteListText(w io.Writer, dirs []DirSummary, tty bool) error {
	if len(dirs) == 0 {
		_, err := fmt.Fprintln(w, "no run or matrix directories")
		return err
	}
	t := newTable(tty, "id", "kind", "status", "rows", "tasks", "iterations", "trials", "env failures",
		"mean reward", "skill updates", "tokens", "cost", "offline")
	for _, d := range dirs {
		if d.Error != "" {
			t.add(d.ID, string(d.Kind), string(d.Status), "-", "-", "-", "-", "-", "-", "-", "-", "-", truncate(d.Error, 80))
			continue
		}
		t.add(d.ID, string(d.Kind), statusText(d.Status), strconv.Itoa(d.Rows), strconv.Itoa(d.Tasks),
			fmt.Sprintf("%d/%d", d.IterationsDone, d.IterationsPlanned), strconv.Itoa(d.Trials),
			strconv.Itoa(d.EnvFailures), num(d.MeanReward), strconv.Itoa(d.SkillUpdates),
			tokens(d.Tokens, tty), usd(d.CostUSD), yesNo(d.Offline))
	}
	return t.write(w)
}

// WriteText prints the run view: a header, then one table per section.
func (v *RunView) WriteText(w io.Writer, tty bool) error {
	if _, err := io.WriteString(w, v.header(tty)); err != nil {
		return err
	}
	sections := append(v.trialSections(tty), v.evolutionSections(tty)...)
	for _, s := range sections {
		if _, err := fmt.Fprintf(w, "\n%s\n", s.title); err != nil {
			return err
		}
		if len(s.t.rows) == 0 {
			if _, err := fmt.Fprintf(w, "  %s\n", s.empty); err != nil {
				return err
			}
			continue
		}
		if err := s.t.write(w); err != nil {
			return err
		}
	}
	h := v.History
	var kinds []string
	for k, n := range h.Entries {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	if len(kinds) > 0 {
		fmt.Fprintf(w, "\nHistory\n  %s; %d reports withheld, %d entries rewarded, %d dropped\n",
			strings.Join(kinds, ", "), h.Withheld, h.Rewarded, h.Dropped)
	}
	return writeWarnings(w, v.Warnings)
}

// header is the run's id and status, its design, its counts and its spend.
func (v *RunView) header(tty bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s (%s)\n", v.ID, statusText(v.Status))
	if v.Error != "" {
		fmt.Fprintf(&b, "  error: %s\n", v.Error)
	}
	var facts []string
	for _, f := range [][2]string{{"condition", v.Condition}, {"skill updates", v.Policy}, {"preset", v.Preset},
		{"lab", v.Lab}, {"agent", v.Agent}, {"matrix", v.MatrixID}} {
		if f[1] != "" {
			facts = append(facts, f[0]+" "+f[1])
		}
	}
	facts = append(facts, fmt.Sprintf("seed %d", v.Seed))
	fmt.Fprintf(&b, "  %s\n", strings.Join(facts, ", "))
	fmt.Fprintf(&b, "  iterations %d/%d, tasks %d, trials %d (%d scored, %d env failures, %d unscored), mean reward %s\n",
		v.IterationsDone, v.IterationsPlanned, len(v.Tasks), v.Trials, v.Scored, v.EnvFailures, v.Unscored, num(v.MeanReward))
	cached := ""
	if v.CachedInputTokens > 0 {
		cached = " (" + tokens(v.CachedInputTokens, tty) + " input tokens cached)"
	}
	fmt.Fprintf(&b, "  spend %s tokens%s, %s\n", tokens(v.TotalTokens, tty), cached, usd(v.TotalCostUSD))
	return b.String()
}

// trialSections are the tables of the trials: per iteration, held out, by
// status, and the failed ones.
func (v *RunView) trialSections(tty bool) []section {
	var sections []section
	it := newTable(tty, "iteration", "trials", "scored", "env failures", "mean reward", "skill updates", "tokens", "cost")
	for _, s := range v.Iterations {
		it.add(strconv.Itoa(s.Iteration), strconv.Itoa(s.Trials), strconv.Itoa(s.Scored), strconv.Itoa(s.EnvFailures),
			num(s.MeanReward), strconv.Itoa(s.SkillUpdates), tokens(s.Tokens, tty), usd(s.CostUSD))
	}
	sections = append(sections, section{"Per iteration", it, "no metrics yet"})
	if len(v.Evaluation) > 0 {
		ev := newTable(tty, "skills after iteration", "trials", "scored", "env failures", "mean reward")
		for _, s := range v.Evaluation {
			ev.add(strconv.Itoa(s.Checkpoint), strconv.Itoa(s.Trials), strconv.Itoa(s.Scored), strconv.Itoa(s.EnvFailures), num(s.MeanReward))
		}
		sections = append(sections, section{"Held-out evaluation", ev, ""})
	}

	st := newTable(tty, "status", "trials")
	for _, s := range slices.Sorted(maps.Keys(v.Statuses)) {
		st.add(string(s), strconv.Itoa(v.Statuses[s]))
	}
	sections = append(sections, section{"Trials by status", st, "no trials yet"})

	ft := newTable(tty, "iteration", "task", "status", "failed calls", "bad tool calls", "cause")
	for _, f := range v.Failures {
		cause := dash(f.Cause)
		if tty {
			cause = truncate(cause, 100)
		}
		ft.add(strconv.Itoa(f.Iteration), f.TaskID, string(f.Status), strconv.Itoa(f.ModelFailures), strconv.Itoa(f.MalformedToolCalls), cause)
	}
	return append(sections, section{"Failed trials", ft, "none"})
}

// evolutionSections are the tables of what the run changed and spent: the
// committed skill updates, the rejected proposals, the spend by role.
func (v *RunView) evolutionSections(tty bool) []section {
	up := newTable(tty, "iteration", "role", "id", "flow", "rule", "old", "new")
	for _, u := range v.SkillUpdates {
		up.add(strconv.Itoa(u.Iteration), u.Role, u.ID, dash(u.Flow), dash(u.Rule), shortHash(u.OldHash), shortHash(u.NewHash))
	}
	rj := newTable(tty, "iteration", "type", "batch", "proposals", "reason")
	for _, r := range v.Rejected {
		reason := r.Reason
		if tty {
			reason = truncate(reason, 80)
		}
		rj.add(strconv.Itoa(r.Iteration), r.Type, r.BatchID, strconv.Itoa(r.Proposals), reason)
	}
	sp := newTable(tty, "role", "input tokens", "output tokens", "cost")
	for _, s := range v.Spend {
		sp.add(s.Role, tokens(s.InputTokens, tty), tokens(s.OutputTokens, tty), usd(s.CostUSD))
	}
	return []section{
		{"Skill updates", up, "none committed"},
		{"Rejected proposals", rj, "none"},
		{"Spend by role", sp, "no spend recorded"},
	}
}

// section is a titled table of the run view; empty is said instead of an
// empty table.
type section struct {
	title string
	t     *table
	empty string
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeWarnings(w io.Writer, warnings []string) error {
	if len(warnings) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w, "\nWarnings"); err != nil {
		return err
	}
	for _, s := range warnings {
		if _, err := fmt.Fprintf(w, "  ! %s\n", s); err != nil {
			return err
		}
	}
	return nil
}

// pval formats an optional p-value; very small ones as "<0.001".
func pval(v *float64) string {
	if v == nil {
		return "-"
	}
	if *v < 0.001 {
		return "<0.001"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

// estimandWords names an estimand in the text output.
var estimandWords = map[string]string{
	WholeCurve: "whole-curve mean",
	LastN:      "last-N mean",
	HeldOut:    "held-out mean",
}

// WriteText prints the comparison: the headline table, every estimand per
// row, the power statement and the warnings.
func (c *Comparison) WriteText(w io.Writer, tty bool) error {
	pct := strconv.FormatFloat(100*c.Level, 'f', -1, 64) + "%"
	alpha := strconv.FormatFloat(100*c.Alpha, 'f', -1, 64) + "%"
	head := estimandWords[c.Headline]
	if c.Headline == LastN {
		head = fmt.Sprintf("mean of the last %d iterations", c.LastN)
	}
	fmt.Fprintf(w, "Compare %s (%s): %d rows; headline: %s; differences against %s (%s)\n",
		c.ID, c.Status, len(c.Rows), head, dash(c.Baseline), c.BaselineReason)
	if len(c.Rows) == 0 {
		return writeWarnings(w, c.Warnings)
	}
	fmt.Fprintf(w, "%s t intervals over tasks (with several seeds, over seeds x tasks); p: sign-flip permutation over tasks "+
		"(t test with several seeds), Holm-adjusted across the rows compared, significant at %s family-wise\n", pct, alpha)
	fmt.Fprintf(w, "Intervals are conditional on: %s; iqm and poi intervals: rliable's stratified bootstrap, tasks held fixed\n",
		conditionalWords(c.Rows))
	if c.K >= 2 && c.PassKTasks > 0 && c.PassKLeftOut == 0 {
		// Every row's pass@k and pass^k rest on the same tasks. When some
		// were left out, a warning states the set and what it lacks.
		fmt.Fprintf(w, "pass@%d and pass^%d over all %s: each has at least %d scored trials in every row\n",
			c.K, c.K, plural(c.PassKTasks, "task"), c.K)
	}
	fmt.Fprintln(w)
	if err := c.headlineTable(tty, pct).write(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nEstimands\n")
	for _, e := range c.Estimands {
		fmt.Fprintf(w, "  %s: %s\n", e.Name, e.Description)
	}
	if err := c.estimandTable(tty, pct).write(w); err != nil {
		return err
	}
	if p := c.Power; p != nil {
		writePower(w, p, c.Baseline)
	}
	var warnings []string
	warnings = append(warnings, c.Warnings...)
	for _, r := range c.Rows {
		for _, s := range r.Warnings {
			warnings = append(warnings, r.Row+": "+s)
		}
	}
	return writeWarnings(w, warnings)
}

// headlineTable has one line per row, with the headline estimand.
func (c *Comparison) headlineTable(tty bool, pct string) *table {
	k := "k"
	if c.K > 0 {
		k = strconv.Itoa(c.K)
	}
	t := newTable(tty, "row", "seeds", "tasks", "scored", "env failures", "unscored", "mean reward", pct+" ci", "iqm",
		"diff vs "+c.Baseline, pct+" ci", "p", "p holm", "sig", "poi", "pass@"+k, "pass^"+k)
	for _, r := range c.Rows {
		seeds := make([]string, len(r.Seeds))
		for i, s := range r.Seeds {
			seeds[i] = strconv.FormatInt(s, 10)
		}
		tasks := r.Tasks
		for _, e := range r.Estimates {
			if e.Estimand == c.Headline {
				tasks = e.Tasks
			}
		}
		cells := []string{r.Row, strings.Join(seeds, ","), strconv.Itoa(tasks), strconv.Itoa(r.Scored), strconv.Itoa(r.EnvFailures),
			strconv.Itoa(r.Unscored), num(r.MeanReward), interval(r.CILow, r.CIHigh), num(r.IQM)}
		cells = append(cells, diffCells(r.Diff, r.Row == c.Baseline)...)
		t.add(append(cells, num(r.PassAtK), num(r.PassHatK))...)
	}
	return t
}

// diffCells are the diff, interval, p, Holm p, decision and PoI cells.
func diffCells(d *Diff, isBaseline bool) []string {
	if d == nil {
		first := "-"
		if isBaseline {
			first = "(baseline)"
		}
		return []string{first, "-", "-", "-", "-", "-"}
	}
	sig := "-"
	if d.PHolm != nil {
		sig = yesNo(d.Significant)
	}
	return []string{signed(d.Mean), interval(d.CILow, d.CIHigh), pval(d.P), pval(d.PHolm), sig, num(d.PoI)}
}

// estimandTable has one line per row and estimand, and one more for a
// held-out estimate's difference to the row's initial skills.
func (c *Comparison) estimandTable(tty bool, pct string) *table {
	t := newTable(tty, "row", "estimand", "iterations", "tasks", "seeds", "mean", pct+" ci", "iqm", "iqm "+pct+" ci",
		"diff", "against", pct+" ci", "p", "p holm", "sig", "poi", "poi "+pct+" ci", "detectable diff")
	for _, r := range c.Rows {
		for _, e := range r.Estimates {
			span := fmt.Sprintf("%d-%d", e.FromIteration, e.ToIteration)
			if e.Checkpoint != nil {
				span = "checkpoint " + strconv.Itoa(*e.Checkpoint)
			}
			cells := []string{r.Row, e.Estimand, span, strconv.Itoa(e.Tasks), strconv.Itoa(e.Seeds), num(e.Mean), interval(e.CILow, e.CIHigh), num(e.IQM),
				interval(e.IQMLow, e.IQMHigh)}
			t.add(append(cells, estimandDiffCells(e.Diff, r.Row == c.Baseline)...)...)
			if e.VsInitial != nil {
				t.add(append([]string{r.Row, e.Estimand + " vs initial", span, strconv.Itoa(e.VsInitial.Tasks), strconv.Itoa(e.VsInitial.Seeds),
					"", "", "", ""}, estimandDiffCells(e.VsInitial, false)...)...)
			}
		}
	}
	return t
}

func estimandDiffCells(d *Diff, isBaseline bool) []string {
	cells := diffCells(d, isBaseline)
	against, poiCI, mdd := "-", "-", "-"
	if d != nil {
		against, poiCI, mdd = d.Against, interval(d.PoILow, d.PoIHigh), num(d.MinDetectable)
	}
	return append([]string{cells[0], against}, append(cells[1:], poiCI, mdd)...)
}

// conditionalWords says what the rows' intervals treat as random.
func conditionalWords(rows []RowComparison) string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		if c := stats.ConditionalOn(len(r.Seeds)); !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return strings.Join(out, "; ")
}

// writePower prints the power statement: for the test that decides
// significance, the smallest detectable difference (or why there is none)
// and the power at the effect of interest.
func writePower(w io.Writer, p *PowerStatement, baseline string) {
	fmt.Fprintf(w, "\nPower\n")
	if p.Test == "" {
		fmt.Fprintf(w, "  %s.\n", p.Note)
		return
	}
	fmt.Fprintf(w, "  At %s x %s x %s (%s, %s test): ", plural(p.Tasks, "task"), plural(p.Trials, "trial"),
		plural(p.Seeds, "seed"), p.Estimand, p.Test)
	if p.MinDetectable != nil {
		fmt.Fprintf(w, "the smallest difference to %s detected with 80%% power at the 5%% level is %.3f", baseline, *p.MinDetectable)
	} else {
		fmt.Fprintf(w, "no difference to %s can be detected with 80%% power (%s)", baseline, p.Note)
	}
	if p.PowerAtEffect != nil {
		fmt.Fprintf(w, "; an effect of interest of %.3f is detected %.0f%% of the time", p.EffectOfInterest, 100**p.PowerAtEffect)
	}
	fmt.Fprintln(w, ".")
}
