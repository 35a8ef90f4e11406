package gate

import (
	"fmt"
	"math"
)

// The error bounds the default configuration is tuned to hold at its
// validation size: a worse edit accepted at most MaxAcceptWorse of the
// time in every scenario of Scenarios, an edit that changes nothing at
// most MaxAcceptNull (it compounds over a run's decisions), and a better
// edit at least MinAcceptBetter of the time in the plain scenario.
const (
	MaxAcceptWorse  = 0.05
	MaxAcceptNull   = 0.10
	MinAcceptBetter = 0.80
)

// Edit is a simulated skill change: the success rate under the current
// skill and under the candidate.
type Edit struct {
	Name       string  `json:"name"`
	PCurrent   float64 `json:"p_current"`
	PCandidate float64 `json:"p_candidate"`
}

// The three edits the error rates are stated for.
var (
	EditWorse  = Edit{Name: "worse", PCurrent: 0.5, PCandidate: 0.3}
	EditNull   = Edit{Name: "null", PCurrent: 0.5, PCandidate: 0.5}
	EditBetter = Edit{Name: "better", PCurrent: 0.3, PCandidate: 0.5}
)

// Scenario is a way the simulated validation departs from equal, clean
// tasks (see SimConfig).
type Scenario struct {
	Name        string
	Label       string
	Difficulty  bool
	Unusable    float64
	AgentErrors float64
}

// Scenarios lists the conditions the gate's error rates are measured
// under: equal tasks; task difficulty from Beta(2, 2); 20% of trials
// unusable; 40% of the candidate's failures ending as agent errors (which
// count as failures); and the last three at once.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "plain", Label: "equal tasks"},
		{Name: "difficulty", Label: "task rates from Beta(2,2)", Difficulty: true},
		{Name: "unusable", Label: "20% unusable", Unusable: 0.2},
		{Name: "agent_errors", Label: "40% agent errors", AgentErrors: 0.4},
		{Name: "all", Label: "all three", Difficulty: true, Unusable: 0.2, AgentErrors: 0.4},
	}
}

// Sim returns the simulation of an edit under the scenario.
func (s Scenario) Sim(e Edit, tasks, runs int, seed uint64) SimConfig {
	return SimConfig{Tasks: tasks, PCurrent: e.PCurrent, PCandidate: e.PCandidate, Runs: runs, Seed: seed,
		Difficulty: s.Difficulty, Unusable: s.Unusable, AgentErrors: s.AgentErrors}
}

// Edits are the edits a scenario is simulated with: all three in the plain
// scenario (the null edit gives the drift rate and, with the others, the
// expected cost); worse and better elsewhere.
func (s Scenario) Edits() []Edit {
	if s.Name == "plain" {
		return []Edit{EditWorse, EditNull, EditBetter}
	}
	return []Edit{EditWorse, EditBetter}
}

// ScenarioRates are the acceptance rates measured in one scenario; a rate
// is -1 when the scenario was not simulated with that edit.
type ScenarioRates struct {
	Scenario     string  `json:"scenario"`
	AcceptWorse  float64 `json:"accept_worse"`
	AcceptNull   float64 `json:"accept_null"`
	AcceptBetter float64 `json:"accept_better"`
	// MeanTrials are the mean trials per validation, both arms, for the
	// worse, null and better edits (-1 when not simulated).
	MeanTrials [3]float64 `json:"mean_trials"`
}

// ErrorRates are the simulated error rates of a gate configuration at one
// validation size: how often it accepts a worse edit (0.5 -> 0.3) and a
// better one (0.3 -> 0.5), in the worst of the Scenarios, and how often an
// edit that changes nothing (drift).
type ErrorRates struct {
	Tasks int `json:"tasks"`
	// AcceptWorse is the highest acceptance of a worse edit over the
	// scenarios, AcceptBetter the lowest of a better edit; AcceptNull is the
	// plain scenario's acceptance of a null edit, AcceptBetterPlain its
	// acceptance of a better one.
	AcceptWorse       float64 `json:"accept_worse"`
	AcceptNull        float64 `json:"accept_null"`
	AcceptBetter      float64 `json:"accept_better"`
	AcceptBetterPlain float64 `json:"accept_better_plain"`
	// MeetsBounds reports AcceptWorse <= MaxAcceptWorse, AcceptNull <=
	// MaxAcceptNull and AcceptBetterPlain >= MinAcceptBetter.
	MeetsBounds bool `json:"meets_bounds"`
	// MeanTrials is the expected number of trials per decision, both arms:
	// the mean over the worse, null and better edits of the plain scenario.
	MeanTrials float64         `json:"mean_trials"`
	Scenarios  []ScenarioRates `json:"scenarios"`
	// Runs is the number of simulated validations per edit and scenario;
	// Source says where the numbers come from.
	Runs   int    `json:"runs"`
	Source string `json:"source"`
}

// QuickRuns is how many validations per edit and scenario ErrorRatesFor
// simulates for a configuration or size the table does not hold: enough
// for a standard error of at most 0.03, in a few seconds.
const QuickRuns = 300

// quickSeed seeds those simulations, so the numbers are reproducible.
const quickSeed = 1

