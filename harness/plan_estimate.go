package harness

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/gate"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
)

// calibration is what an earlier run or matrix spent per training trial,
// by row and model role: the measured alternative to the call-cap upper
// bound. Per trial means everything a trial brings with it: its plan,
// Executor, Mediator and summaries, and its share of proposals, Advisor
// reviews, validation trials and reflection.
type calibration struct {
	dir string
	// rows holds per-trial tokens by role for each row of the earlier
	// run; all is the same over all its rows, for rows it did not have.
	rows map[string]spend
	all  spend
	// trials is the training trials measured.
	trials int
}

// spend is measured per-trial tokens by role: all is everything a training
// trial brings with it; work only its plan and its Executor (with
// subagents), which is what a held-out evaluation trial spends.
type spend struct {
	all, work map[conditions.Role]roleTokens
}

func newSpend() spend {
	return spend{all: map[conditions.Role]roleTokens{}, work: map[conditions.Role]roleTokens{}}
}

func (s spend) scale(f float64) spend {
	out := newSpend()
	for role, t := range s.all {
		out.all[role] = roleTokens{t.in * f, t.out * f}
	}
	for role, t := range s.work {
		out.work[role] = roleTokens{t.in * f, t.out * f}
	}
	return out
}

func (s spend) add(o spend) {
	for role, t := range o.all {
		a := s.all[role]
		s.all[role] = roleTokens{a.in + t.in, a.out + t.out}
	}
	for role, t := range o.work {
		a := s.work[role]
		s.work[role] = roleTokens{a.in + t.in, a.out + t.out}
	}
}

// roleTokens are input and output tokens, per trial once divided.
type roleTokens struct{ in, out float64 }

// loadCalibration measures the earlier run or matrix in dir from its rows'
// checkpoints: the ledger and the trials of completed iterations. Held-out
// evaluation trials are left out; they are estimated like the trials they
// are.
func loadCalibration(dir string) (*calibration, error) {
	d, err := rundir.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("--estimate-from: %w", err)
	}
	rowDirs := map[string]string{d.Manifest().Name: dir}
	if d.Manifest().Kind == rundir.KindMatrix {
		rowDirs = map[string]string{}
		matches, _ := filepath.Glob(filepath.Join(dir, "*", rundir.StateFile))
		for _, m := range matches {
			rd := filepath.Dir(m)
			if rm, err := rundir.Open(rd); err == nil {
				rowDirs[rm.Manifest().Name] = rd
			}
		}
	}
	cal := &calibration{dir: dir, rows: map[string]spend{}, all: newSpend()}
	for name, rd := range rowDirs {
		st, err := LoadState(rd)
		if err != nil {
			return nil, fmt.Errorf("--estimate-from %s: row %s has no readable checkpoint: %w", dir, name, err)
		}
		if st == nil {
			return nil, fmt.Errorf("--estimate-from %s: row %s has no checkpoint (%s) yet", dir, name, rundir.StateFile)
		}
		trials := 0
		for _, n := range st.Counts {
			trials += n
		}
		if trials == 0 {
			continue
		}
		cal.trials += trials
		row := tokensByRole(st.Ledger)
		cal.all.add(row)
		cal.rows[name] = row.scale(1 / float64(trials))
	}
	if cal.trials == 0 {
		return nil, fmt.Errorf("--estimate-from %s: no completed iteration to measure; let it finish one, or leave the flag out for the request model's estimate", dir)
	}
	cal.all = cal.all.scale(1 / float64(cal.trials))
	return cal, nil
}

// tokensByRole sums a ledger's tokens by role, leaving out held-out
// evaluation trials.
func tokensByRole(l llm.LedgerSnapshot) spend {
	out := newSpend()
	for caller, u := range l.ByCaller {
		c, err := rundir.ParseCaller(caller)
		if err != nil || c.HeldOut() {
			continue
		}
		role := c.ModelRole()
		if !role.IsModel() {
			continue
		}
		t := roleTokens{float64(u.InputTokens), float64(u.OutputTokens)}
		out.add(spend{all: map[conditions.Role]roleTokens{role: t}})
		if c.Training() {
			out.add(spend{work: map[conditions.Role]roleTokens{role: t}})
		}
	}
	return out
}

