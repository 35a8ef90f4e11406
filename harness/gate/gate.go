// Package gate decides whether a candidate executor skill replaces the
// current one (validate before apply). Both skills run paired trials on a set
// of validation tasks; a named rule turns that evidence into an accept or
// reject Decision that records the rule's numbers and, on rejection, the check
// that failed. A Session schedules the trials round by round, stops early when
// more trials cannot change the answer and, for the posterior rule, adds
// trials while the answer is ambiguous. Simulate measures how often each rule
// accepts worse, equal and better edits, also with tasks of unequal
// difficulty, lost trials and agent errors; ErrorRatesFor states those rates
// for a configuration at a validation size, and ExpectedTrials what one
// decision costs.
//
// The package is pure (no I/O) and imports nothing else of this module.
package gate

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Rule names, the values of Config.Rule.
const (
	// RuleNoRegress accepts when the mean reward does not fall and no task's
	// mean falls by more than the tolerance (ties accepted).
	RuleNoRegress = "no_regress"
	// RuleMargin accepts when the mean reward rises by at least the margin
	// and no task's mean falls by more than the margin.
	RuleMargin = "margin"
	// RulePosterior accepts when, under a Beta-Binomial model per task, the
	// posterior probability that the candidate's mean success rate over the
	// tasks exceeds the current skill's is at least the threshold.
	RulePosterior = "posterior"
)

// RuleNames lists the rule names in a stable order.
func RuleNames() []string { return []string{RuleNoRegress, RuleMargin, RulePosterior} }

// Arm says which skill a trial ran with.
type Arm string

// The two arms of a paired validation.
const (
	Current   Arm = "current"
	Candidate Arm = "candidate"
)

// Trial is one validation run of one skill on one task. Trials with the same
// Task and Index on the two arms are a pair and should share their seed.
//
// Reward is nil when the trial is unusable: the infrastructure failed (the
// sandbox, the model API after its retries, the verifier), so the trial says
// nothing about the skill, and it is never counted as a zero. A trial the
// agent itself failed (it never submitted, its tool calls were malformed, it
// ran out of turns or errored) is a failure like any other and must carry
// reward 0, on both arms alike: dropping it would let a skill that makes the
// agent break look better than one that makes it fail honestly.
type Trial struct {
	Task   string   `json:"task"`
	Arm    Arm      `json:"arm"`
	Index  int      `json:"index"`
	Reward *float64 `json:"reward"`
	// Status is how the trial ended (the executor's status), kept for the
	// reader of the record; the rules read only Reward.
	Status string `json:"status,omitempty"`
}

// TrialRequest names a trial a Session wants run next.
type TrialRequest struct {
	Task  string `json:"task"`
	Arm   Arm    `json:"arm"`
	Index int    `json:"index"`
}

// Evidence is everything recorded for one candidate: the validation tasks and
// the trials run on them.
type Evidence struct {
	Tasks  []string `json:"tasks"`
	Trials []Trial  `json:"trials"`
}

// ArmSummary sums up one arm's trials on one task.
type ArmSummary struct {
	Trials int     `json:"trials"` // recorded, usable or not
	Usable int     `json:"usable"`
	Sum    float64 `json:"sum"` // of the usable rewards
}

// Mean is the mean usable reward; ok is false when no trial was usable.
func (a ArmSummary) Mean() (mean float64, ok bool) {
	if a.Usable == 0 {
		return 0, false
	}
	return a.Sum / float64(a.Usable), true
}

func (a *ArmSummary) add(reward *float64) {
	a.Trials++
	if reward != nil {
		a.Usable++
		a.Sum += *reward
	}
}

// TaskSummary sums up one task's trials on both arms. A task is usable when
// both arms have at least one usable trial; Delta is then the candidate's mean
// minus the current skill's mean.
type TaskSummary struct {
	Task      string     `json:"task"`
	Current   ArmSummary `json:"current"`
	Candidate ArmSummary `json:"candidate"`
	Usable    bool       `json:"usable"`
	Delta     float64    `json:"delta,omitempty"`
}

func (t *TaskSummary) finish() {
	cur, okCur := t.Current.Mean()
	cand, okCand := t.Candidate.Mean()
	t.Usable = okCur && okCand
	t.Delta = 0
	if t.Usable {
		t.Delta = cand - cur
	}
}

