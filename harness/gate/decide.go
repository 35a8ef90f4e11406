package gate

import (
	"fmt"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
)

// Decide applies cfg's rule to the evidence. Invalid settings or evidence
// reject the candidate, with the problem as the reason: the gate fails closed.
//
// The checks, in order: no tasks; an unusable task while RequireAllUsable is
// set; no usable task; then the rule's own checks. Means are macro means: the
// mean over usable tasks of each task's mean usable reward.
func Decide(cfg Config, ev Evidence) Decision {
	if err := cfg.Validate(); err != nil {
		return invalid(cfg, "invalid gate configuration: "+err.Error())
	}
	if err := ev.Check(); err != nil {
		return invalid(cfg, "invalid validation evidence: "+err.Error())
	}
	d := judge(cfg, ev.Summaries(), []float64{cfg.Threshold})
	d.Final = true
	return d
}

func invalid(cfg Config, reason string) Decision {
	return Decision{Rule: cfg.Rule, Reason: reason, Numbers: map[string]float64{}, Final: true}
}

// judge applies the rule to per-task summaries. cuts are the probabilities
// the caller compares P(better) with; the Monte Carlo of the posterior rule
// is made precise enough to place its estimate relative to each of them.
func judge(cfg Config, tasks []TaskSummary, cuts []float64) Decision {
	num := map[string]float64{}
	d := Decision{Rule: cfg.Rule, Numbers: num, Tasks: tasks}
	usable, unusable := countTasks(tasks, num)
	if d.Reason = refusal(cfg, len(tasks), usable, unusable); d.Reason != "" {
		return d
	}
	u := newUsableTasks(tasks, usable)
	num["current_mean"] = u.curMean
	num["candidate_mean"] = u.candMean
	num["delta"] = u.candMean - u.curMean
	num["worst_task_delta"] = tasks[usable[u.worst]].Delta
	switch cfg.Rule {
	case RuleNoRegress:
		d.Accept, d.Reason = u.noRegress(cfg, num)
	case RuleMargin:
		d.Accept, d.Reason = u.margin(cfg, num)
	case RulePosterior:
		d.Accept, d.Reason = u.posterior(cfg, cuts, num)
	default:
		d.Reason = fmt.Sprintf("unknown gate rule %q", cfg.Rule)
	}
	return d
}

// countTasks splits the tasks into usable ones (their indexes) and the
// names of the others, and records the counts in num.
func countTasks(tasks []TaskSummary, num map[string]float64) (usable []int, unusable []string) {
	var trials, usableTrials int
	for i, t := range tasks {
		trials += t.Current.Trials + t.Candidate.Trials
		usableTrials += t.Current.Usable + t.Candidate.Usable
		if t.Usable {
			usable = append(usable, i)
		} else {
			unusable = append(unusable, t.Task)
		}
	}
	num["tasks"] = float64(len(tasks))
	num["usable_tasks"] = float64(len(usable))
	num["unusable_tasks"] = float64(len(unusable))
	num["trials"] = float64(trials)
	num["unusable_trials"] = float64(trials - usableTrials)
	return usable, unusable
}

// refusal is why the evidence cannot be judged by any rule, or "".
func refusal(cfg Config, tasks int, usable []int, unusable []string) string {
	switch {
	case tasks == 0:
		return "no validation tasks"
	case cfg.RequireAllUsable && len(unusable) > 0:
		return fmt.Sprintf("%d %s unusable and require_all_usable is set (no usable trial on one arm: %s)",
			len(unusable), plural(len(unusable), "task", "tasks"), strings.Join(unusable, ", "))
	case len(usable) == 0:
		return "no usable validation task: every task lacks a usable trial on one arm"
	}
	return ""
}

// usableTasks is the evidence the rules weigh: the usable tasks, their
// mean rewards on each arm and the macro means over them.
type usableTasks struct {
	tasks             []TaskSummary
	usable            []int     // indexes into tasks
	cur, cand         []float64 // each usable task's mean, in the order of usable
	worst             int       // index into usable of the task with the lowest delta
	curMean, candMean float64
}