// perTrial is the measured per-trial spend of a row: its own when the
// earlier run had a row of that name, else the average over its rows.
func (c *calibration) perTrial(row string) spend {
	if r, ok := c.rows[row]; ok {
		return r
	}
	return c.all
}

// addTokens adds per times n to into.
func addTokens(into, per map[conditions.Role]roleTokens, n float64) {
	for role, t := range per {
		a := into[role]
		into[role] = roleTokens{a.in + t.in*n, a.out + t.out*n}
	}
}

// calibrate measures the estimates from the earlier run in dir, when given.
func (p *Plan) calibrate(dir string) error {
	if dir == "" {
		return nil
	}
	cal, err := loadCalibration(dir)
	if err != nil {
		return err
	}
	p.cal, p.EstimatedFrom = cal, dir
	return nil
}

// expectedBatches is how many Advisor batches a row's remaining
// iterations are expected to bring over all its skill lines (the lab's
// and each own-skill student's), tasks trials an iteration: proposals
// (proposalRate per trial) fill each line's buffer, and a batch is
// reviewed at the end of the first iteration that leaves
// advisor_buffer_max or more in it.
func expectedBatches(cfg *config.Config, r RowSpec, lab config.Lab, tasks, iterations int) int {
	n := 0
	for _, l := range planLines(lab) {
		b, _ := batchesAndSize(cfg, r, float64(tasks)*l.share, iterations)
		n += b
	}
	return n
}

// planLine is one executor skill line of a row, for the estimate: the
// lab's (student nil), fed by the students who share it, or an own-skill
// student's; share is the part of the row's trials whose proposals fill
// its buffer (students share a row's trials equally under both
// assignments).
type planLine struct {
	student *config.LabStudent
	share   float64
}

// planLines lists a lab's skill lines: the lab's when some student shares
// it, then each own-skill student's, in roster order.
func planLines(lab config.Lab) []planLine {
	roster := lab.Roster()
	each := 1 / float64(len(roster))
	var own []planLine
	shared := 0
	for _, st := range roster {
		if !st.OwnSkill {
			shared++
			continue
		}
		own = append(own, planLine{student: &st, share: each})
	}
	if shared == 0 {
		return own
	}
	return append([]planLine{{share: float64(shared) * each}}, own...)
}

// batchesAndSize is how many batches one skill line brings, perIteration
// trials an iteration feeding it, and the mean proposals a batch holds
// (the whole buffer at its review, which may pass advisor_buffer_max).
func batchesAndSize(cfg *config.Config, r RowSpec, perIteration float64, iterations int) (int, float64) {
	if !r.Policy.Executor || r.Condition.ProposalFeedback() == conditions.FeedbackNone {
		return 0, 0
	}
	buf := float64(max(1, cfg.Experiment.AdvisorBufferMax))
	batches, buffered, held := 0, 0.0, 0.0
	for range iterations {
		buffered += proposalRate * perIteration
		if buffered >= buf-1e-9 {
			batches++
			held += buffered
			buffered = 0
		}
	}
	if batches == 0 {
		return 0, 0
	}
	return batches, held / float64(batches)
}

// expectedValidation is how many validation trials a row's remaining
// iterations are expected to bring, per skill line of its lab (as
// planLines lists them): each batch the line is expected to fill reaching
// the gate, which spends its simulated mean trials on the tasks it
// validates on.
func (p *Plan) expectedValidation(cfg *config.Config, r RowSpec, lab config.Lab, iterations int) []int {
	lines := planLines(lab)
	out := make([]int, len(lines))
	if !cfg.Validation.Enabled {
		return out
	}
	for i, l := range lines {
		batches, size := batchesAndSize(cfg, r, float64(len(p.Tasks)*trialsPerTask(lab))*l.share, iterations)
		if batches == 0 {
			continue
		}
		e, err := gate.ExpectedTrials(gateConfig(cfg.Validation, 0), p.validationSize(cfg, size))
		if err != nil {
			continue
		}
		// A tournament validates its best validate_top candidates of each batch.
		out[i] = int(math.Ceil(float64(batches) * e * float64(cfg.Tournament.Top())))
	}
	return out
}

