package network

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/harness/stats"
)

// ErrUnstable is wrapped by CheckStability's error when the baseline is
// missing, unfit or too noisy: the network must not start.
var ErrUnstable = errors.New("baseline stability check failed")

// Stability is the result of the baseline stability check.
type Stability struct {
	Baseline string `json:"baseline"`
	// SeedMeans are the baseline's mean train reward per seed; Spread
	// their standard deviation.
	SeedMeans map[int64]float64 `json:"seed_means"`
	Spread    float64           `json:"spread"`
	Bound     float64           `json:"bound"`
}

// CheckStability reads the no_feedback rows of the matrix directory dir
// and checks that the seed-to-seed spread of their mean train reward is
// under bound. It needs at least two seeds.
func CheckStability(dir string, bound float64) (*Stability, error) {
	d, err := rundir.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: --baseline: %v", ErrUnstable, err)
	}
	m := d.Manifest()
	if m.Kind != rundir.KindMatrix {
		return nil, fmt.Errorf("%w: --baseline %s is a %s directory: give a matrix with no_feedback rows over two or more seeds (harness matrix --preset no_feedback --seeds 1,2,3)", ErrUnstable, dir, m.Kind)
	}
	perSeed := map[int64]map[string][]float64{}
	for _, row := range m.Rows {
		rd, err := d.OpenRow(row)
		if err != nil {
			continue // never started
		}
		if rm := rd.Manifest(); rm.Condition != "no_feedback" {
			continue
		}
		rows, err := rundir.ReadMetrics(rd.MetricsDir())
		if err != nil {
			return nil, fmt.Errorf("%w: read baseline row %s: %v", ErrUnstable, row, err)
		}
		for _, r := range rows {
			if r.RowPhase() != rundir.PhaseTrain || r.Reward == nil {
				continue
			}
			if perSeed[r.Seed] == nil {
				perSeed[r.Seed] = map[string][]float64{}
			}
			perSeed[r.Seed][r.TaskID] = append(perSeed[r.Seed][r.TaskID], *r.Reward)
		}
	}
	if len(perSeed) < 2 {
		return nil, fmt.Errorf("%w: --baseline %s has scored no_feedback trials for %d seed(s); the spread needs two or more: run harness matrix --preset no_feedback --seeds 1,2,3 on the network's tasks", ErrUnstable, dir, len(perSeed))
	}
	s := &Stability{Baseline: dir, SeedMeans: map[int64]float64{}, Bound: bound}
	var means []float64
	for seed, tasks := range perSeed {
		s.SeedMeans[seed] = stats.MacroMean(tasks)
		means = append(means, s.SeedMeans[seed])
	}
	s.Spread = sd(means)
	if s.Spread >= bound {
		return s, fmt.Errorf("%w: the seed-to-seed spread of %s is %.3f, not under the bound %.3f: run the baseline with more tasks or iterations until it settles, raise [network] stability_bound, or pass --skip-stability-check (recorded in run.json)", ErrUnstable, dir, s.Spread, bound)
	}
	return s, nil
}

func sd(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	var mean float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return math.Sqrt(ss / float64(len(x)-1))
}

// TreatmentResult is one diffusion treatment in the compare output.
type TreatmentResult struct {
	Diffusion string `json:"diffusion"`
	// Estimand says which rewards were averaged: "held_out" (the final
	// checkpoint on the held-out tasks) or, when the network has no
	// held-out split, "train_last" (the last iteration's train trials).
	Estimand string `json:"estimand"`
	// SeedMeans are the mean over labs and tasks per seed; Mean, Low and
	// High the t interval over seeds (Low and High are absent with one seed).
	SeedMeans map[int64]float64 `json:"seed_means"`
	Mean      float64           `json:"mean"`
	Low       *float64          `json:"low,omitempty"`
	High      *float64          `json:"high,omitempty"`
	Level     float64           `json:"level"`
	// Items counts what was sent, Adopted what receivers adopted, Tokens
	// what the share and intake decisions cost.
	Items   int   `json:"items_sent"`
	Adopted int   `json:"items_adopted"`
	Tokens  int64 `json:"diffusion_tokens"`
	// PlannerContextChars is the mean prior context a Planner carried per
	// train trial.
	PlannerContextChars float64 `json:"planner_context_chars"`
	// Labs are the treatment's labs one by one.
	Labs []LabResult `json:"labs"`
}

// Compare answers the network's question: each treatment on the held-out
// estimand, with an interval over seeds, and what diffusion cost in
// tokens and Planner context; and the same per lab, with its adoptions by
// the lab they came from.
func Compare(dir string, level float64) ([]TreatmentResult, error) {
	m, err := Design(dir)
	if err != nil {
		return nil, err
	}
	recs, err := Records(dir)
	if err != nil {
		return nil, err
	}
	var out []TreatmentResult
	for _, diff := range m.Network.Diffusion {
		tr, err := treatment(dir, m, diff, level)
		if err != nil {
			return nil, err
		}
		tally(&tr, recs)
		out = append(out, tr)
	}
	return out, nil
}

