package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/harness/inspect"
)

func num(v *float64) string {
	if v == nil {
		return "–"
	}
	return strconv.FormatFloat(*v, 'f', 3, 64)
}

func interval(lo, hi *float64) string {
	if lo == nil || hi == nil {
		return "–"
	}
	return "[" + num(lo) + ", " + num(hi) + "]"
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// writeMarkdown writes summary.md: what was compared and how, the
// comparison table, the warnings, the students' table when rows have
// several (students non-nil), the routing between students when any item
// was routed, the plots and the spend table.
func writeMarkdown(out io.Writer, c *inspect.Comparison, series []inspect.RowSeries, students *inspect.Comparison, routed []inspect.RoutedItem) error {
	w := bufio.NewWriter(out)
	pct := strconv.FormatFloat(100*c.Level, 'f', -1, 64) + "%"
	fmt.Fprintf(w, "# Report: %s\n\n", c.ID)
	kind := "Directory"
	if c.Kind != "" {
		kind = strings.ToUpper(string(c.Kind[:1])) + string(c.Kind[1:])
	}
	fmt.Fprintf(w, "%s `%s`, status **%s**, %d rows.\n\n", kind, c.ID, c.Status, len(c.Rows))

	fmt.Fprintf(w, "## Comparison\n\n")
	if len(c.Rows) == 0 {
		fmt.Fprintf(w, "No metric rows yet.\n\n")
	} else {
		fmt.Fprintf(w, "Mean reward is the macro mean (the mean over tasks of each task's mean scored reward) of the "+
			"`%s` estimand; its interval is a %s t interval over tasks (seeds a level above tasks). Differences are paired per task against "+
			"`%s` (%s); over a single shared task a difference has no interval. Environment failures and "+
			"unscored trials (agent errors, verifier errors) are counted apart and never scored as zeros. "+
			"pass@k and pass^k use one k for every row, k = %d: the fewest trials any task had in any row, at most %d; "+
			"every row's are averaged over the same %d tasks, those with at least k scored trials in every row "+
			"(%d left out), and they are shown when k ≥ 2.\n\n",
			c.Headline, pct, c.Baseline, c.BaselineReason, c.K, inspect.DefaultMaxK, c.PassKTasks, c.PassKLeftOut)
		writeTable(w, c, pct)
		fmt.Fprintln(w)
	}

	var warnings []string
	warnings = append(warnings, c.Warnings...)
	for _, r := range c.Rows {
		for _, s := range r.Warnings {
			warnings = append(warnings, "`"+r.Row+"`: "+s)
		}
	}
	if len(warnings) > 0 {
		fmt.Fprintf(w, "### Warnings\n\n")
		for _, s := range warnings {
			fmt.Fprintf(w, "- %s\n", cell(s))
		}
		fmt.Fprintln(w)
	}

	if students != nil {
		fmt.Fprintf(w, "## Students\n\nEach row's students apart (`<row>/<student>`), as `harness inspect --compare --by student` "+
			"shows them: the same estimand and %s intervals over tasks, differences paired per task against `%s`. Under a rotation "+
			"every student meets every task equally often, so the pairing holds; the curves are in [reward per iteration per student](%s.svg).\n\n",
			pct, students.Baseline, StudentRewardPlot)
		writeTable(w, students, pct)
		fmt.Fprintln(w)
		fmt.Fprintf(w, "![Reward per iteration per student](%s.svg)\n\n[PNG](%s.png) · [SVG](%s.svg)\n\n", StudentRewardPlot, StudentRewardPlot, StudentRewardPlot)
	}
	writeRouting(w, routed)

	for _, img := range []struct{ title, name, about string }{
		{"Reward per iteration", RewardPlot, "Mean over tasks of each iteration's scored rewards per row; the band is a 95% bootstrap interval over tasks. Iterations without a scored trial are left out."},
		{"Cumulative skill updates", SkillUpdatesPlot, "Distinct committed skill updates per row by iteration, averaged over the row's seeds."},
		{"Tokens by role", TokensPlot, "Input plus output tokens per row, stacked by role, summed over the row's runs."},
	} {
		fmt.Fprintf(w, "## %s\n\n%s\n\n![%s](%s.svg)\n\n[PNG](%s.png) · [SVG](%s.svg)\n\n",
			img.title, img.about, img.title, img.name, img.name, img.name)
	}

	if len(series) > 0 {
		fmt.Fprintf(w, "## Spend by role\n\n| row | role | input tokens | output tokens | cost (USD) |\n|---|---|---:|---:|---:|\n")
		for _, rs := range series {
			for _, s := range rs.Spend {
				fmt.Fprintf(w, "| `%s` | %s | %d | %d | %.2f |\n", cell(rs.Row), s.Role, s.InputTokens, s.OutputTokens, s.CostUSD)
			}
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
}

// writeTable writes a comparison's table, one line per compared row.
func writeTable(w io.Writer, c *inspect.Comparison, pct string) {
	fmt.Fprintf(w, "| row | seeds | tasks | scored | env failures | unscored | mean reward | %s CI | diff vs `%s` | %s CI | pass@%d | pass^%d |\n",
		pct, c.Baseline, pct, c.K, c.K)
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---|---:|---|---:|---:|\n")
	for _, r := range c.Rows {
		seeds := make([]string, len(r.Seeds))
		for i, s := range r.Seeds {
			seeds[i] = strconv.FormatInt(s, 10)
		}
		diff, diffCI := "–", "–"
		if r.Diff != nil {
			diff = strconv.FormatFloat(r.Diff.Mean, 'f', 3, 64)
			diffCI = interval(r.Diff.CILow, r.Diff.CIHigh)
		} else if r.Row == c.Baseline {
			diff = "baseline"
		}
		fmt.Fprintf(w, "| `%s` | %s | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s |\n",
			cell(r.Row), strings.Join(seeds, ", "), r.Tasks, r.Scored, r.EnvFailures, r.Unscored, num(r.MeanReward),
			interval(r.CILow, r.CIHigh), diff, diffCI, num(r.PassAtK), num(r.PassHatK))
	}
}
