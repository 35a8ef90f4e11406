// Command simtable measures, on simulated validations, how often each gate
// rule accepts a worse, a null and a better executor-skill edit and how many
// trials it spends, and prints the tables of docs/statistics.md:
//
//	go run ./harness/gate/simtable -runs 1000 -seed 1
//
// With -go it instead writes the default configuration's error-rate table,
// the one gate.ErrorRatesFor looks decisions up in:
//
//	go run ./harness/gate/simtable -runs 1000 -seed 1 -go harness/gate/defaulttable.go
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/harness/gate"
)

// variant is one row group of the rules table: a rule with its numbers.
type variant struct {
	label string
	cfg   gate.Config
}

func variants() []variant {
	base := gate.Config{Tolerance: 1e-9}
	with := func(f func(*gate.Config)) gate.Config {
		c := base
		f(&c)
		return c
	}
	posterior := func(threshold float64, k, maxK int, early bool) gate.Config {
		return with(func(c *gate.Config) {
			c.Rule, c.Threshold, c.TrialsPerTask, c.MaxTrialsPerTask, c.EarlyStop = gate.RulePosterior, threshold, k, maxK, early
		})
	}
	return []variant{
		{"no_regress, k=1 (single trial)", with(func(c *gate.Config) { c.Rule, c.TrialsPerTask = gate.RuleNoRegress, 1 })},
		{"no_regress, k=3", with(func(c *gate.Config) { c.Rule, c.TrialsPerTask = gate.RuleNoRegress, 3 })},
		{"margin 0.1, k=1", with(func(c *gate.Config) { c.Rule, c.TrialsPerTask, c.Margin = gate.RuleMargin, 1, 0.1 })},
		{"margin 0.1, k=3", with(func(c *gate.Config) { c.Rule, c.TrialsPerTask, c.Margin = gate.RuleMargin, 3, 0.1 })},
		{"margin 0.1, k=3, early stop", with(func(c *gate.Config) {
			c.Rule, c.TrialsPerTask, c.Margin, c.EarlyStop = gate.RuleMargin, 3, 0.1, true
		})},
		{"posterior 0.8, k=3 fixed", posterior(0.8, 3, 0, false)},
		{"posterior 0.8, k=3, early stop", posterior(0.8, 3, 0, true)},
		{"posterior 0.8, k=3, early stop, extend to 6", posterior(0.8, 3, 6, true)},
		{"posterior 0.7, k=3 fixed", posterior(0.7, 3, 0, false)},
		{"posterior 0.8, k=2, early stop, extend to 6", posterior(0.8, 2, 6, true)},
		{"posterior 0.75, k=1, early stop, extend to 6", posterior(0.75, 1, 6, true)},
		{"posterior 0.8, k=1, early stop, extend to 6", posterior(0.8, 1, 6, true)},
		{"posterior 0.8, k=1, early stop, extend to 8 (former default)", posterior(0.8, 1, 8, true)},
		{"posterior 0.85, k=1, early stop, extend to 10", posterior(0.85, 1, 10, true)},
		{"posterior 0.9, k=1, early stop, extend to 10", posterior(0.9, 1, 10, true)},
		{"**default** (" + describe(gate.DefaultConfig()) + ")", gate.DefaultConfig()},
	}
}

// scenarioVariants are the rows of the scenarios table: the default and
// the settings it was chosen over, at the sizes worth comparing.
func scenarioVariants() []struct {
	v     variant
	sizes []int
} {
	v := variants()
	byLabel := func(prefix string) variant {
		for _, x := range v {
			if strings.HasPrefix(x.label, prefix) {
				return x
			}
		}
		panic("no variant " + prefix)
	}
	return []struct {
		v     variant
		sizes []int
	}{
		{byLabel("posterior 0.8, k=1, early stop, extend to 8"), []int{10}},
		{byLabel("posterior 0.85, k=1, early stop, extend to 10"), []int{12}},
		{byLabel("posterior 0.9, k=1, early stop, extend to 10"), []int{12}},
		{byLabel("**default**"), []int{5, 10, 12, 15, 20}},
	}
}

