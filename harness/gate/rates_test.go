package gate

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTableIsTheDefaults checks that the generated table was measured for
// the current default configuration, that it holds the default's own
// validation size, and that there the default keeps its bounds in every
// scenario. A changed default fails here until the table is regenerated.
func TestTableIsTheDefaults(t *testing.T) {
	if !tableConfig().same(DefaultConfig()) {
		t.Fatalf("defaulttable.go was measured for %+v, not the default %+v; regenerate it with %s",
			tableConfig(), DefaultConfig(), tableCommand)
	}
	var found bool
	for _, r := range defaultTable() {
		// The summary must follow from the scenarios it sums up.
		want := r
		want.Scenarios = append([]ScenarioRates(nil), r.Scenarios...)
		want.summarize()
		if want.AcceptWorse != r.AcceptWorse || want.AcceptBetter != r.AcceptBetter || want.AcceptNull != r.AcceptNull ||
			want.MeanTrials != r.MeanTrials || want.MeetsBounds != r.MeetsBounds {
			t.Errorf("%d tasks: summary %+v does not follow from its scenarios (%+v)", r.Tasks, r, want)
		}
		if len(r.Scenarios) != len(Scenarios()) {
			t.Errorf("%d tasks: %d scenarios, want %d", r.Tasks, len(r.Scenarios), len(Scenarios()))
		}
		if r.Tasks != DefaultConfig().Tasks {
			continue
		}
		found = true
		for _, s := range r.Scenarios {
			if s.AcceptWorse > MaxAcceptWorse {
				t.Errorf("at its %d tasks the default accepts worse %.3f in scenario %s; want <= %.2f",
					r.Tasks, s.AcceptWorse, s.Scenario, MaxAcceptWorse)
			}
		}
		if r.AcceptNull > MaxAcceptNull || r.AcceptBetterPlain < MinAcceptBetter || !r.MeetsBounds {
			t.Errorf("at its %d tasks the default accepts null %.3f, better %.3f; want <= %.2f and >= %.2f",
				r.Tasks, r.AcceptNull, r.AcceptBetterPlain, MaxAcceptNull, MinAcceptBetter)
		}
	}
	if !found {
		t.Errorf("the table has no row for the default's %d tasks", DefaultConfig().Tasks)
	}
}

// TestDefaultKeepsItsPromise simulates the default at its validation size
// in every scenario with a few hundred runs: a loose band around the bounds
// (several standard errors wide) that a broken gate or simulator falls out
// of, while the table holds the precise numbers.
func TestDefaultKeepsItsPromise(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 100
	}
	r, err := MeasureErrorRates(DefaultConfig(), DefaultConfig().Tasks, runs, 2026)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Scenarios {
		t.Logf("%s: worse %.3f, better %.3f, trials %v", s.Scenario, s.AcceptWorse, s.AcceptBetter, s.MeanTrials)
		if s.AcceptWorse > 0.10 {
			t.Errorf("%s: a worse edit accepted %.3f of the time, want well under 0.10", s.Scenario, s.AcceptWorse)
		}
		if s.AcceptBetter < 0.55 {
			t.Errorf("%s: a better edit accepted %.3f of the time, want well over 0.55", s.Scenario, s.AcceptBetter)
		}
	}
	// Drift near 1 - threshold: an edit that changes nothing is neither
	// always refused nor waved through, and stays near its bound.
	if r.AcceptNull < 0.02 || r.AcceptNull > 0.16 {
		t.Errorf("a null edit accepted %.3f of the time, want between 0.02 and 0.16", r.AcceptNull)
	}
	if r.AcceptBetterPlain < 0.70 {
		t.Errorf("a better edit accepted %.3f of the time in the plain scenario, want well over 0.70", r.AcceptBetterPlain)
	}
}

