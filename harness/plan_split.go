package harness

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/stats"
)

// Splits are the three disjoint task sets of an experiment: the tasks rows
// evolve on (and whose learning curve is reported), the tasks the gate
// validates skill candidates on, and held-out tasks that only evaluation of
// frozen skill checkpoints touches.
type Splits struct {
	Evolve   []string `json:"evolve"`
	Validate []string `json:"validate,omitempty"`
	HeldOut  []string `json:"held_out,omitempty"`
}

// SplitOptions say how to split: Spec ("E:V:H" counts, taken in the order
// the tasks are listed) or explicit lists; not both.
type SplitOptions struct {
	Spec     string
	Validate []string
	HeldOut  []string
}

func (o SplitOptions) empty() bool {
	return o.Spec == "" && len(o.Validate) == 0 && len(o.HeldOut) == 0
}

// splitTasks divides tasks as o says. A task in two splits is refused: a
// claim about held-out tasks means nothing if the row evolved on them, and
// a gate that validates on the reported tasks grades its own homework.
func splitTasks(tasks []string, o SplitOptions) (Splits, error) {
	if o.Spec != "" && (len(o.Validate) > 0 || len(o.HeldOut) > 0) {
		return Splits{}, fmt.Errorf("--split cannot be combined with --validate-tasks or --heldout-tasks: use one way of naming the splits")
	}
	if o.Spec != "" {
		return splitByCounts(tasks, o.Spec)
	}
	validate, err := cleanTasks(o.Validate)
	if err != nil {
		return Splits{}, fmt.Errorf("--validate-tasks: %w", err)
	}
	heldOut, err := cleanTasks(o.HeldOut)
	if err != nil {
		return Splits{}, fmt.Errorf("--heldout-tasks: %w", err)
	}
	s := Splits{Evolve: tasks, Validate: validate, HeldOut: heldOut}
	return s, s.checkDisjoint()
}

// splitByCounts reads "E:V:H" and takes that many tasks, in order, for each
// split. Every count is a whole number; E must be at least 1 and the counts
// must add up to the number of tasks.
func splitByCounts(tasks []string, spec string) (Splits, error) {
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		return Splits{}, fmt.Errorf("--split %q: want three counts, evolve:validate:held-out, such as 3:2:1", spec)
	}
	var n [3]int
	sum := 0
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return Splits{}, fmt.Errorf("--split %q: %q is not a count of tasks (a whole number of at least 0)", spec, p)
		}
		n[i] = v
		sum += v
	}
	if n[0] < 1 {
		return Splits{}, fmt.Errorf("--split %q: the evolve split needs at least one task", spec)
	}
	if sum != len(tasks) {
		return Splits{}, fmt.Errorf("--split %q adds up to %d tasks, but %d are listed (%s); make the counts add up", spec, sum, len(tasks), strings.Join(tasks, ", "))
	}
	return Splits{Evolve: slices.Clone(tasks[:n[0]]), Validate: slices.Clone(tasks[n[0] : n[0]+n[1]]),
		HeldOut: slices.Clone(tasks[n[0]+n[1]:])}, nil
}

// checkDisjoint refuses a task that is in more than one split.
func (s Splits) checkDisjoint() error {
	named := []struct {
		name string
		ids  []string
	}{{"evolve", s.Evolve}, {"validate", s.Validate}, {"held-out", s.HeldOut}}
	for i, a := range named {
		for _, b := range named[i+1:] {
			for _, id := range a.ids {
				if slices.Contains(b.ids, id) {
					return fmt.Errorf("task %q is in both the %s and the %s split: the splits must not overlap (a row must never be scored on held-out tasks it evolved or was validated on)", id, a.name, b.name)
				}
			}
		}
	}
	return nil
}