// LabResult is one lab under one treatment.
type LabResult struct {
	Lab                 string            `json:"lab"`
	SeedMeans           map[int64]float64 `json:"seed_means"`
	Mean                float64           `json:"mean"`
	PlannerContextChars float64           `json:"planner_context_chars"`
	// Sent counts the items the lab sent and TokensSent what deciding on
	// them cost; AdoptedFrom the items it adopted, by the lab they came from.
	Sent        int            `json:"items_sent"`
	TokensSent  int64          `json:"diffusion_tokens"`
	AdoptedFrom map[string]int `json:"adopted_from"`
	// TokensIntake is what the lab's Mediator spent deciding on the items
	// it received (mediated).
	TokensIntake int64 `json:"intake_tokens"`
}

// treatment reads every lab's rows of one treatment.
func treatment(dir string, m *rundir.Manifest, diff string, level float64) (TreatmentResult, error) {
	heldOut := len(m.HeldOutTasks) > 0
	tr := TreatmentResult{Diffusion: diff, Estimand: "train_last", SeedMeans: map[int64]float64{}, Level: level}
	if heldOut {
		tr.Estimand = "held_out"
	}
	perSeed := map[int64]map[string][]float64{}
	var ctxSum, ctxN float64
	for _, lab := range m.Network.Labs {
		lr := LabResult{Lab: lab, SeedMeans: map[int64]float64{}, AdoptedFrom: map[string]int{}}
		var labCtx, labN float64
		for _, seed := range m.Seeds {
			rows, err := rundir.ReadMetrics(filepath.Join(dir, RowName(m, diff, lab, seed), rundir.MetricsDir))
			if err != nil {
				return tr, err
			}
			tasks := map[string][]float64{}
			for _, r := range estimandRows(rows, heldOut, m.Iterations) {
				tasks[r.TaskID] = append(tasks[r.TaskID], *r.Reward)
				if perSeed[seed] == nil {
					perSeed[seed] = map[string][]float64{}
				}
				perSeed[seed][lab+"/"+r.TaskID] = append(perSeed[seed][lab+"/"+r.TaskID], *r.Reward)
			}
			if len(tasks) > 0 {
				lr.SeedMeans[seed] = stats.MacroMean(tasks)
			}
			for _, r := range rows {
				if r.RowPhase() == rundir.PhaseTrain && r.PlannerContextChars != nil {
					labCtx += float64(*r.PlannerContextChars)
					labN++
				}
			}
		}
		lr.Mean = meanOf(lr.SeedMeans, m.Seeds)
		if labN > 0 {
			lr.PlannerContextChars = labCtx / labN
		}
		ctxSum, ctxN = ctxSum+labCtx, ctxN+labN
		tr.Labs = append(tr.Labs, lr)
	}
	for seed, tasks := range perSeed {
		tr.SeedMeans[seed] = stats.MacroMean(tasks)
	}
	if ctxN > 0 {
		tr.PlannerContextChars = ctxSum / ctxN
	}
	tr.Mean = meanOf(tr.SeedMeans, m.Seeds)
	var means []float64
	for _, seed := range m.Seeds {
		if v, ok := tr.SeedMeans[seed]; ok {
			means = append(means, v)
		}
	}
	if iv, err := stats.MeanCI(means, level); err == nil {
		tr.Low, tr.High = &iv.Low, &iv.High
	}
	return tr, nil
}

// tally counts a treatment's items, in all and per lab.
func tally(tr *TreatmentResult, recs []Record) {
	byLab := map[string]*LabResult{}
	for i := range tr.Labs {
		byLab[tr.Labs[i].Lab] = &tr.Labs[i]
	}
	for _, r := range recs {
		if r.Diffusion != tr.Diffusion {
			continue
		}
		tr.Tokens += r.Tokens + r.ReceiverTokens
		if to := byLab[r.To]; to != nil {
			to.TokensIntake += r.ReceiverTokens
		}
		if from := byLab[r.From]; from != nil {
			from.TokensSent += r.Tokens
			if r.Decision == DecisionSent {
				from.Sent++
			}
		}
		if r.Decision == DecisionSent {
			tr.Items++
		}
		if r.ReceiverDecision == ReceiverAdopted {
			tr.Adopted++
			if to := byLab[r.To]; to != nil {
				to.AdoptedFrom[r.From]++
			}
		}
	}
}

// meanOf is the mean of the values of the seeds that have one.
func meanOf(bySeed map[int64]float64, seeds []int64) float64 {
	var x []float64
	for _, s := range seeds {
		if v, ok := bySeed[s]; ok {
			x = append(x, v)
		}
	}
	if len(x) == 0 {
		return 0
	}
	return mean(x)
}

// estimandRows are the scored rows the estimand averages: the last eval
// checkpoint on held-out tasks, else the last train iteration.
func estimandRows(rows []rundir.MetricRow, heldOut bool, iterations int) []rundir.MetricRow {
	var out []rundir.MetricRow
	last := int32(-1)
	if heldOut {
		for _, r := range rows {
			if r.RowPhase() == rundir.PhaseEval && r.CheckpointIteration != nil && *r.CheckpointIteration > last {
				last = *r.CheckpointIteration
			}
		}
	}
	for _, r := range rows {
		if r.Reward == nil {
			continue
		}
		switch {
		case heldOut && r.RowPhase() == rundir.PhaseEval && r.CheckpointIteration != nil && *r.CheckpointIteration == last:
			out = append(out, r)
		case !heldOut && r.RowPhase() == rundir.PhaseTrain && int(r.Iteration) == iterations:
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].TaskID < out[b].TaskID })
	return out
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
