package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// progressIntervalEnv sets how often a plain progress line is written when
// stderr is not a terminal (a Go duration; "0" turns the lines off).
const progressIntervalEnv = "HARNESS_PROGRESS_INTERVAL"

// executePlan runs a validated plan with the orchestrator, on the
// factory's engine and models, and maps how it ended to the documented exit
// codes (harness help exit-codes).
func executePlan(ctx context.Context, f *Factory, x *ValidatedPlan) (err error) {
	// What the run prints goes through the same redaction as what it writes.
	redact := x.Config.Redactor()
	defer func() { err = redact.Error(err) }()
	if callsModels(x.Plan) {
		if err := x.Config.CheckAPIKeys(f.Getenv); err != nil {
			return UsageError(err)
		}
	}
	prog := newProgress(redact.Writer(x.IO.ErrOut), x.Plan, isTerminal(x.IO.ErrOut), x.Verbose, f.Now)
	stop := prog.start(ctx, f.Getenv)
	out, err := runPlan(ctx, f, x, prog)
	stop()
	if err != nil {
		var missing *benchmarks.MissingTasksError
		switch {
		case ctx.Err() != nil:
			return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("interrupted before the run started: %w", err)}
		case errors.As(err, &missing):
			// Nothing was created: naming a task that does not exist is bad input.
			return UsageError(err)
		}
		return &ExitError{Code: ExitFailed, Err: err}
	}
	if !x.JSON {
		defer writeWarningCounts(redact.Writer(x.IO.Out), prog.warnings())
	}
	return outcomeError(out, redact.Writer(x.IO.Out), x.JSON)
}

// writeWarningCounts ends the run's summary with each distinct trial
// warning of this session and how many trials had it.
func writeWarningCounts(w io.Writer, counts map[string]int) {
	for _, msg := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(w, "warning (%d trial(s)): %s\n", counts[msg], msg)
	}
}

// runPlan resolves the plan's tasks before anything else (a missing task
// is bad usage whether or not an engine answers), then connects to the
// engine and hands both, with the model providers, to the orchestrator.
func runPlan(ctx context.Context, f *Factory, x *ValidatedPlan, prog *progress) (*harness.Outcome, error) {
	planned, err := planTasks(ctx, f.Resolver, x.Plan, x.Config, false)
	if err != nil {
		return nil, err
	}
	backend, err := f.Sandbox(ctx, x.Config.ExecutorRuntime)
	if err != nil {
		return nil, err
	}
	defer backend.Close()
	opts := harness.ExecOptions{Plan: x.Plan, Tasks: planned.tasks, Pool: planned.pool, ValidateSplit: planned.validate, HeldOut: planned.heldOut, Backend: backend,
		Providers: f.Providers, Args: x.Args, ForceResume: x.Force, Events: prog.event, OnStart: prog.started}
	if x.Tune != nil {
		x.Tune(&opts)
	}
	return harness.ExecutePlan(ctx, opts)
}

// outcomeError prints how a run or matrix ended and maps it to the exit
// codes (harness help exit-codes).
func outcomeError(out *harness.Outcome, w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		writeOutcome(w, out)
	}
	if errors.Is(out.Err, harness.ErrConfigChanged) {
		// Nothing was started: the directory is as it was.
		return UsageError(out.Err)
	}
	switch out.Status {
	case rundir.StatusInterrupted:
		return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("interrupted; state saved: continue with --resume %s", out.Dir)}
	case rundir.StatusBudgetExhausted:
		return &ExitError{Code: ExitBudget, Err: fmt.Errorf("stopped by a budget; state saved: raise it and continue with --resume %s", out.Dir)}
	case rundir.StatusFailed:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("the run failed: %v", out.Err)}
	}
	if out.Trials > 0 && out.Scored == 0 && out.EnvFailures < out.Trials {
		// Every trial failed without a reward: a dead model endpoint or a
		// missing key looks like this, and must not pass as success.
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("no trial produced a reward (%d trials); check the model endpoints and keys, and see harness inspect %s", out.Trials, out.Dir)}
	}
	// The same, row by row: one row on a dead endpoint must not hide behind
	// the others' rewards.
	var dead []string
	for _, row := range out.Rows {
		if r := row.Result; r.Trials > 0 && r.Scored == 0 && r.EnvFailures < r.Trials {
			dead = append(dead, fmt.Sprintf("%s (%d trials)", row.Name, r.Trials))
		}
	}
	if len(dead) > 0 {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("no trial of row %s produced a reward; check the models that row uses, and see harness inspect %s", strings.Join(dead, ", "), out.Dir)}
	}
	if out.EnvFailures > 0 {
		return &ExitError{Code: ExitEnvFailures, Err: fmt.Errorf("finished, but %d of %d trials had environment failures (counted apart, never as zeros; see harness inspect %s)", out.EnvFailures, out.Trials, out.Dir)}
	}
	return nil
}