// fillSplits divides the plan's tasks as o.Split says, refusing overlaps,
// and settles where validation tasks come from: the validation split when
// there is one (then [validation] pool must be empty), else the pool, which
// may not hold held-out tasks either.
func (p *Plan) fillSplits(cfg *config.Config, o *PlanOptions) error {
	if o.Split.empty() {
		return nil
	}
	if len(p.Tasks) == 0 {
		return fmt.Errorf("the tasks of set %s are only known when the run starts, so they cannot be split: name them with --tasks", p.TaskSet)
	}
	s, err := splitTasks(p.Tasks, o.Split)
	if err != nil {
		return err
	}
	pool := cfg.Validation.Pool
	if len(s.Validate) > 0 && len(pool) > 0 {
		return fmt.Errorf("both a validation split and [validation] pool name the tasks the gate validates on: keep one")
	}
	if len(pool) > 0 {
		if err := (Splits{Evolve: s.Evolve, Validate: nil, HeldOut: s.HeldOut}).checkDisjoint(); err != nil {
			return err
		}
		for _, id := range pool {
			if slices.Contains(s.HeldOut, id) {
				return fmt.Errorf("task %q is in [validation] pool and in the held-out split: held-out tasks are only ever evaluated", id)
			}
		}
	}
	p.Tasks, p.ValidateTasks, p.HeldOutTasks = s.Evolve, s.Validate, s.HeldOut
	if len(s.HeldOut) > 0 {
		p.EvalTrials = cfg.Evaluation.TrialsPerTask
		if p.EvalTrials < 1 {
			return fmt.Errorf("held-out tasks need [evaluation] trials_per_task of at least 1 (got %d)", p.EvalTrials)
		}
	}
	return nil
}

// allTasks is every task the plan touches, in split order: the images it
// builds.
func (p *Plan) allTasks() []string {
	return slices.Concat(p.Tasks, p.ValidateTasks, p.HeldOutTasks)
}

// evalCheckpoints is how many skill checkpoints of a row are evaluated on
// the held-out tasks: its initial and its final skills.
const evalCheckpoints = 2

// PowerStatement says, before a run, how small a difference between a row
// and the baseline its design can detect: with 80% power at the 5% level,
// by the test that decides significance (the sign-flip test with one seed,
// the two-way t test with several), for the headline estimate (held-out
// when there are held-out tasks, else the mean of the last iterations),
// from the planning guesses in [stats].
type PowerStatement struct {
	Estimand      string `json:"estimand"`
	Tasks         int    `json:"tasks"`
	TrialsPerTask int    `json:"trials_per_task"`
	Seeds         int    `json:"seeds"`
	Test          string `json:"test"`
	// MinDetectable is nil when no difference up to 1 can be detected;
	// Note then says why.
	MinDetectable    *float64 `json:"min_detectable_difference"`
	EffectOfInterest float64  `json:"effect_of_interest"`
	// PowerAtEffect is the chance the effect of interest comes out
	// significant.
	PowerAtEffect float64 `json:"power_at_effect"`
	// Detectable is false when the effect of interest is below what the
	// design detects.
	Detectable bool   `json:"detectable"`
	Note       string `json:"note,omitempty"`
	// Advice is the smallest designs of seeds x tasks (at the planned
	// trials per task) that detect the effect of interest with 80% power.
	Advice []DesignAdvice `json:"advice,omitempty"`
}

// DesignAdvice is one design that detects the effect of interest.
type DesignAdvice struct {
	Seeds int `json:"seeds"`
	Tasks int `json:"tasks"`
}

// powerLastN is the last-N window the dry run assumes, the one inspect
// --compare reports by default.
const powerLastN = 10

// adviceSeeds are the seed counts the design advice considers, and
// adviceTasks the task counts it tries (a grid: each try of one seed is a
// simulation).
var (
	adviceSeeds = []int{1, 3, 5, 10}
	adviceTasks = []int{6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120, 150, 200, 250, 300, 400}
)