// Summaries returns one summary per task, in the order of ev.Tasks. Trials
// for tasks not listed are left out; Check reports them.
func (ev Evidence) Summaries() []TaskSummary {
	out := make([]TaskSummary, len(ev.Tasks))
	pos := make(map[string]int, len(ev.Tasks))
	for i, t := range ev.Tasks {
		out[i].Task = t
		pos[t] = i
	}
	for _, tr := range ev.Trials {
		i, ok := pos[tr.Task]
		if !ok {
			continue
		}
		switch tr.Arm {
		case Current:
			out[i].Current.add(tr.Reward)
		case Candidate:
			out[i].Candidate.add(tr.Reward)
		}
	}
	for i := range out {
		out[i].finish()
	}
	return out
}

// Check reports evidence a rule cannot use: blank or repeated task ids,
// trials for unlisted tasks, unknown arms, negative or repeated indices, and
// rewards outside [0, 1].
func (ev Evidence) Check() error {
	var errs []error
	listed := make(map[string]bool, len(ev.Tasks))
	for i, t := range ev.Tasks {
		switch {
		case strings.TrimSpace(t) == "":
			errs = append(errs, fmt.Errorf("validation task %d has an empty id", i+1))
		case listed[t]:
			errs = append(errs, fmt.Errorf("validation task %q is listed twice", t))
		}
		listed[t] = true
	}
	seen := map[TrialRequest]bool{}
	for _, tr := range ev.Trials {
		if err := checkTrial(tr); err != nil {
			errs = append(errs, err)
			continue
		}
		if !listed[tr.Task] {
			errs = append(errs, fmt.Errorf("trial for task %q, which is not a validation task", tr.Task))
			continue
		}
		key := TrialRequest{Task: tr.Task, Arm: tr.Arm, Index: tr.Index}
		if seen[key] {
			errs = append(errs, fmt.Errorf("trial %d of task %q on the %s arm is recorded twice", tr.Index, tr.Task, tr.Arm))
		}
		seen[key] = true
	}
	return errors.Join(errs...)
}

func checkTrial(tr Trial) error {
	if tr.Arm != Current && tr.Arm != Candidate {
		return fmt.Errorf("trial of task %q has arm %q; want %q or %q", tr.Task, tr.Arm, Current, Candidate)
	}
	if tr.Index < 0 {
		return fmt.Errorf("trial of task %q has negative index %d", tr.Task, tr.Index)
	}
	if r := tr.Reward; r != nil && (math.IsNaN(*r) || *r < 0 || *r > 1) {
		return fmt.Errorf("trial %d of task %q on the %s arm has reward %v outside [0, 1]; record an unusable trial with a nil reward", tr.Index, tr.Task, tr.Arm, *r)
	}
	return nil
}

// Config selects a rule and its numbers.
type Config struct {
	// Rule is one of RuleNoRegress, RuleMargin, RulePosterior.
	Rule string `json:"rule"`
	// TrialsPerTask is how many trials each arm gets on each task (k).
	TrialsPerTask int `json:"trials_per_task"`
	// MaxTrialsPerTask caps the extension of the posterior rule under
	// EarlyStop. Values below TrialsPerTask mean no extension.
	MaxTrialsPerTask int `json:"max_trials_per_task"`
	// Margin is the minimum mean improvement of the margin rule, and the
	// largest drop it tolerates on one task.
	Margin float64 `json:"margin"`
	// Threshold is the posterior probability the posterior rule requires.
	Threshold float64 `json:"threshold"`
	// Tolerance is the slack under which reward differences count as ties.
	Tolerance float64 `json:"tolerance"`
	// EarlyStop runs the trials one round (one trial per task and arm) at a
	// time, stops as soon as the remaining trials cannot change the decision
	// and, for the posterior rule, extends up to MaxTrialsPerTask while
	// P(better) is ambiguous. Off: all trials are requested at once.
	EarlyStop bool `json:"early_stop"`
	// RequireAllUsable rejects when any task lacks a usable trial on either
	// arm. Off: such tasks are left out of the comparison.
	RequireAllUsable bool `json:"require_all_usable"`
	// Seed drives the Monte Carlo of the posterior rule.
	Seed uint64 `json:"seed"`
	// Tasks is how many validation tasks a caller should draw (from the
	// validation split or pool) for the stated error rates to hold; 0 leaves
	// it to the caller. A Session validates whatever tasks it is given, and
	// ErrorRatesFor gives the rates at any size.
	Tasks int `json:"tasks,omitempty"`
}

