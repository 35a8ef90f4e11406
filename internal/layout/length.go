package layout

import (
	"fmt"
	"slices"
)

// MaxFuncLines is the longest a function outside tests may be, counted from
// its func keyword to its closing brace. Past it, a function does several
// things in a row and is split along them.
const MaxFuncLines = 80

// LongExempt names the functions that may run past MaxFuncLines, each with
// why. A name is the package path relative to Module, a dot, then the
// receiver's type and a dot for a method, then the function's name.
func LongExempt() map[string]string {
	return map[string]string{
		"harness/gate.defaultTable": "a generated table of data (one literal per validation size), rewritten by harness/gate/simtable",
	}
}

// Func is one function of the module, as the length check sees it.
type Func struct {
	Name  string // as in LongExempt: "harness/gate.defaultTable", "executor.Runner.Run"
	Pos   string // file:line, for the message
	Lines int
}

// CheckLengths returns one line per function longer than limit that exempt
// does not name, and one per exemption that no longer holds (its function is
// gone or short again), sorted.
func CheckLengths(funcs []Func, limit int, exempt map[string]string) []string {
	var out []string
	lines := map[string]int{}
	for _, f := range funcs {
		lines[f.Name] = f.Lines
		if f.Lines <= limit {
			continue
		}
		if _, ok := exempt[f.Name]; ok {
			continue
		}
		out = append(out, fmt.Sprintf("%s: func %s is %d lines (at most %d): split it along its steps, or, for a table of data, exempt it by name in LongExempt with the reason",
			f.Pos, f.Name, f.Lines, limit))
	}
	for name := range exempt {
		n, ok := lines[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("LongExempt names %s, which is not a function of the module: remove the entry", name))
		case n <= limit:
			out = append(out, fmt.Sprintf("LongExempt names %s, which is %d lines now (at most %d): remove the entry", name, n, limit))
		}
	}
	slices.Sort(out)
	return out
}