// power fills the plan's power statement; a design it cannot judge (fewer
// than two tasks) gets none, with a note.
func (p *Plan) power(cfg *config.Config) {
	st := cfg.Stats
	effect := st.EffectOfInterest
	if effect <= 0 {
		effect = stats.DefaultEffectOfInterest
	}
	ps := PowerStatement{Estimand: "last_n", Tasks: len(p.Tasks), TrialsPerTask: min(p.Iterations, powerLastN),
		Seeds: max(1, len(p.Seeds)), EffectOfInterest: effect}
	if len(p.HeldOutTasks) > 0 {
		ps.Estimand, ps.Tasks, ps.TrialsPerTask = "held_out", len(p.HeldOutTasks), p.EvalTrials
	}
	v := stats.AssumedVariance
	if st.TaskSD > 0 || st.SeedSD > 0 {
		v.Task, v.Seed, v.Interaction = st.TaskSD*st.TaskSD, st.SeedSD*st.SeedSD, st.SeedSD*st.SeedSD
	}
	d := stats.Design{Tasks: ps.Tasks, Trials: ps.TrialsPerTask, Seeds: ps.Seeds}
	pw, err := stats.Power(d, v, effect)
	if err != nil {
		if ps.Tasks > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("no power statement: %v", err))
		}
		return
	}
	ps.Test, ps.PowerAtEffect, ps.Detectable = d.Test(), pw, pw >= stats.PowerTarget
	switch mdd, err := stats.MinDetectableDiff(d, v); {
	case err == nil:
		ps.MinDetectable = &mdd
	case errors.Is(err, stats.ErrUnreachable):
		_, ps.Note = d.Reachable()
	default:
		ps.Note = err.Error()
	}
	if !ps.Detectable {
		ps.Advice = designAdvice(d, v, effect)
	}
	p.Power = &ps
	p.Notes = append(p.Notes, powerNotes(ps)...)
}

// powerNotes warn when the design cannot detect the effect of interest,
// and say which designs would.
func powerNotes(ps PowerStatement) []string {
	var notes []string
	switch {
	case ps.MinDetectable == nil:
		notes = append(notes, fmt.Sprintf("with %d tasks x %d trials x %d seed(s) the %s estimate cannot detect any difference in mean reward (80%% power, 5%% level, %s test): %s; every comparison will come out \"cannot tell\"",
			ps.Tasks, ps.TrialsPerTask, ps.Seeds, ps.Estimand, ps.Test, ps.Note))
	case !ps.Detectable:
		notes = append(notes, fmt.Sprintf("this design detects a difference from the baseline of %.2f or more (80%% power, 5%% level, %s test, %s estimate); the effect of interest, %.2f, is detected %.0f%% of the time and likely to come out \"cannot tell\"",
			*ps.MinDetectable, ps.Test, ps.Estimand, ps.EffectOfInterest, 100*ps.PowerAtEffect))
	}
	if ps.Detectable {
		return notes
	}
	var designs []string
	for _, a := range ps.Advice {
		designs = append(designs, fmt.Sprintf("%d %s x %d tasks", a.Seeds, pluralWord(a.Seeds, "seed", "seeds"), a.Tasks))
	}
	if len(designs) == 0 {
		return append(notes, fmt.Sprintf("no design of up to %d seeds x %d tasks at %d trials per task detects %.2f with 80%% power",
			adviceSeeds[len(adviceSeeds)-1], adviceTasks[len(adviceTasks)-1], ps.TrialsPerTask, ps.EffectOfInterest))
	}
	return append(notes, fmt.Sprintf("to detect %.2f with 80%% power at %d trials per task: %s (seeds, each an independent run, are what measure run-to-run luck; one seed holds the run fixed)",
		ps.EffectOfInterest, ps.TrialsPerTask, strings.Join(designs, ", or ")))
}

// designAdvice finds, for each seed count of adviceSeeds, the fewest tasks
// of adviceTasks at d's trials per task whose test detects effect with 80%
// power.
func designAdvice(d stats.Design, v stats.Variance, effect float64) []DesignAdvice {
	var out []DesignAdvice
	for _, seeds := range adviceSeeds {
		detects := func(i int) bool {
			pw, err := stats.Power(stats.Design{Tasks: adviceTasks[i], Trials: d.Trials, Seeds: seeds}, v, effect)
			return err == nil && pw >= stats.PowerTarget
		}
		if !detects(len(adviceTasks) - 1) {
			continue
		}
		lo, hi := -1, len(adviceTasks)-1 // detects(hi); lo is too few (or none)
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if detects(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		out = append(out, DesignAdvice{Seeds: seeds, Tasks: adviceTasks[hi]})
	}
	return out
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