func describe(c gate.Config) string {
	s := c.Rule
	switch c.Rule {
	case gate.RuleMargin:
		s += fmt.Sprintf(" %g", c.Margin)
	case gate.RulePosterior:
		s += fmt.Sprintf(" %g", c.Threshold)
	}
	s += fmt.Sprintf(", k=%d", c.TrialsPerTask)
	if c.EarlyStop {
		s += ", early stop"
		if c.Rule == gate.RulePosterior && c.MaxTrialsPerTask > c.TrialsPerTask {
			s += fmt.Sprintf(", extend to %d", c.MaxTrialsPerTask)
		}
	}
	return s
}

// tableSizes are the validation sizes the Go table holds.
var tableSizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 15, 20}

func main() {
	runs := flag.Int("runs", 1000, "simulated validations per cell")
	seed := flag.Uint64("seed", 1, "seed of the simulation")
	goFile := flag.String("go", "", "write the default configuration's error-rate table to this Go file instead")
	flag.Parse()
	var err error
	if *goFile != "" {
		err = writeGoTable(*goFile, *runs, *seed)
	} else {
		err = writeRules(os.Stdout, *runs, *seed, []int{5, 12})
		if err == nil {
			fmt.Println()
			err = writeScenarios(os.Stdout, *runs, *seed)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "simtable:", err)
		os.Exit(1)
	}
}