func writeOutcome(w io.Writer, out *harness.Outcome) {
	session := ""
	if out.Resumed {
		session = " in this session"
	}
	fmt.Fprintf(w, "%s: %s (%d trials%s, %d environment failures)\n", out.Dir, out.Status, out.Trials, session, out.EnvFailures)
	for _, r := range out.Rows {
		line := fmt.Sprintf("  %-34s %-17s %d iterations", r.Name, r.Status, r.Result.Iterations)
		if r.Error != "" && r.Error != string(r.Status) { // "interrupted" twice says nothing
			line += "  " + r.Error
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "Inspect it with: harness inspect %s\n", out.Dir)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress shows long work: a status line redrawn in place on a terminal,
// one plain line every few seconds otherwise, a line per trial with -v, and
// a snapshot on SIGUSR1.
type progress struct {
	w       io.Writer
	tty     bool
	verbose bool
	planned int
	rows    int
	now     func() time.Time

	mu        sync.Mutex
	began     time.Time
	dir       string
	done      int
	inFlight  int
	statuses  map[string]int
	rowsDone  int
	iteration map[string]int
	spend     float64
	tokens    int64
	retries   int64
	// validation counts the trials the skill gate ran, beyond the plan's;
	// evaluation the held-out trials of skill checkpoints, of evalPlanned.
	validation, evaluation, evalPlanned int
	// validationPlanned is the plan's expected validation trials.
	validationPlanned int
	lastLen           int
	// width is the terminal's width in columns; 0 asks the terminal (tests
	// set it). getenv supplies $COLUMNS when the terminal does not say.
	width  int
	getenv func(string) string
	// warned counts the trials of each distinct warning; each is shown once.
	warned map[string]int
}

// warnings returns the trials counted for each distinct trial warning.
func (p *progress) warnings() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.warned)
}

// newProgress starts counting for plan p; now is the clock its elapsed
// time and estimate are read from.
func newProgress(w io.Writer, p *harness.Plan, tty, verbose bool, now func() time.Time) *progress {
	return &progress{w: w, tty: tty, verbose: verbose, planned: p.Trials, evalPlanned: p.EvaluationTrials, validationPlanned: p.ValidationTrials, rows: len(p.Rows),
		statuses: map[string]int{}, iteration: map[string]int{}, warned: map[string]int{}, now: now, began: now()}
}

func (p *progress) started(dir string) {
	p.mu.Lock()
	p.dir = dir
	p.mu.Unlock()
	p.logf("writing to %s", dir)
}

func (p *progress) event(e harness.Event) {
	p.mu.Lock()
	p.spend, p.tokens, p.retries = e.Spend.CostUSD, e.Spend.Tokens(), e.Spend.Retries
	// warnings are cut to the terminal's width: the summary repeats them
	// whole.
	var lines, warnings []string
	switch e.Kind {
	case harness.EventTrialStart:
		p.inFlight++
	case harness.EventLeftoversRemoved:
		lines = append(lines, e.Message)
	case harness.EventRowHeld:
		lines = append(lines, "row "+e.Row+": "+e.Message)
	case harness.EventStateRebuilt:
		lines = append(lines, "warning: row "+e.Row+": "+e.Message)
	case harness.EventTrialEnd:
		p.inFlight = max(0, p.inFlight-1)
	case harness.EventTrialDone:
		p.done++
		p.statuses[e.Status]++
		if p.verbose {
			line := fmt.Sprintf("%s iteration %d %s: %s, reward %s", e.Row, e.Iteration, e.Task, e.Status, rewardText(e.Reward))
			if e.Message != "" {
				line += " (" + e.Message + ")"
			}
			lines = append(lines, line)
		} else if e.Message != "" {
			// A failed trial says why even without --verbose.
			lines = append(lines, fmt.Sprintf("%s iteration %d %s: %s (%s)", e.Row, e.Iteration, e.Task, e.Status, e.Message))
		}
		for _, w := range e.Warnings {
			// Each distinct warning shows once, whatever task raised it;
			// the summary counts the trials that had it.
			if p.warned[w]++; p.warned[w] == 1 {
				warnings = append(warnings, "warning: task "+e.Task+": "+w+" (shown once; the summary counts its trials)")
			}
		}
	case harness.EventValidationTrialDone:
		p.validation++
	case harness.EventEvaluationStart:
		lines = append(lines, fmt.Sprintf("%s: evaluating the skills of checkpoint %d on the held-out tasks", e.Row, e.Iteration))
	case harness.EventEvaluationTrialDone:
		p.evaluation++
		if p.verbose {
			lines = append(lines, fmt.Sprintf("%s checkpoint %d %s (held out): %s, reward %s", e.Row, e.Iteration, e.Task, e.Status, rewardText(e.Reward)))
		}
	case harness.EventIterationStart:
		p.iteration[e.Row] = e.Iteration
	case harness.EventSkillUpdate:
		lines = append(lines, fmt.Sprintf("%s iteration %d: %s", e.Row, e.Iteration, e.Message))
	case harness.EventRunDone:
		p.rowsDone++
		lines = append(lines, fmt.Sprintf("row %s: %s", e.Row, e.Status))
	}
	p.mu.Unlock()
	for _, line := range lines {
		p.logf("%s", line)
	}
	for _, line := range warnings {
		p.logFitted(line, func(s string, width int) string {
			if width <= 0 {
				return s
			}
			return cut(s, width-1)
		})
	}
	if p.tty {
		p.redraw()
	}
}

