package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// trialWatch shows what happens inside an iteration as it lands on disk:
// each trial's outcome (training, held-out evaluation and validation
// trials, from their trace.json), the start and decision of each
// validation batch, and the Advisor's and the Reflector's phases, seen
// in the call log when their first call is recorded.
type trialWatch struct {
	seen    map[string]bool // trace files already shown
	batches map[string]bool // validation batch -> decided
	callers map[string]bool // Advisor and Reflector callers already shown
	calls   *tailFile
	from    int // the first iteration whose traces are still looked for
}

func newTrialWatch(dir string) *trialWatch {
	return &trialWatch{seen: map[string]bool{}, batches: map[string]bool{}, callers: map[string]bool{},
		calls: &tailFile{path: filepath.Join(dir, rundir.CallsFile)}}
}

// prime takes in what is already on disk without showing it.
func (tw *trialWatch) prime(dir string, done int) {
	tw.calls.skipToEnd()
	tw.poll(io.Discard, dir, "", done)
}

// poll shows the trial outcomes and phases that appeared since the last
// call. done is the run's completed iterations: traces are looked for
// from the iteration under way at the last poll to the one under way now,
// so a poll that sees an iteration end still shows its last trials.
func (tw *trialWatch) poll(w io.Writer, dir, prefix string, done int) {
	tw.pollCalls(w, prefix) // first: the Advisor's review comes before its batch's validation
	var traces []string
	for it := max(min(tw.from, done), 1); it <= done+1; it++ {
		traces = append(traces, glob(filepath.Join(dir, rundir.JobDir("*", it), rundir.TraceFile))...)
	}
	tw.from = done + 1
	traces = append(traces, glob(filepath.Join(dir, rundir.JobsDir, "eval", "c*", "*", "k*", rundir.TraceFile))...)
	for _, p := range traces {
		tw.showTrial(w, prefix, dir, p)
	}
	tw.pollValidation(w, dir, prefix)
}

// pollValidation announces new validation batches, shows their trials
// and, once decision.json is written, the gate's decision.
func (tw *trialWatch) pollValidation(w io.Writer, dir, prefix string) {
	for _, b := range glob(filepath.Join(dir, rundir.ValidationDir, "*")) {
		id := filepath.Base(b)
		decided, known := tw.batches[id]
		if decided {
			continue
		}
		if !known {
			fmt.Fprintf(w, "%svalidation of batch %s started\n", prefix, id)
			tw.batches[id] = false
		}
		for _, p := range glob(filepath.Join(b, "*", "*", "k*", rundir.TraceFile)) {
			tw.showTrial(w, prefix, dir, p)
		}
		var d struct {
			Decision struct {
				Accept bool   `json:"accept"`
				Rule   string `json:"rule"`
				Reason string `json:"reason"`
			} `json:"decision"`
		}
		data, err := os.ReadFile(filepath.Join(b, rundir.DecisionFile))
		if err != nil || json.Unmarshal(data, &d) != nil {
			continue // not decided yet, or being written
		}
		verdict := "rejected"
		if d.Decision.Accept {
			verdict = "accepted"
		}
		fmt.Fprintf(w, "%svalidation of batch %s: %s by %s: %s\n", prefix, id, verdict, dash(d.Decision.Rule),
			truncate(d.Decision.Reason, 120))
		tw.batches[id] = true
	}
}

// showTrial prints one trial's outcome the first time its trace is
// complete; a trace being written is taken at the next poll.
func (tw *trialWatch) showTrial(w io.Writer, prefix, dir, path string) {
	if tw.seen[path] {
		return
	}
	var tr rundir.Trace
	data, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(data, &tr) != nil {
		return
	}
	tw.seen[path] = true
	rel, _ := filepath.Rel(dir, filepath.Dir(path))
	s := fmt.Sprintf("%s%s: %s", prefix, trialLabel(filepath.ToSlash(rel)), dash(string(tr.Status)))
	if tr.Reward != nil {
		s += fmt.Sprintf(", reward %.3f", *tr.Reward)
	}
	if tr.Timings.Total > 0 {
		s += ", " + tr.Timings.Total.Round(100*time.Millisecond).String()
	}
	if len(tr.Errors) > 0 && tr.Status != rundir.TrialScored {
		s += ": " + truncate(tr.Errors[0], 120)
	}
	fmt.Fprintln(w, s)
}

// trialLabel names a trial by its job directory, relative to the run:
// jobs/<task>/<NNNN> (jobs/<task>@<student>/<NNNN> for one of several
// students' trials of the task), jobs/eval/c<NNNN>/<task>/k<NN> or
// artifacts/validation/<batch>/<arm>/<task>/k<N>.
func trialLabel(rel string) string {
	parts := strings.Split(rel, "/")
	switch {
	case len(parts) == 3 && parts[0] == rundir.JobsDir:
		it := strings.TrimLeft(parts[2], "0")
		if task, student, ok := strings.Cut(parts[1], "@"); ok {
			return fmt.Sprintf("i%s %s trial by %s", it, task, student)
		}
		return fmt.Sprintf("i%s %s trial", it, parts[1])
	case len(parts) == 5 && parts[1] == "eval":
		return fmt.Sprintf("held-out trial of the skills after iteration %s: %s %s", strings.TrimLeft(strings.TrimPrefix(parts[2], "c"), "0"),
			parts[3], parts[4])
	case len(parts) == 6:
		return fmt.Sprintf("validation %s %s trial: %s %s", parts[2], parts[3], parts[4], parts[5])
	}
	return rel
}

// pollCalls announces the Advisor's review of a batch and each
// reflection on a skill when their first model call is recorded: both
// run between iterations, where nothing else shows progress.
func (tw *trialWatch) pollCalls(w io.Writer, prefix string) {
	lines, err := tw.calls.next()
	if err != nil {
		fmt.Fprintf(w, "%swarning: %v\n", prefix, err)
		return
	}
	for _, line := range lines {
		var c struct {
			Caller string `json:"caller"`
		}
		if json.Unmarshal(line, &c) != nil || tw.callers[c.Caller] {
			continue
		}
		if s := describePhase(c.Caller); s != "" {
			tw.callers[c.Caller] = true
			fmt.Fprintf(w, "%s%s\n", prefix, s)
		}
	}
}

// describePhase renders the phase a co-evolution caller stands for
// (coevo/advisor/<batch>, coevo/reflector/<role>/i<NNNN>); "" for others.
func describePhase(caller string) string {
	c, err := rundir.ParseCaller(caller)
	switch {
	case err != nil:
		return ""
	case c.Kind == rundir.CallerAdvisor && c.Batch != "":
		return fmt.Sprintf("the Advisor is reviewing batch %s", c.Batch)
	case c.Kind == rundir.CallerReflector && c.Role != "":
		return fmt.Sprintf("i%d reflection on the %s skill under way", c.Iteration, c.Role)
	}
	return ""
}

// glob lists matches in order; a bad pattern cannot happen with the
// fixed patterns above, and a directory that is not there yet has none.
func glob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	sort.Strings(m)
	return m
}
