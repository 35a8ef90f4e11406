package harness

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/stats"
)

func TestSplitTasks(t *testing.T) {
	tasks := []string{"a", "b", "c", "d", "e", "f"}
	tests := []struct {
		name    string
		opts    SplitOptions
		want    Splits
		wantErr string
	}{
		{"counts in order", SplitOptions{Spec: "3:2:1"}, Splits{Evolve: []string{"a", "b", "c"}, Validate: []string{"d", "e"}, HeldOut: []string{"f"}}, ""},
		{"no validation split", SplitOptions{Spec: "5:0:1"}, Splits{Evolve: []string{"a", "b", "c", "d", "e"}, Validate: []string{}, HeldOut: []string{"f"}}, ""},
		{"explicit lists", SplitOptions{Validate: []string{"x"}, HeldOut: []string{"y", "z"}}, Splits{Evolve: tasks, Validate: []string{"x"}, HeldOut: []string{"y", "z"}}, ""},
		{"counts that do not add up", SplitOptions{Spec: "3:2:2"}, Splits{}, "adds up to 7 tasks, but 6 are listed"},
		{"two counts", SplitOptions{Spec: "3:3"}, Splits{}, "want three counts"},
		{"a negative count", SplitOptions{Spec: "7:-1:0"}, Splits{}, "is not a count"},
		{"no evolve task", SplitOptions{Spec: "0:3:3"}, Splits{}, "needs at least one task"},
		{"both ways at once", SplitOptions{Spec: "3:2:1", HeldOut: []string{"z"}}, Splits{}, "cannot be combined"},
		{"held out and evolved", SplitOptions{HeldOut: []string{"c"}}, Splits{}, `task "c" is in both the evolve and the held-out split`},
		{"validated and held out", SplitOptions{Validate: []string{"x"}, HeldOut: []string{"x"}}, Splits{}, `task "x" is in both the validate and the held-out split`},
		{"validated and evolved", SplitOptions{Validate: []string{"a"}}, Splits{}, `task "a" is in both the evolve and the validate split`},
		{"a path", SplitOptions{HeldOut: []string{"../x"}}, Splits{}, "--heldout-tasks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := splitTasks(tasks, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Evolve, tt.want.Evolve) || !slices.Equal(got.Validate, tt.want.Validate) || !slices.Equal(got.HeldOut, tt.want.HeldOut) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPlanWithSplits(t *testing.T) {
	tests := []struct {
		name    string
		tweak   func(*config.Config)
		opts    PlanOptions
		wantErr string
		check   func(t *testing.T, p *Plan)
	}{
		{"a split plans evaluation trials", nil, PlanOptions{Tasks: []string{"a", "b", "c", "d", "e", "f"}, Split: SplitOptions{Spec: "3:2:1"}},
			"", func(t *testing.T, p *Plan) {
				if !slices.Equal(p.Tasks, []string{"a", "b", "c"}) || !slices.Equal(p.ValidateTasks, []string{"d", "e"}) || !slices.Equal(p.HeldOutTasks, []string{"f"}) {
					t.Errorf("splits %v %v %v", p.Tasks, p.ValidateTasks, p.HeldOutTasks)
				}
				if p.Trials != 3*2 || p.EvalTrials != 3 || p.EvaluationTrials != 2*1*3 {
					t.Errorf("trials %d, eval trials per task %d, evaluation trials %d", p.Trials, p.EvalTrials, p.EvaluationTrials)
				}
				if !slices.Equal(p.Images, []string{"a", "b", "c", "d", "e", "f"}) {
					t.Errorf("images %v: every split's task needs its image", p.Images)
				}
			}},
		{"a pool beside a validation split", func(c *config.Config) { c.Validation.Pool = []string{"x"} },
			PlanOptions{Tasks: []string{"a", "b"}, Split: SplitOptions{Validate: []string{"c"}}}, "keep one", nil},
		{"a pool holding a held-out task", func(c *config.Config) { c.Validation.Pool = []string{"c"} },
			PlanOptions{Tasks: []string{"a", "b"}, Split: SplitOptions{HeldOut: []string{"c"}}}, "held-out tasks are only ever evaluated", nil},
		{"a set known only at the start", nil, PlanOptions{TaskSet: "skillsbench-all", Split: SplitOptions{Spec: "1:1:1"}}, "cannot be split", nil},
		{"no trials per held-out task", func(c *config.Config) { c.Evaluation.TrialsPerTask = 0 },
			PlanOptions{Tasks: []string{"a"}, Split: SplitOptions{HeldOut: []string{"b"}}}, "trials_per_task of at least 1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, tt.tweak)
			o := tt.opts
			o.Iterations, o.Condition = 2, "no_feedback"
			p, err := BuildRunPlan(cfg, o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, p)
		})
	}
}

func TestPlanStatesItsPower(t *testing.T) {
	tests := []struct {
		name       string
		tweak      func(*config.Config)
		opts       PlanOptions
		estimand   string
		detectable bool
	}{
		{"few tasks cannot detect a small effect", nil, PlanOptions{Tasks: []string{"a", "b", "c"}, Iterations: 3}, "last_n", false},
		{"many tasks detect a large effect", func(c *config.Config) { c.Stats.EffectOfInterest = 0.5 },
			PlanOptions{Tasks: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, Iterations: 10}, "last_n", true},
		{"held-out tasks are the headline", nil, PlanOptions{Tasks: []string{"a", "b", "c", "d"}, Iterations: 3, Split: SplitOptions{Spec: "2:0:2"}}, "held_out", false},
		{"two held-out tasks cannot reach significance", nil, PlanOptions{Tasks: []string{"a", "b", "c", "d", "e", "f"}, Iterations: 3, Split: SplitOptions{Spec: "2:2:2"}}, "held_out", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Condition = "no_feedback"
			p, err := BuildRunPlan(testConfig(t, tt.tweak), o)
			if err != nil {
				t.Fatal(err)
			}
			pw := p.Power
			if pw == nil || pw.Estimand != tt.estimand || pw.Detectable != tt.detectable || pw.Test != "sign-flip" {
				t.Fatalf("power %+v, want estimand %s, detectable %v", pw, tt.estimand, tt.detectable)
			}
			if pw.MinDetectable != nil && !(*pw.MinDetectable > 0 && *pw.MinDetectable <= 1) {
				t.Errorf("min detectable difference %v outside (0, 1]", *pw.MinDetectable)
			}
			notes := strings.Join(p.Notes, "\n")
			warned := strings.Contains(notes, "cannot tell")
			if warned == tt.detectable {
				t.Errorf("notes %q: a warning is due exactly when the effect is not detectable", p.Notes)
			}
			// An undetectable effect comes with designs that detect it.
			if !tt.detectable && (len(pw.Advice) == 0 || !strings.Contains(notes, "seeds x")) {
				t.Errorf("advice %+v, notes %q: want seeds x tasks that detect the effect", pw.Advice, p.Notes)
			}
			for _, a := range pw.Advice {
				d := stats.Design{Tasks: a.Tasks, Trials: pw.TrialsPerTask, Seeds: a.Seeds}
				if got, err := stats.Power(d, stats.AssumedVariance, pw.EffectOfInterest); err != nil || got < stats.PowerTarget {
					t.Errorf("advised %+v has power %v (%v) at %v", a, got, err, pw.EffectOfInterest)
				}
			}
		})
	}
}

