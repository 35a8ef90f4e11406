package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/launch"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// cancelGrace bounds how long an interrupted `matrix --launcher slurm`
// waits for its cancelled elements to save their rows and leave the queue.
const cancelGrace = 2 * time.Minute

// runOnSlurm carries out a matrix plan as a Slurm job array: the matrix
// directory is written here as for a local run, then every row not yet
// completed becomes one array element running `harness matrix --resume DIR
// --row NAME`. It waits for the array (unless --detach), showing what the
// rows' directories say, and settles the matrix's status once it has ended.
func (o *MatrixOptions) runOnSlurm(ctx context.Context, x *ValidatedPlan) (err error) {
	redact := x.Config.Redactor()
	defer func() { err = redact.Error(err) }()
	if o.Scheduler == nil || o.Executable == nil {
		return &ExitError{Code: ExitFailed, Err: errors.New("this build cannot submit to Slurm: run the matrix with --launcher local")}
	}
	if !x.Plan.Offline {
		if err := x.Config.CheckAPIKeys(o.Getenv); err != nil {
			return UsageError(err)
		}
	}
	// Tasks are fetched once, here, into the cache the elements share; a
	// missing one stops the matrix before anything is submitted.
	if _, err := planTasks(ctx, o.Resolver, x.Plan, x.Config, false); err != nil {
		if errors.As(err, new(*benchmarks.MissingTasksError)) {
			return UsageError(err)
		}
		return &ExitError{Code: ExitFailed, Err: err}
	}
	md, refused, err := harness.OpenMatrix(harness.ExecOptions{Plan: x.Plan, Args: x.Args, ForceResume: x.Force})
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	if refused != nil {
		return outcomeError(refused, redact.Writer(x.IO.Out), x.JSON)
	}
	defer md.Unlock()
	dir, err := filepath.Abs(md.Path)
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	sl := &launch.Slurm{Runner: o.Scheduler, Config: x.Config.Launcher}
	arr := o.array(x.Plan)
	rows, run := arr.unfinished(dir, x.Plan)
	if err := stillQueued(ctx, sl, dir); err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	if len(run) == 0 {
		return o.settle(ctx, sl, md, x, nil)
	}
	cmd, err := o.elementCommand(dir, x)
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	job, err := sl.Submit(ctx, launch.SubmitOptions{Dir: dir, Command: cmd, Flag: arr.flag, Rows: rows, Run: run, Groups: arr.groups,
		Name: "harness-" + x.Plan.Name})
	if err != nil && job.ID == "" {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%w; nothing runs yet: once that is fixed, submit the %s with harness %s --resume %s --launcher slurm", err, arr.command, arr.command, dir)}
	} else if err != nil {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%w; follow it with squeue --jobs %s", err, job.ID)}
	}
	w := redact.Writer(x.IO.ErrOut)
	fmt.Fprintf(w, "writing to %s\nsubmitted Slurm job array %s: %d of %d %s, one element each (the record: %s)\n",
		dir, job.ID, len(run), len(rows), arr.units, filepath.Join(dir, rundir.SlurmJobsFile))
	if o.Detach {
		return detached(x, dir, job, w, arr.command)
	}
	if err := o.follow(ctx, sl, dir, job, x, w); err != nil {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%w; the array may still be running: follow it with squeue --jobs %s, and once it has ended settle the %s with harness %s --resume %s --launcher slurm", err, job.ID, arr.command, arr.command, dir)}
	}
	return o.settle(context.WithoutCancel(ctx), sl, md, x, &job)
}

// slurmArray is how a plan's rows become the elements of a job array: one
// row each (a matrix), or, with groups, the rows of one seed each (a
// network, whose labs meet at the diffusion barrier and so must run in
// one process; a barrier across elements would deadlock whenever the
// cluster cannot run them all at once).
type slurmArray struct {
	command string // the subcommand an element resumes with
	flag    string // how an element is told its row or group
	units   string // what an element runs, for messages
	// names are the groups' names and groups their rows; nil for a row
	// each.
	names  []string
	groups [][]string
}

// array is how the matrix's plan is laid out as a job array.
func (o *MatrixOptions) array(p *harness.Plan) slurmArray {
	if !o.network {
		return slurmArray{command: "matrix", flag: "--row", units: "rows"}
	}
	a := slurmArray{command: "network", flag: "--group", units: "seeds (all their labs and treatments)"}
	for _, s := range p.Seeds {
		var rows []string
		for _, r := range p.Rows {
			if r.Seed == s {
				rows = append(rows, r.Name)
			}
		}
		a.names, a.groups = append(a.names, seedGroup(s)), append(a.groups, rows)
	}
	return a
}