// ErrorRatesFor returns the simulated error rates of cfg at the given
// number of validation tasks. For the default configuration at a size the
// table in defaulttable.go holds (written by the simtable command with
// 1000 runs per cell) it looks them up; otherwise it simulates QuickRuns
// validations per cell, which takes seconds. The configuration's Seed and
// Tasks do not matter.
func ErrorRatesFor(cfg Config, tasks int) (ErrorRates, error) {
	if tasks < 1 {
		return ErrorRates{}, fmt.Errorf("error rates need at least 1 validation task, got %d", tasks)
	}
	if err := cfg.Validate(); err != nil {
		return ErrorRates{}, fmt.Errorf("error rates: %w", err)
	}
	if tableConfig().same(cfg) {
		for _, r := range defaultTable() {
			if r.Tasks == tasks {
				r.Source = "table of the default configuration (" + tableCommand + ")"
				return r, nil
			}
		}
	}
	r, err := MeasureErrorRates(cfg, tasks, QuickRuns, quickSeed)
	if err != nil {
		return ErrorRates{}, err
	}
	r.Source = fmt.Sprintf("simulation of %d validations per edit and scenario (seed %d)", QuickRuns, quickSeed)
	return r, nil
}

// MeasureErrorRates simulates cfg on the given number of tasks: runs
// validations of each edit in each scenario, all with the same seed.
func MeasureErrorRates(cfg Config, tasks, runs int, seed uint64) (ErrorRates, error) {
	out := ErrorRates{Tasks: tasks, Runs: runs, AcceptBetter: 1}
	for _, s := range Scenarios() {
		sr := ScenarioRates{Scenario: s.Name, AcceptWorse: -1, AcceptNull: -1, AcceptBetter: -1, MeanTrials: [3]float64{-1, -1, -1}}
		for _, e := range s.Edits() {
			res, err := Simulate(cfg, s.Sim(e, tasks, runs, seed))
			if err != nil {
				return ErrorRates{}, fmt.Errorf("simulate the %s edit (%s) on %d tasks: %w", e.Name, s.Label, tasks, err)
			}
			switch e {
			case EditWorse:
				sr.AcceptWorse, sr.MeanTrials[0] = res.AcceptRate, res.MeanTrials
			case EditNull:
				sr.AcceptNull, sr.MeanTrials[1] = res.AcceptRate, res.MeanTrials
			case EditBetter:
				sr.AcceptBetter, sr.MeanTrials[2] = res.AcceptRate, res.MeanTrials
			}
		}
		out.Scenarios = append(out.Scenarios, sr)
	}
	out.summarize()
	return out, nil
}

// summarize fills the worst cases, the drift, the cost and the verdict from
// the scenarios.
func (r *ErrorRates) summarize() {
	r.AcceptWorse, r.AcceptBetter = 0, 1
	for _, s := range r.Scenarios {
		if s.AcceptWorse >= 0 {
			r.AcceptWorse = math.Max(r.AcceptWorse, s.AcceptWorse)
		}
		if s.AcceptBetter >= 0 {
			r.AcceptBetter = math.Min(r.AcceptBetter, s.AcceptBetter)
		}
		if s.Scenario == "plain" {
			r.AcceptNull, r.AcceptBetterPlain = s.AcceptNull, s.AcceptBetter
			r.MeanTrials = (s.MeanTrials[0] + s.MeanTrials[1] + s.MeanTrials[2]) / 3
		}
	}
	r.MeetsBounds = r.AcceptWorse <= MaxAcceptWorse && r.AcceptNull <= MaxAcceptNull && r.AcceptBetterPlain >= MinAcceptBetter
}

// ExpectedTrials is the expected number of validation trials (both arms)
// one gate decision of cfg spends on the given number of tasks: exactly
// 2·k·tasks without early stopping, else the simulated mean over a worse, a
// null and a better edit (ErrorRatesFor's MeanTrials). Cost estimates
// multiply it by the number of candidates expected to reach the gate.
func ExpectedTrials(cfg Config, tasks int) (float64, error) {
	if err := cfg.Validate(); err != nil {
		return 0, fmt.Errorf("expected validation trials: %w", err)
	}
	if tasks < 1 {
		return 0, nil
	}
	if !cfg.EarlyStop {
		return float64(2 * cfg.TrialsPerTask * tasks), nil
	}
	if tableConfig().same(cfg) {
		for _, r := range defaultTable() {
			if r.Tasks == tasks {
				return r.MeanTrials, nil
			}
		}
	}
	// Only the cost is wanted: the plain scenario's three edits suffice.
	var sum float64
	for _, e := range []Edit{EditWorse, EditNull, EditBetter} {
		res, err := Simulate(cfg, Scenarios()[0].Sim(e, tasks, QuickRuns, quickSeed))
		if err != nil {
			return 0, fmt.Errorf("expected validation trials: %w", err)
		}
		sum += res.MeanTrials
	}
	return sum / 3, nil
}

// same reports whether two configurations decide alike: equal in everything
// but the Monte Carlo seed and the advised task count.
func (c Config) same(o Config) bool {
	c.Seed, o.Seed = 0, 0
	c.Tasks, o.Tasks = 0, 0
	return c == o
}

// NullAdoptionPerRun is the chance that a run adopts at least one edit
// that changes nothing over decisions independent gate decisions, each
// adopting one with probability perDecision: 1 - (1 - perDecision)^n.
// Small per-decision rates compound: 10% over 10 decisions is 65%.
func NullAdoptionPerRun(perDecision float64, decisions int) float64 {
	if decisions <= 0 {
		return 0
	}
	return 1 - math.Pow(1-perDecision, float64(decisions))
}