// TestErrorRatesFor checks where each decision's rates come from: the table
// for the default at a tabulated size (whatever the seed), a simulation
// otherwise, and an error for what cannot be rated.
func TestErrorRatesFor(t *testing.T) {
	seeded := DefaultConfig()
	seeded.Seed, seeded.Tasks = 99, 0
	fixed := Config{Rule: RuleNoRegress, TrialsPerTask: 1, Tolerance: 1e-9}
	tests := []struct {
		name    string
		cfg     Config
		tasks   int
		source  string
		wantErr string
	}{
		{"default at its size", DefaultConfig(), DefaultConfig().Tasks, "table", ""},
		{"default with a run's seed", seeded, 3, "table", ""},
		{"another rule", fixed, 3, "simulation", ""},
		{"no tasks", DefaultConfig(), 0, "", "at least 1 validation task"},
		{"bad config", Config{Rule: "coin"}, 3, "", `unknown gate rule "coin"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ErrorRatesFor(tt.cfg, tt.tasks)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(r.Source, tt.source) || r.Tasks != tt.tasks || len(r.Scenarios) != len(Scenarios()) {
				t.Errorf("rates for %d tasks from %q with %d scenarios, want %d tasks from %q with %d",
					r.Tasks, r.Source, len(r.Scenarios), tt.tasks, tt.source, len(Scenarios()))
			}
			if tt.source == "simulation" && r.Runs != QuickRuns {
				t.Errorf("simulated %d runs, want %d", r.Runs, QuickRuns)
			}
		})
	}
}

// TestNoRegressRatesMatchAnalysis checks ErrorRatesFor's simulation path
// against exact values: no_regress with one trial accepts worse with
// probability (1 - 0.5·0.7)^n in the plain scenario.
func TestNoRegressRatesMatchAnalysis(t *testing.T) {
	cfg := Config{Rule: RuleNoRegress, TrialsPerTask: 1, Tolerance: 1e-9}
	r, err := ErrorRatesFor(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Pow(1-0.5*0.7, 3)
	if got := r.Scenarios[0].AcceptWorse; math.Abs(got-want) > 4*math.Sqrt(want*(1-want)/QuickRuns) {
		t.Errorf("plain worse accepted %.3f, want %.3f", got, want)
	}
	if r.MeanTrials != 6 || r.MeetsBounds {
		t.Errorf("mean trials %v, meets bounds %v; want 6 and false", r.MeanTrials, r.MeetsBounds)
	}
}

func TestDecisionRecordsErrorRates(t *testing.T) {
	r, err := ErrorRatesFor(DefaultConfig(), DefaultConfig().Tasks)
	if err != nil {
		t.Fatal(err)
	}
	d := Decision{Rule: RulePosterior, Numbers: map[string]float64{}, Final: true, ErrorRates: &r}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		ErrorRates map[string]any `json:"error_rates"`
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"tasks", "accept_worse", "accept_better", "accept_null", "meets_bounds", "mean_trials", "scenarios", "runs", "source"} {
		if _, ok := back.ErrorRates[key]; !ok {
			t.Errorf("recorded decision lacks error_rates.%s: %s", key, data)
		}
	}
	if got := back.ErrorRates["tasks"]; got != float64(DefaultConfig().Tasks) {
		t.Errorf("error_rates.tasks = %v, want %d", got, DefaultConfig().Tasks)
	}
}

func TestExpectedTrials(t *testing.T) {
	fixed := Config{Rule: RulePosterior, Threshold: 0.8, TrialsPerTask: 3, Tolerance: 1e-9}
	early := Config{Rule: RuleMargin, Margin: 0.1, TrialsPerTask: 3, EarlyStop: true, Tolerance: 1e-9}
	var atDefault float64
	for _, r := range defaultTable() {
		if r.Tasks == DefaultConfig().Tasks {
			atDefault = r.MeanTrials
		}
	}
	tests := []struct {
		name     string
		cfg      Config
		tasks    int
		lo, hi   float64
		wantErr  string
		describe string
	}{
		{"fixed k is exact", fixed, 4, 24, 24, "", ""},
		{"default from the table", DefaultConfig(), DefaultConfig().Tasks, atDefault, atDefault, "", ""},
		{"early stop spends between one round and all", early, 4, 8, 24, "", ""},
		{"no tasks cost nothing", DefaultConfig(), 0, 0, 0, "", ""},
		{"bad config", Config{Rule: "coin"}, 4, 0, 0, "unknown gate rule", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExpectedTrials(tt.cfg, tt.tasks)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got < tt.lo || got > tt.hi {
				t.Errorf("expected trials %v (%v), want in [%v, %v]", got, err, tt.lo, tt.hi)
			}
		})
	}
	if atDefault <= 2*float64(DefaultConfig().Tasks) {
		t.Errorf("the table's mean trials at the default size, %v, is below one round", atDefault)
	}
}

// TestSimulatedScenariosMatchAnalysis checks the data generator of each
// scenario against exact acceptance probabilities of no_regress with one
// trial per task, which accepts unless some usable task regressed (current
// 1, candidate 0) and rejects when no task is usable.
func TestSimulatedScenariosMatchAnalysis(t *testing.T) {
	cfg := Config{Rule: RuleNoRegress, TrialsPerTask: 1, Tolerance: 1e-9}
	const tasks, runs = 4, 6000
	// Per task: P(regressed) under task difficulty integrates the Beta(2,2)
	// density 6u(1-u) by the midpoint rule.
	regressBeta := func(e Edit) float64 {
		const steps = 20000
		var sum float64
		for i := range steps {
			u := (float64(i) + 0.5) / steps
			sum += 6 * u * (1 - u) * shiftOdds(e.PCurrent, u) * (1 - shiftOdds(e.PCandidate, u)) / steps
		}
		return sum
	}
	plainRegress := func(e Edit) float64 { return e.PCurrent * (1 - e.PCandidate) }
	tests := []struct {
		name string
		sc   SimConfig
		want float64
	}{
		{"plain", Scenarios()[0].Sim(EditWorse, tasks, runs, 11), math.Pow(1-plainRegress(EditWorse), tasks)},
		{"difficulty", Scenarios()[1].Sim(EditWorse, tasks, runs, 12), math.Pow(1-regressBeta(EditWorse), tasks)},
		// Each trial is lost with probability 0.2; a task counts when both
		// of its trials survive.
		{"unusable", Scenarios()[2].Sim(EditBetter, tasks, runs, 13),
			math.Pow(1-0.64*plainRegress(EditBetter), tasks) - math.Pow(1-0.64, tasks)},
		// Agent errors count as failures: nothing changes.
		{"agent errors counted", Scenarios()[3].Sim(EditNull, tasks, runs, 14), math.Pow(1-plainRegress(EditNull), tasks)},
		// The old rule dropped them: a candidate failure becomes an agent
		// error (lost) with probability 0.4, so a task regresses with
		// probability pCur·(1-pCand)·0.6 and is lost with (1-pCand)·0.4.
		{"agent errors dropped", SimConfig{Tasks: tasks, PCurrent: 0.5, PCandidate: 0.5, Runs: runs, Seed: 15, AgentErrors: 0.4, DropAgentErrors: true},
			math.Pow(1-0.5*0.5*0.6, tasks) - math.Pow(0.5*0.4, tasks)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Simulate(cfg, tt.sc)
			if err != nil {
				t.Fatal(err)
			}
			se := math.Sqrt(tt.want * (1 - tt.want) / runs)
			if math.Abs(res.AcceptRate-tt.want) > 4*se {
				t.Errorf("accept rate %.4f, want %.4f (4 standard errors: %.4f)", res.AcceptRate, tt.want, 4*se)
			}
		})
	}
}

func TestBeta22AndShiftOdds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	var sum, sq float64
	for range n {
		u := beta22(rng)
		sum += u
		sq += u * u
	}
	mean := sum / n
	variance := sq/n - mean*mean
	// Beta(2, 2): mean 1/2, variance 1/20.
	if math.Abs(mean-0.5) > 0.003 || math.Abs(variance-0.05) > 0.002 {
		t.Errorf("beta22 mean %.4f, variance %.4f; want 0.5 and 0.05", mean, variance)
	}
	for _, tt := range []struct{ p, u, want float64 }{
		{0.5, 0.3, 0.3}, {0.3, 0.5, 0.3}, {0.5, 0.5, 0.5}, {0.3, 0.7, 0.5}, {0, 0.9, 0}, {1, 0.1, 1}, {0.4, 1, 1},
	} {
		if got := shiftOdds(tt.p, tt.u); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("shiftOdds(%v, %v) = %v, want %v", tt.p, tt.u, got, tt.want)
		}
	}
}

func TestNullAdoptionPerRun(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		n    int
		want float64
	}{{0.1, 0, 0}, {0.1, 1, 0.1}, {0.1, 10, 1 - math.Pow(0.9, 10)}, {0.2, 3, 1 - 0.8*0.8*0.8}, {0, 50, 0}} {
		if got := NullAdoptionPerRun(tc.p, tc.n); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("NullAdoptionPerRun(%v, %d) = %v, want %v", tc.p, tc.n, got, tc.want)
		}
	}
}