func (p *progress) status() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := p.now().Sub(p.began).Truncate(time.Second)
	// The ETA counts every trial still to come, held-out evaluation
	// included, at the pace of all trials so far.
	eta := "?"
	done, planned := p.done+p.evaluation+p.validation, p.planned+p.evalPlanned+max(p.validation, p.validationPlanned)
	if done > 0 && planned > done {
		rem := time.Duration(float64(p.now().Sub(p.began)) / float64(done) * float64(planned-done))
		eta = rem.Truncate(time.Second).String()
	} else if planned > 0 && done >= planned {
		eta = "0s"
	}
	var st []string
	for k, v := range p.statuses {
		st = append(st, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(st)
	iters := make([]string, 0, len(p.iteration))
	for row, it := range p.iteration {
		iters = append(iters, fmt.Sprintf("%s@%d", row, it))
	}
	sort.Strings(iters)
	itText := strings.Join(iters, " ")
	if len(iters) > 3 {
		itText = fmt.Sprintf("%d rows active", len(iters)-p.rowsDone)
	}
	trials := fmt.Sprintf("trials %d/%d, %d in flight", p.done, p.planned, p.inFlight)
	if p.validation > 0 || p.validationPlanned > 0 {
		trials += fmt.Sprintf(", validation %d/~%d", p.validation, max(p.validation, p.validationPlanned))
	}
	if p.evalPlanned > 0 {
		trials += fmt.Sprintf(", held-out evaluation %d/%d", p.evaluation, p.evalPlanned)
	}
	return fmt.Sprintf("rows %d/%d | %s | %s | %s | %d tokens, %d retries, $%.4f | elapsed %s, eta %s",
		p.rowsDone, p.rows, trials, strings.Join(st, ", "), itText, p.tokens, p.retries, p.spend, elapsed, eta)
}

// statusText is the status line as printed: without the parts that are
// empty (no trial done yet, no iteration started).
func (p *progress) statusText() string { return dropEmptyParts(p.status()) }

func (p *progress) redraw() {
	s := p.status()
	p.mu.Lock()
	defer p.mu.Unlock()
	width := p.width
	if width == 0 {
		width = terminalWidth(p.w, p.getenv) // asked each time: the window may be resized
	}
	s = dropEmptyParts(fitStatus(s, width))
	pad := ""
	if n := p.lastLen - utf8.RuneCountInString(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	fmt.Fprintf(p.w, "\r%s%s", s, pad)
	p.lastLen = utf8.RuneCountInString(s)
}

// logf writes a log line; on a terminal it first clears the status line.
func (p *progress) logf(format string, args ...any) {
	p.logFitted(fmt.Sprintf(format, args...), nil)
}

// logFitted writes a log line; on a terminal it first clears the status
// line, and fit (when not nil) shortens the line to the terminal's width,
// so the terminal does not wrap it.
func (p *progress) logFitted(line string, fit func(s string, width int) string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && fit != nil {
		width := p.width
		if width == 0 {
			width = terminalWidth(p.w, p.getenv)
		}
		line = fit(line, width)
	}
	if p.tty && p.lastLen > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.lastLen))
		p.lastLen = 0
	}
	fmt.Fprintln(p.w, line)
}

// start begins the periodic output and the SIGUSR1 snapshot; the returned
// function stops both and ends the status line. getenv may set the
// interval of plain lines.
func (p *progress) start(ctx context.Context, getenv func(string) string) func() {
	p.mu.Lock()
	p.getenv = getenv
	p.mu.Unlock()
	interval := time.Second / 2
	if !p.tty {
		interval = 10 * time.Second
		if v := getenv(progressIntervalEnv); v != "" {
			if d, err := time.ParseDuration(v); err == nil {
				interval = d
			}
		}
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var tick <-chan time.Time
		if interval > 0 {
			t := time.NewTicker(interval)
			defer t.Stop()
			tick = t.C
		}
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-usr1:
				p.logf("status: %s", p.statusText())
			case <-tick:
				if p.tty {
					p.redraw()
				} else {
					p.logf("progress: %s", p.statusText())
				}
			}
		}
	}()
	return func() {
		signal.Stop(usr1)
		close(done)
		wg.Wait()
		if p.tty {
			// The last line stays on screen: fitted like the live one.
			p.logFitted(p.status(), func(s string, width int) string { return dropEmptyParts(fitStatus(s, width)) })
		}
	}
}

func rewardText(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.3g", *r)
}
