package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/harness/inspect"
)

// MaxRoutedListed is how many routed items the summary lists per row; the
// counts cover them all, and `harness inspect --routing` lists every one.
const MaxRoutedListed = 30

// writeRouting writes the Routing section: per row, a from → to table of
// routed item counts with how many were adopted, then the items
// themselves, at most MaxRoutedListed a row. It writes nothing when no
// item was routed.
func writeRouting(w io.Writer, items []inspect.RoutedItem) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "## Routing\n\nItems of one student's evidence that reached another student's own executor skill, "+
		"as `harness inspect --routing` lists them. A cell reads *items (adopted)*: how many items went from the row's "+
		"student to the column's, and how many of them a batch of the receiving student's skill adopted; the others were "+
		"rejected or still wait for a batch.\n\n")
	var rows []string
	byRow := map[string][]inspect.RoutedItem{}
	for _, it := range items {
		if _, ok := byRow[it.Row]; !ok {
			rows = append(rows, it.Row)
		}
		byRow[it.Row] = append(byRow[it.Row], it)
	}
	for _, row := range rows {
		its := byRow[row]
		if row != "" {
			fmt.Fprintf(w, "### Row `%s`\n\n", cell(row))
		}
		writeRouteTable(w, inspect.CountRoutes(its))
		shown := its[:min(len(its), MaxRoutedListed)]
		fmt.Fprintf(w, "| iteration | from | to | task | form | adopted | reason |\n|---:|---|---|---|---|---|---|\n")
		for _, it := range shown {
			fmt.Fprintf(w, "| %d | `%s` | `%s` | %s | %s | %s | %s |\n", it.Iteration, cell(it.From), cell(it.To),
				cell(it.Task), cell(it.Form), adoption(it.Adopted), cell(clip(it.Reason, 120)))
		}
		if more := len(its) - len(shown); more > 0 {
			fmt.Fprintf(w, "\n%d more routed items: `harness inspect --routing` on this directory lists them all.\n", more)
		}
		fmt.Fprintln(w)
	}
}

// writeRouteTable writes one row's counts as a table, senders down,
// receivers across.
func writeRouteTable(w io.Writer, counts []inspect.RouteCount) {
	var from, to []string
	cells := map[[2]string]inspect.RouteCount{}
	for _, c := range counts {
		if !slices.Contains(from, c.From) {
			from = append(from, c.From)
		}
		if !slices.Contains(to, c.To) {
			to = append(to, c.To)
		}
		cells[[2]string{c.From, c.To}] = c
	}
	slices.Sort(from)
	slices.Sort(to)
	head, rule := "| from \\ to |", "|---|"
	for _, t := range to {
		head += " `" + cell(t) + "` |"
		rule += "---:|"
	}
	fmt.Fprintf(w, "%s\n%s\n", head, rule)
	for _, f := range from {
		line := "| `" + cell(f) + "` |"
		for _, t := range to {
			if c, ok := cells[[2]string{f, t}]; ok {
				line += fmt.Sprintf(" %d (%d) |", c.Items, c.Adopted)
			} else {
				line += " – |"
			}
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
}

// adoption says whether a batch took the item in: yes, no, or pending
// while none has decided.
func adoption(v *bool) string {
	switch {
	case v == nil:
		return "pending"
	case *v:
		return "yes"
	}
	return "no"
}

// clip is s on one line, cut to n characters.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