// writeRules prints every rule on the plain scenario (equal tasks).
func writeRules(w io.Writer, runs int, seed uint64, taskCounts []int) error {
	fmt.Fprintf(w, "Accept rates over %d simulated validations per cell (seed %d), equal tasks; trials are per validation, both arms.\n\n", runs, seed)
	fmt.Fprintln(w, "| Rule | Tasks | Worse 0.5→0.3 | Null 0.5→0.5 | Better 0.3→0.5 | Mean trials (worse / null / better) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	plain := gate.Scenarios()[0]
	for _, v := range variants() {
		for _, n := range taskCounts {
			var rates, trials [3]float64
			for i, e := range plain.Edits() {
				res, err := gate.Simulate(v.cfg, plain.Sim(e, n, runs, seed))
				if err != nil {
					return fmt.Errorf("simulate %s on %d tasks: %w", v.label, n, err)
				}
				rates[i], trials[i] = res.AcceptRate, res.MeanTrials
			}
			fmt.Fprintf(w, "| %s | %d | %.3f | %.3f | %.3f | %.1f / %.1f / %.1f |\n",
				v.label, n, rates[0], rates[1], rates[2], trials[0], trials[1], trials[2])
		}
	}
	return nil
}

// writeScenarios prints the default and its alternatives in every scenario.
func writeScenarios(w io.Writer, runs int, seed uint64) error {
	fmt.Fprintf(w, "Accept rates of worse / better edits over %d simulated validations per cell (seed %d); null is the equal-tasks drift; trials are the equal-tasks mean per validation, both arms.\n\n", runs, seed)
	head := "| Rule | Tasks"
	for _, s := range gate.Scenarios() {
		head += " | " + s.Label
	}
	fmt.Fprintln(w, head+" | Null | Worst worse / better | Mean trials (worse / null / better) | Old rule: agent errors dropped, worse / null |")
	fmt.Fprintln(w, "|---|---|"+strings.Repeat("---|", len(gate.Scenarios())+4))
	for _, sv := range scenarioVariants() {
		for _, n := range sv.sizes {
			r, err := gate.MeasureErrorRates(sv.v.cfg, n, runs, seed)
			if err != nil {
				return fmt.Errorf("%s on %d tasks: %w", sv.v.label, n, err)
			}
			row := fmt.Sprintf("| %s | %d", sv.v.label, n)
			for _, s := range r.Scenarios {
				row += fmt.Sprintf(" | %.3f / %.3f", s.AcceptWorse, s.AcceptBetter)
			}
			plainRates := r.Scenarios[0]
			var dropped [2]float64
			for i, e := range []gate.Edit{gate.EditWorse, gate.EditNull} {
				sc := gate.Scenarios()[0].Sim(e, n, runs, seed)
				sc.AgentErrors, sc.DropAgentErrors = 0.4, true
				res, err := gate.Simulate(sv.v.cfg, sc)
				if err != nil {
					return fmt.Errorf("%s on %d tasks, agent errors dropped: %w", sv.v.label, n, err)
				}
				dropped[i] = res.AcceptRate
			}
			fmt.Fprintf(w, "%s | %.3f | %.3f / %.3f | %.1f / %.1f / %.1f | %.3f / %.3f |\n", row, r.AcceptNull, r.AcceptWorse, r.AcceptBetter,
				plainRates.MeanTrials[0], plainRates.MeanTrials[1], plainRates.MeanTrials[2], dropped[0], dropped[1])
		}
	}
	return nil
}

// writeGoTable writes the default configuration's error rates at every
// size of tableSizes as Go source.
func writeGoTable(path string, runs int, seed uint64) error {
	var b bytes.Buffer
	cmd := fmt.Sprintf("go run ./harness/gate/simtable -runs %d -seed %d -go harness/gate/defaulttable.go", runs, seed)
	fmt.Fprintf(&b, "// Code generated by %s; DO NOT EDIT.\n\npackage gate\n\n", cmd)
	fmt.Fprintf(&b, "// tableCommand regenerates this file.\nconst tableCommand = %q\n\n", cmd)
	fmt.Fprintf(&b, "// tableConfig is the configuration the table was measured for.\nfunc tableConfig() Config {\n\treturn %s\n}\n\n", goConfig(gate.DefaultConfig()))
	fmt.Fprintf(&b, "// defaultTable holds the default configuration's simulated error rates by\n// validation size.\nfunc defaultTable() []ErrorRates {\n\treturn []ErrorRates{\n")
	for _, n := range tableSizes {
		r, err := gate.MeasureErrorRates(gate.DefaultConfig(), n, runs, seed)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "simtable: %d tasks done\n", n)
		fmt.Fprintf(&b, "\t\t{Tasks: %d, Runs: %d, AcceptWorse: %s, AcceptNull: %s, AcceptBetter: %s, AcceptBetterPlain: %s, MeetsBounds: %t, MeanTrials: %s, Scenarios: []ScenarioRates{\n",
			n, r.Runs, num(r.AcceptWorse), num(r.AcceptNull), num(r.AcceptBetter), num(r.AcceptBetterPlain), r.MeetsBounds, num(r.MeanTrials))
		for _, s := range r.Scenarios {
			fmt.Fprintf(&b, "\t\t\t{Scenario: %q, AcceptWorse: %s, AcceptNull: %s, AcceptBetter: %s, MeanTrials: [3]float64{%s, %s, %s}},\n",
				s.Scenario, num(s.AcceptWorse), num(s.AcceptNull), num(s.AcceptBetter), num(s.MeanTrials[0]), num(s.MeanTrials[1]), num(s.MeanTrials[2]))
		}
		fmt.Fprintf(&b, "\t\t}},\n")
	}
	fmt.Fprintf(&b, "\t}\n}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return fmt.Errorf("format the generated table: %w", err)
	}
	return os.WriteFile(path, src, 0o644)
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// goConfig writes a configuration as a Go composite literal.
func goConfig(c gate.Config) string {
	return fmt.Sprintf("Config{Rule: %q, TrialsPerTask: %d, MaxTrialsPerTask: %d, Margin: %s, Threshold: %s, Tolerance: %s, EarlyStop: %t, RequireAllUsable: %t, Tasks: %d}",
		c.Rule, c.TrialsPerTask, c.MaxTrialsPerTask, num(c.Margin), num(c.Threshold), num(c.Tolerance), c.EarlyStop, c.RequireAllUsable, c.Tasks)
}