// Estimates measured from a pilot run come within a factor 1.5 of what a
// longer run of the same design spends, validation trials included.
func TestEstimateFromAPilotRun(t *testing.T) {
	tweak := func(c *config.Config) {
		c.Experiment.AdvisorBufferMax = 3
		c.Experiment.CoevoInterval = 2
	}
	tasks := []string{"a", "b", "c"}
	pilot := newTestRun(t, "learned_mediator", conditions.PolicyAll, tasks, 2, tweak)
	pilot.execute(t)

	const iterations = 6
	p, err := BuildRunPlan(testConfig(t, tweak), PlanOptions{Tasks: tasks, Condition: "learned_mediator", Policy: conditions.PolicyAll,
		Iterations: iterations, EstimateFrom: pilot.run.Dir.Path})
	if err != nil {
		t.Fatal(err)
	}
	if p.EstimatedFrom != pilot.run.Dir.Path || !strings.Contains(strings.Join(p.Notes, "\n"), "measured from") {
		t.Errorf("estimated from %q, notes %q", p.EstimatedFrom, p.Notes)
	}
	full := newTestRun(t, "learned_mediator", conditions.PolicyAll, tasks, iterations, tweak)
	full.execute(t)
	spent := full.run.Ledger.Snapshot().Total
	got, want := float64(p.EstimatedTokens), float64(spent.InputTokens+spent.OutputTokens)
	if got < want/1.5 || got > want*1.5 {
		t.Errorf("estimated %v tokens, the run spent %v: not within a factor 1.5", got, want)
	}
	t.Logf("measured estimate %v, spent %v tokens", got, want)
}