// seedGroup names the element of a network's array that runs a seed.
func seedGroup(seed int64) string { return "seed" + strconv.FormatInt(seed, 10) }

// unfinished returns the names of the array's elements, in order (the
// plan's rows, or its groups), and the indexes of those with a row whose
// directory does not say completed with every iteration.
func (a slurmArray) unfinished(dir string, plan *harness.Plan) (names []string, run []int) {
	done := map[string]bool{}
	for _, st := range launch.ReadRows(dir, rowNamesOf(plan)) {
		done[st.Row] = st.Status == rundir.StatusCompleted && st.Iterations >= plan.Iterations
	}
	if a.groups == nil {
		names = rowNamesOf(plan)
		for i, r := range names {
			if !done[r] {
				run = append(run, i)
			}
		}
		return names, run
	}
	for i, rows := range a.groups {
		if slices.ContainsFunc(rows, func(r string) bool { return !done[r] }) {
			run = append(run, i)
		}
	}
	return a.names, run
}

// detached prints the submitted array (its id, or with --json the matrix
// directory and the job) and how to follow and settle it, for a matrix the
// command does not wait for.
func detached(x *ValidatedPlan, dir string, job launch.Job, w io.Writer, command string) error {
	if x.JSON {
		enc := json.NewEncoder(x.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Dir string     `json:"dir"`
			Job launch.Job `json:"job"`
		}{dir, job}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(x.IO.Out, "%s\n", job.ID)
	}
	fmt.Fprintf(w, "follow it with `squeue --jobs %s` and `harness inspect %s`; once it has ended, `harness %s --resume %s --launcher slurm` settles the %s and runs what is unfinished\n",
		job.ID, dir, command, dir, command)
	return nil
}

// stillQueued refuses to go on while an array submitted earlier for the
// matrix still has elements in the queue: submitting their rows again
// would run them twice.
func stillQueued(ctx context.Context, sl *launch.Slurm, dir string) error {
	jobs, err := launch.ReadJobs(dir)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		q, err := sl.Queue(ctx, j.ID)
		if err != nil {
			return err
		}
		if len(q) > 0 {
			return fmt.Errorf("Slurm job %s of %s still has %d element(s) in the queue; wait until it has ended (squeue --jobs %s) or cancel it (scancel %s), then resume",
				j.ID, dir, len(q), j.ID, j.ID)
		}
	}
	return nil
}

func rowNamesOf(p *harness.Plan) []string {
	out := make([]string, len(p.Rows))
	for i, r := range p.Rows {
		out[i] = r.Name
	}
	return out
}

// elementCommand is what every element runs, "--row NAME" aside: this
// binary resuming the matrix with the choices of this command line that a
// resume takes.
func (o *MatrixOptions) elementCommand(dir string, x *ValidatedPlan) ([]string, error) {
	exe, err := o.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the harness binary for the Slurm elements: %w", err)
	}
	cmd := []string{exe, o.array(x.Plan).command, "--resume", dir, "--iterations", strconv.Itoa(x.Plan.Iterations)}
	if o.Jobs > 0 {
		cmd = append(cmd, "--jobs", strconv.Itoa(o.Jobs))
	}
	if o.ConfigDir != "" {
		abs, err := filepath.Abs(o.ConfigDir)
		if err != nil {
			return nil, err
		}
		cmd = append(cmd, "--config-dir", abs)
	}
	if o.BudgetUSD != nil {
		cmd = append(cmd, "--budget-usd", strconv.FormatFloat(*o.BudgetUSD, 'g', -1, 64))
	}
	if o.BudgetTokens != nil {
		cmd = append(cmd, "--budget-tokens", strconv.FormatInt(*o.BudgetTokens, 10))
	}
	if x.Force {
		cmd = append(cmd, "--force")
	}
	if x.Verbose {
		cmd = append(cmd, "--verbose")
	}
	return cmd, nil
}

// follow waits for the job array, showing each row's progress as its
// directory says it. Interrupted, it cancels the array and waits a while
// for the elements to save their rows. Its error says it lost the array.
func (o *MatrixOptions) follow(ctx context.Context, sl *launch.Slurm, dir string, job launch.Job, x *ValidatedPlan, w io.Writer) error {
	show := &slurmProgress{w: w, rows: map[string]launch.RowState{}}
	opts := launch.WaitOptions{Dir: dir, Job: job, Poll: x.Config.Launcher.PollInterval.Duration, Report: show.report}
	err := sl.Wait(ctx, opts)
	if ctx.Err() == nil {
		return err
	}
	fmt.Fprintf(w, "interrupted: cancelling Slurm job %s; its running elements save their rows and remove their containers\n", job.ID)
	bg := context.WithoutCancel(ctx)
	if err := sl.Cancel(bg, job.ID); err != nil {
		fmt.Fprintf(w, "warning: %v; cancel it yourself with `scancel %s`\n", err, job.ID)
		return nil
	}
	cctx, cancel := context.WithTimeout(bg, cancelGrace)
	defer cancel()
	opts.Poll = time.Second
	if err := sl.Wait(cctx, opts); err != nil {
		// An element that has not saved by now is stuck: end it.
		fmt.Fprintf(w, "warning: the elements of Slurm job %s have not all ended: %v; cancelling what is left\n", job.ID, err)
		if err := sl.Kill(bg, job.ID); err != nil {
			fmt.Fprintf(w, "warning: %v; cancel it yourself with `scancel %s`\n", err, job.ID)
		}
	}
	return nil
}