// validationSize is how many tasks a gate decision is expected to use, as
// Run.validationTasks picks them: the validation split or the pool, capped
// by pool_size; else the row's tasks apart from the batch's (a batch of
// batchSize proposals comes from about min(tasks, batchSize) tasks), capped
// the same way; else, when every task contributed, the batch's own tasks.
func (p *Plan) validationSize(cfg *config.Config, batchSize float64) int {
	capped := func(n int) int {
		if ps := cfg.Validation.PoolSize; ps > 0 {
			return min(n, ps)
		}
		return n
	}
	switch {
	case len(p.ValidateTasks) > 0:
		return capped(len(p.ValidateTasks))
	case len(cfg.Validation.Pool) > 0:
		return capped(len(cfg.Validation.Pool))
	}
	contributing := min(len(p.Tasks), max(1, int(math.Round(batchSize))))
	if apart := len(p.Tasks) - contributing; apart > 0 {
		return capped(apart)
	}
	return contributing
}

// GatePlan is what the validation gate's simulated error rates mean for a
// planned run: per decision, and over the decisions one row is expected to
// make (every Advisor batch reaching the gate), how likely an edit that
// changes nothing is adopted.
type GatePlan struct {
	Tasks int `json:"tasks"`
	// DecisionsPerRow is the most gate decisions any row is expected to
	// make.
	DecisionsPerRow int `json:"decisions_per_row"`
	// AcceptWorse and AcceptBetter are per decision, the worst case over
	// the simulated scenarios; NullPerDecision the drift of one decision.
	AcceptWorse     float64 `json:"accept_worse"`
	AcceptBetter    float64 `json:"accept_better"`
	NullPerDecision float64 `json:"null_adoption_per_decision"`
	// NullPerRun is 1 - (1 - NullPerDecision)^DecisionsPerRow: the chance
	// that a row adopts at least one edit that changes nothing.
	NullPerRun float64 `json:"null_adoption_per_run"`
	Source     string  `json:"source"`
}

// gateRates states the gate's error rates for the rows that validate
// skill candidates; nothing when none does.
func (p *Plan) gateRates(cfg *config.Config) {
	decisions, batchSize := 0, 0.0
	for _, r := range p.Rows {
		if !cfg.Validation.Enabled || !r.Policy.Executor || r.Condition.ProposalFeedback() == conditions.FeedbackNone {
			continue
		}
		rowCfg, err := p.rowConfig(cfg, r)
		if err != nil {
			continue
		}
		lab, err := rowCfg.Lab(r.Lab)
		if err != nil {
			continue
		}
		for _, l := range planLines(lab) {
			n, size := batchesAndSize(cfg, r, float64(len(p.Tasks)*trialsPerTask(lab))*l.share, max(p.Iterations-p.done[r.Name], 0))
			if n > decisions {
				decisions, batchSize = n, size
			}
		}
	}
	size := p.validationSize(cfg, batchSize)
	if decisions == 0 || size < 1 {
		return
	}
	er, err := gate.ErrorRatesFor(gateConfig(cfg.Validation, 0), size)
	if err != nil {
		p.Notes = append(p.Notes, fmt.Sprintf("no gate error rates: %v", err))
		return
	}
	g := &GatePlan{Tasks: size, DecisionsPerRow: decisions, AcceptWorse: er.AcceptWorse, AcceptBetter: er.AcceptBetter,
		NullPerDecision: er.AcceptNull, NullPerRun: gate.NullAdoptionPerRun(er.AcceptNull, decisions), Source: er.Source}
	p.Gate = g
	p.Notes = append(p.Notes, fmt.Sprintf("the gate on %d validation tasks adopts an edit that changes nothing %.0f%% of the time per decision, "+
		"and over a row's %d expected decisions at least one such edit %.0f%% of the time (worse edits %.1f%%, better ones %.0f%% per decision)",
		g.Tasks, 100*g.NullPerDecision, g.DecisionsPerRow, 100*g.NullPerRun, 100*g.AcceptWorse, 100*g.AcceptBetter))
}
