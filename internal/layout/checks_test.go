package layout

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestUnused shows an allowed pair that no import uses being reported, and
// used pairs and "*" passing.
func TestUnused(t *testing.T) {
	tests := []struct {
		name    string
		pkgs    []Package
		allowed map[string][]string
		want    []string
	}{
		{"every pair used",
			[]Package{{Path: "config", Imports: []string{"conditions"}}, {Path: "conditions"}},
			map[string][]string{"config": {"conditions"}, "conditions": {}}, nil},
		{"planted: a pair nothing uses",
			[]Package{{Path: "harness/inspect", Imports: []string{"harness/rundir"}}},
			map[string][]string{"harness/inspect": {"harness/rundir", "harness/stats"}},
			[]string{"Allowed() lets harness/inspect import harness/stats, which it does not: remove the pair (add it back when an import needs it)"}},
		{"planted: a pair whose package imports nothing at all",
			[]Package{{Path: "conditions"}},
			map[string][]string{"conditions": {"config"}},
			[]string{"Allowed() lets conditions import config, which it does not: remove the pair (add it back when an import needs it)"}},
		{"an import of the other direction does not use the pair",
			[]Package{{Path: "config", Imports: []string{"conditions"}}},
			map[string][]string{"conditions": {"config"}, "config": {"conditions"}},
			[]string{"Allowed() lets conditions import config, which it does not: remove the pair (add it back when an import needs it)"}},
		{"anything allowed has no pairs to use",
			[]Package{{Path: "cmd/harness"}},
			map[string][]string{"cmd/harness": {"*"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unused(tt.pkgs, tt.allowed); !slices.Equal(got, tt.want) {
				t.Errorf("Unused = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestModuleUsesEveryAllowedPair holds Allowed() to the imports the module
// has, so that the rules permit what the code does and nothing more.
func TestModuleUsesEveryAllowedPair(t *testing.T) {
	for _, problem := range Unused(graph(listModule(t)), Allowed()) {
		t.Error(problem)
	}
}

// TestCheckDocTable shows a docs table that agrees with the rules passing
// and each kind of disagreement planted in one being reported.
func TestCheckDocTable(t *testing.T) {
	allowed := map[string][]string{
		"cmd/harness":    {"*"},
		"harness":        {"harness/rundir", "config"},
		"harness/rundir": {"config"},
		"harness/gate":   {},
		"harness/stats":  {},
		"config":         {},
	}
	const head = "# Title\n\nProse.\n\n| package | owns | imports of ours |\n| --- | --- | --- |\n"
	const good = "| `cmd/harness` | main | any: `harness` and the rest |\n" +
		"| `harness` | the orchestrator | `harness/rundir`, `config` (its settings) |\n" +
		"| `harness/rundir` | the format | `config` |\n" +
		"| `harness/gate`, `harness/stats` | pure rules | none |\n" +
		"| `config` | settings | none |\n"
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"agrees", head + good + "\nMore prose.\n", nil},
		{"planted: a row lists an import the rules forbid", head +
			"| `cmd/harness` | main | any |\n" +
			"| `harness` | the orchestrator | `harness/rundir`, `config`, `harness/gate` |\n" +
			"| `harness/rundir` | the format | `config` |\n" +
			"| `harness/gate`, `harness/stats` | pure rules | none |\n" +
			"| `config` | settings | none |\n",
			[]string{"docs table line 8: harness lists harness/gate, which Allowed() does not permit: fix the row or the rule"}},
		{"planted: a row misses an allowed import", head +
			"| `cmd/harness` | main | any |\n" +
			"| `harness` | the orchestrator | `harness/rundir` |\n" +
			"| `harness/rundir` | the format | `config` |\n" +
			"| `harness/gate`, `harness/stats` | pure rules | none |\n" +
			"| `config` | settings | none |\n",
			[]string{"docs table line 8: harness does not list config, which Allowed() permits: add it to the row"}},
		{"planted: a package without a row", head +
			"| `cmd/harness` | main | any |\n" +
			"| `harness` | the orchestrator | `harness/rundir`, `config` |\n" +
			"| `harness/rundir` | the format | `config` |\n" +
			"| `harness/gate` | pure rules | none |\n" +
			"| `config` | settings | none |\n",
			[]string{"docs table: harness/stats is in Allowed() but has no row: add one with what it owns and imports"}},
		{"planted: a row for a package the rules do not know", head + good +
			"| `helpers` | odds and ends | none |\n",
			[]string{"docs table line 12: helpers is not in Allowed(): remove the row or add the package to the rules"}},
		{"planted: an import listed above its importer", head +
			"| `cmd/harness` | main | any |\n" +
			"| `harness/rundir` | the format | `config` |\n" +
			"| `harness` | the orchestrator | `harness/rundir`, `config` |\n" +
			"| `harness/gate`, `harness/stats` | pure rules | none |\n" +
			"| `config` | settings | none |\n",
			[]string{"docs table line 9: harness imports harness/rundir, which is listed above it: move the rows so that every package sits above what it imports"}},
		{"planted: a composition root the docs do not say imports anything", head +
			"| `cmd/harness` | main | `harness` |\n" +
			"| `harness` | the orchestrator | `harness/rundir`, `config` |\n" +
			"| `harness/rundir` | the format | `config` |\n" +
			"| `harness/gate`, `harness/stats` | pure rules | none |\n" +
			"| `config` | settings | none |\n",
			[]string{`docs table line 7: cmd/harness may import anything on one side only: say "any" in the row exactly when Allowed() gives it "*"`}},
		{"planted: no table", "# Title\n\nOnly prose.\n",
			[]string{"docs: no package table (a table headed | package | owns | imports of ours |): the import rules must be written down"}},
		{"planted: an imports cell that names nothing", head +
			"| `cmd/harness` | main | any |\n" +
			"| `harness` | the orchestrator | rundir and config |\n",
			[]string{`docs table line 8: the imports cell "rundir and config" is neither "none", "any ...", nor packages in backticks`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckDocTable(tt.doc, allowed); !slices.Equal(got, tt.want) {
				t.Errorf("CheckDocTable =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestDocsTableMatchesRules holds docs/architecture.md's package table to
// Allowed(): the page people read and the rules the tests enforce are one.
func TestDocsTableMatchesRules(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(moduleRoot(t), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range CheckDocTable(string(doc), Allowed()) {
		t.Error(problem)
	}
}

// TestCheckLengths shows a long function failing, an exempted table
// passing, and an exemption that no longer holds failing.
func TestCheckLengths(t *testing.T) {
	exempt := map[string]string{"harness/gate.defaultTable": "data"}
	tests := []struct {
		name  string
		funcs []Func
		want  []string
	}{
		{"short functions and an exempted table",
			[]Func{{"harness.Run.iteration", "harness/run.go:10", 80}, {"harness/gate.defaultTable", "harness/gate/defaulttable.go:15", 102}}, nil},
		{"planted: one line too long",
			[]Func{{"harness/inspect.ReadRunView", "harness/inspect/run.go:215", 81}, {"harness/gate.defaultTable", "harness/gate/defaulttable.go:15", 102}},
			[]string{"harness/inspect/run.go:215: func harness/inspect.ReadRunView is 81 lines (at most 80): split it along its steps, or, for a table of data, exempt it by name in LongExempt with the reason"}},
		{"planted: an exempted function that is short now",
			[]Func{{"harness/gate.defaultTable", "harness/gate/defaulttable.go:15", 40}},
			[]string{"LongExempt names harness/gate.defaultTable, which is 40 lines now (at most 80): remove the entry"}},
		{"planted: an exempted function that is gone",
			[]Func{{"harness.Run.iteration", "harness/run.go:10", 20}},
			[]string{"LongExempt names harness/gate.defaultTable, which is not a function of the module: remove the entry"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckLengths(tt.funcs, 80, exempt); !slices.Equal(got, tt.want) {
				t.Errorf("CheckLengths = %q, want %q", got, tt.want)
			}
		})
	}
}