func TestEstimateFromRefusesWhatItCannotMeasure(t *testing.T) {
	_, err := BuildRunPlan(testConfig(t, nil), PlanOptions{Tasks: []string{"a"}, Condition: "no_feedback", Iterations: 1, EstimateFrom: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "--estimate-from") {
		t.Errorf("error %v, want one naming --estimate-from", err)
	}
}

func TestPlanCountsExpectedValidationTrials(t *testing.T) {
	tweak := func(c *config.Config) { c.Experiment.AdvisorBufferMax = 3 }
	tests := []struct {
		name string
		cond conditions.Condition
		pol  conditions.Policy
		want bool
	}{
		{"executor updates reach the gate", conditions.LearnedMediator, conditions.PolicyAll, true},
		{"no executor updates, no validation", conditions.LearnedMediator, conditions.Policy{Planner: true}, false},
		{"no feedback, no proposals", conditions.NoFeedback, conditions.PolicyNone, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := BuildRunPlan(testConfig(t, tweak), PlanOptions{Tasks: []string{"a", "b", "c"}, Condition: tt.cond, Policy: tt.pol, Iterations: 6})
			if err != nil {
				t.Fatal(err)
			}
			if (p.ValidationTrials > 0) != tt.want {
				t.Errorf("%d expected validation trials", p.ValidationTrials)
			}
			// Six batches of three proposals, each decided on the three
			// tasks that proposed: at least two trials per task and arm.
			if tt.want && p.ValidationTrials < 6*2*3 {
				t.Errorf("%d expected validation trials, want at least %d", p.ValidationTrials, 6*2*3)
			}
		})
	}
}

// The dry run states the gate's null adoption per decision and compounded
// over a row's expected decisions.
func TestPlanStatesTheGatesNullAdoption(t *testing.T) {
	tweak := func(c *config.Config) { c.Experiment.AdvisorBufferMax = 3 }
	p, err := BuildRunPlan(testConfig(t, tweak), PlanOptions{Tasks: []string{"a", "b", "c"}, Condition: "learned_mediator",
		Policy: conditions.PolicyAll, Iterations: 6})
	if err != nil {
		t.Fatal(err)
	}
	g := p.Gate
	// 3 tasks x 6 iterations, 1.8 proposals an iteration at the expected
	// proposal rate: the buffer of 3 fills, and a batch is decided, at the
	// end of every second iteration.
	if g == nil || g.DecisionsPerRow != 3 || g.Tasks < 1 {
		t.Fatalf("gate %+v, want 3 decisions per row", g)
	}
	want := 1 - math.Pow(1-g.NullPerDecision, 3)
	if !(g.NullPerDecision > 0) || math.Abs(g.NullPerRun-want) > 1e-12 {
		t.Errorf("null adoption %v per decision, %v per run; want %v per run", g.NullPerDecision, g.NullPerRun, want)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "adopts an edit that changes nothing") {
		t.Errorf("notes %q do not state the gate's null adoption", p.Notes)
	}
	// A row that never validates states no gate rates.
	nf, err := BuildRunPlan(testConfig(t, tweak), PlanOptions{Tasks: []string{"a", "b", "c"}, Condition: "no_feedback", Iterations: 6})
	if err != nil || nf.Gate != nil {
		t.Errorf("no_feedback: gate %+v, err %v; want none", nf.Gate, err)
	}
}