func newUsableTasks(tasks []TaskSummary, usable []int) *usableTasks {
	u := &usableTasks{tasks: tasks, usable: usable, cur: make([]float64, len(usable)), cand: make([]float64, len(usable))}
	for j, i := range usable {
		u.cur[j], _ = tasks[i].Current.Mean()
		u.cand[j], _ = tasks[i].Candidate.Mean()
		if tasks[i].Delta < tasks[usable[u.worst]].Delta {
			u.worst = j
		}
	}
	u.curMean, u.candMean = stat.Mean(u.cur, nil), stat.Mean(u.cand, nil)
	return u
}

// regressed counts tasks whose mean fell by more than drop (beyond the
// tolerance) and describes the worst of them.
func (u *usableTasks) regressed(drop, tolerance float64) (int, string) {
	count := 0
	for _, i := range u.usable {
		if u.tasks[i].Delta < -drop-tolerance {
			count++
		}
	}
	if count == 0 {
		return 0, ""
	}
	a, b := pair(u.cur[u.worst], u.cand[u.worst])
	msg := fmt.Sprintf("task %s regressed: %s -> %s", u.tasks[u.usable[u.worst]].Task, a, b)
	if count > 1 {
		msg += fmt.Sprintf(" (%d tasks regressed)", count)
	}
	return count, msg
}

// noRegress accepts when no task fell by more than the tolerance.
func (u *usableTasks) noRegress(cfg Config, num map[string]float64) (bool, string) {
	num["tolerance"] = cfg.Tolerance
	count, msg := u.regressed(0, cfg.Tolerance)
	num["regressed_tasks"] = float64(count)
	// The mean condition needs no check of its own: a macro mean can
	// only fall by more than the tolerance if some task does.
	if count > 0 {
		return false, msg
	}
	a, b := pair(u.curMean, u.candMean)
	return true, fmt.Sprintf("no task regressed; mean reward %s -> %s", a, b)
}

// margin accepts when the mean rose by the margin and no task fell by more
// than it.
func (u *usableTasks) margin(cfg Config, num map[string]float64) (bool, string) {
	num["margin"] = cfg.Margin
	num["tolerance"] = cfg.Tolerance
	count, msg := u.regressed(cfg.Margin, cfg.Tolerance)
	num["regressed_tasks"] = float64(count)
	delta := u.candMean - u.curMean
	a, b := pair(delta, cfg.Margin)
	switch {
	case count > 0:
		return false, fmt.Sprintf("%s, more than the margin %s", msg, b)
	case delta < cfg.Margin-cfg.Tolerance:
		return false, fmt.Sprintf("mean delta %s < margin %s", a, b)
	}
	return true, fmt.Sprintf("mean delta %s >= margin %s and no task fell by more than the margin", a, b)
}

// posterior accepts when the probability that the candidate is better
// reaches the threshold.
func (u *usableTasks) posterior(cfg Config, cuts []float64, num map[string]float64) (bool, string) {
	p, draws := pBetter(u.tasks, u.usable, cfg.Seed, cuts)
	num["threshold"] = cfg.Threshold
	num["p_better"] = p
	num["draws"] = float64(draws)
	a, b := pair(p, cfg.Threshold)
	if p >= cfg.Threshold {
		return true, fmt.Sprintf("P(better) %s >= %s", a, b)
	}
	return false, fmt.Sprintf("P(better) %s < %s", a, b)
}

// pair formats two numbers with two decimals, or with as many more as it
// takes for unequal numbers to print differently.
func pair(a, b float64) (string, string) {
	for prec := 2; ; prec++ {
		sa, sb := strconv.FormatFloat(a, 'f', prec, 64), strconv.FormatFloat(b, 'f', prec, 64)
		if sa != sb || a == b || prec >= 6 {
			return sa, sb
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