// DefaultTasks is the validation size the default configuration is tuned
// for.
const DefaultTasks = 12

// DefaultConfig is the configuration the simulation in docs/statistics.md
// chose: on DefaultTasks validation tasks it accepts a worse edit (0.5 ->
// 0.3) at most 5% of the time in every one of Scenarios (task difficulty
// from Beta(2, 2), 20% unusable trials, 40% of the candidate's failures as
// agent errors, and all three at once), an edit that changes nothing at
// most 10% of the time (each adoption of one compounds over a run's
// decisions), and a better one (0.3 -> 0.5) at least 80% of the time.
func DefaultConfig() Config {
	return Config{
		Rule:             RulePosterior,
		TrialsPerTask:    1,
		MaxTrialsPerTask: 10,
		Margin:           0.1,
		Threshold:        0.88,
		Tolerance:        1e-9,
		EarlyStop:        true,
		RequireAllUsable: false,
		Tasks:            DefaultTasks,
	}
}

// Validate reports settings the rule cannot work with.
func (c Config) Validate() error {
	var errs []error
	switch c.Rule {
	case RuleNoRegress, RuleMargin, RulePosterior:
	case "":
		errs = append(errs, fmt.Errorf("no gate rule set; use one of %s", strings.Join(RuleNames(), ", ")))
	default:
		errs = append(errs, fmt.Errorf("unknown gate rule %q; use one of %s", c.Rule, strings.Join(RuleNames(), ", ")))
	}
	if c.TrialsPerTask < 1 {
		errs = append(errs, fmt.Errorf("trials per task must be at least 1, got %d", c.TrialsPerTask))
	}
	if c.Tasks < 0 {
		errs = append(errs, fmt.Errorf("validation task count must not be negative (0 leaves it to the caller), got %d", c.Tasks))
	}
	if c.Tolerance < 0 || c.Tolerance >= 1 || math.IsNaN(c.Tolerance) {
		errs = append(errs, fmt.Errorf("tolerance must be in [0, 1), got %v", c.Tolerance))
	}
	if c.Rule == RuleMargin && (c.Margin < 0 || c.Margin >= 1 || math.IsNaN(c.Margin)) {
		errs = append(errs, fmt.Errorf("margin must be in [0, 1), got %v", c.Margin))
	}
	if c.Rule == RulePosterior && !(c.Threshold > 0 && c.Threshold < 1) {
		errs = append(errs, fmt.Errorf("threshold must be strictly between 0 and 1, got %v", c.Threshold))
	}
	return errors.Join(errs...)
}

// maxTrials is the most trials per task and arm a session may run.
func (c Config) maxTrials() int {
	if c.extends() {
		return c.MaxTrialsPerTask
	}
	return c.TrialsPerTask
}

// extends reports whether a session may add trials beyond TrialsPerTask.
func (c Config) extends() bool {
	return c.EarlyStop && c.Rule == RulePosterior && c.MaxTrialsPerTask > c.TrialsPerTask
}

// Decision is the gate's answer with the numbers behind it.
type Decision struct {
	Accept bool   `json:"accept"`
	Rule   string `json:"rule"`
	// Reason says which check failed, or why the candidate passed.
	Reason string `json:"reason"`
	// Numbers holds the rule's inputs and results (current_mean,
	// candidate_mean, delta, p_better, threshold, trials, ...). Never NaN.
	Numbers map[string]float64 `json:"numbers"`
	// Tasks holds the per-task summaries the decision rests on.
	Tasks []TaskSummary `json:"tasks,omitempty"`
	// Final is false for a Session's provisional answer while trials remain.
	Final bool `json:"final"`
	// ErrorRates are the simulated error rates of the configuration at the
	// number of validation tasks the decision had (ErrorRatesFor), so a
	// reader sees how far to trust it. Decide and Session leave it nil, as
	// it may take seconds of simulation; callers that record decisions fill
	// it in.
	ErrorRates *ErrorRates `json:"error_rates,omitempty"`
}