// slurmProgress prints a line whenever a row's state or the array's queue
// changes.
type slurmProgress struct {
	w     io.Writer
	rows  map[string]launch.RowState
	queue string
}

func (p *slurmProgress) report(pr launch.Progress) {
	finished := 0
	for _, r := range pr.Rows {
		if r.Finished() {
			finished++
		}
		if old, ok := p.rows[r.Row]; ok && old == r || !ok && r.Status == "" {
			continue
		}
		p.rows[r.Row] = r
		fmt.Fprintf(p.w, "row %s: %s, %d iterations done\n", r.Row, r.Status, r.Iterations)
	}
	counts := map[string]int{}
	for _, q := range pr.Queue {
		counts[strings.ToLower(q.State)]++
	}
	var parts []string
	for state, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, state))
	}
	sort.Strings(parts)
	line := fmt.Sprintf("Slurm job %s: %d of %d rows finished", pr.Job.ID, finished, len(pr.Rows))
	if len(parts) > 0 {
		line += "; elements " + strings.Join(parts, ", ")
	}
	if line != p.queue {
		p.queue = line
		fmt.Fprintln(p.w, line)
	}
}

// settle reads how every row ended, explains each row the job left
// unfinished with what Slurm or the element says, records the matrix's
// status, and prints and maps the outcome as a local matrix does.
func (o *MatrixOptions) settle(ctx context.Context, sl *launch.Slurm, md *rundir.Dir, x *ValidatedPlan, job *launch.Job) error {
	elems := map[string]launch.Element{}
	if job != nil {
		for _, e := range job.Elements {
			for _, r := range e.RowNames() {
				elems[r] = e
			}
		}
	}
	out := &harness.Outcome{Dir: md.Path, Status: rundir.StatusCompleted, Resumed: x.Plan.ResumeDir != ""}
	for _, st := range launch.ReadRows(md.Path, rowNamesOf(x.Plan)) {
		ro := harness.RowOutcome{Name: st.Row, Dir: md.RowPath(st.Row), Status: st.Status, Error: st.Error}
		if !st.Finished() {
			// Never started, or killed before it could say.
			ro.Status = rundir.StatusInterrupted
		}
		if e, ok := elems[st.Row]; ok && ro.Status != rundir.StatusCompleted {
			ro.Error = strings.TrimSpace(ro.Error + "; " + sl.Explain(ctx, md.Path, job.ID, e.Index))
			ro.Error = strings.TrimPrefix(ro.Error, "; ")
		}
		ro.Result = harness.Result{Status: ro.Status, Iterations: st.Iterations}
		if out.Err == nil && ro.Status != rundir.StatusCompleted {
			out.Err = fmt.Errorf("row %s: %s", st.Row, cmpOr(ro.Error, string(ro.Status)))
		}
		out.Status = worseOf(out.Status, ro.Status)
		out.Rows = append(out.Rows, ro)
	}
	_ = md.UpdateManifest(func(m *rundir.Manifest) {
		m.Status, m.Error = out.Status, ""
		if out.Err != nil {
			m.Error = out.Err.Error()
		}
		m.MarkFinished()
	})
	err := outcomeError(out, x.Config.Redactor().Writer(x.IO.Out), x.JSON)
	var ee *ExitError
	if errors.As(err, &ee) && (ee.Code == ExitInterrupted || ee.Code == ExitBudget) {
		ee.Err = fmt.Errorf("%w (add --launcher slurm to run the rest as a Slurm job array again)", ee.Err)
	}
	return err
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// worseOf orders how rows end as a local matrix does: interrupted, failed,
// stopped by a budget, completed.
func worseOf(a, b rundir.Status) rundir.Status {
	rank := map[rundir.Status]int{rundir.StatusCompleted: 0, rundir.StatusBudgetExhausted: 1, rundir.StatusFailed: 2, rundir.StatusInterrupted: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}
