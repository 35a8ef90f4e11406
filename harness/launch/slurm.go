package launch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
)

// Slurm submits and follows the job arrays of matrices.
type Slurm struct {
	Runner Runner
	// Config holds the [launcher] settings every element is submitted with.
	Config config.Launcher
	Now    func() time.Time
}

// Job is one submitted job array, as recorded in rundir.SlurmJobsFile.
type Job struct {
	ID        string    `json:"job_id"`
	Submitted time.Time `json:"submitted"`
	// Script is the batch script, relative to the matrix directory.
	Script   string    `json:"script"`
	Elements []Element `json:"elements"`
}

// Element is one element of a job array: its index and the row it runs,
// or, when it runs several rows side by side (a network's seed), the name
// of that group and its rows.
type Element struct {
	Index int      `json:"index"`
	Row   string   `json:"row"`
	Rows  []string `json:"rows,omitempty"`
}

// RowNames are the rows the element runs.
func (e Element) RowNames() []string {
	if len(e.Rows) > 0 {
		return e.Rows
	}
	return []string{e.Row}
}

// Rows are the names of the job's rows, in index order.
func (j Job) Rows() []string {
	var out []string
	for _, e := range j.Elements {
		out = append(out, e.RowNames()...)
	}
	return out
}

// SubmitOptions say what one job array runs.
type SubmitOptions struct {
	// Dir is the matrix directory; every node must see it at this path.
	Dir string
	// Command is how an element starts the harness on its row: the binary
	// and its arguments, to which Flag (--row when empty) and the row's
	// name are appended.
	Command []string
	Flag    string
	// Rows are all the matrix's rows in plan order: an element's index is
	// its row's position. Run lists the indices to submit.
	Rows []string
	Run  []int
	// Groups, when set, makes each of Rows the name of a group of rows run
	// side by side by one element: Groups[i] are the rows of Rows[i].
	Groups [][]string
	// Name is the job's name in the queue.
	Name string
}

// Submit writes the batch script into the matrix directory, submits it as
// one job array of the rows o.Run names, and records the job.
func (s *Slurm) Submit(ctx context.Context, o SubmitOptions) (Job, error) {
	if len(o.Run) == 0 {
		return Job{}, fmt.Errorf("submit %s: no rows to run", o.Dir)
	}
	jobs, err := ReadJobs(o.Dir)
	if err != nil {
		return Job{}, err
	}
	script := rundir.SlurmScript(len(jobs) + 1)
	if err := os.MkdirAll(filepath.Join(o.Dir, rundir.SlurmDir), 0o755); err != nil {
		return Job{}, fmt.Errorf("submit %s: %w", o.Dir, err)
	}
	if err := durable.WriteFile(filepath.Join(o.Dir, script), []byte(s.script(o)), 0o755); err != nil {
		return Job{}, fmt.Errorf("write the batch script of %s: %w", o.Dir, err)
	}
	array := arraySpec(o.Run)
	if s.Config.MaxRunning > 0 {
		array += "%" + strconv.Itoa(s.Config.MaxRunning)
	}
	out, err := s.Runner.Run(ctx, "sbatch", "--parsable", "--array="+array, filepath.Join(o.Dir, script))
	if err != nil {
		return Job{}, fmt.Errorf("submit the rows of %s to Slurm: %w", o.Dir, err)
	}
	// --parsable prints "id" or "id;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return Job{}, fmt.Errorf("submit the rows of %s to Slurm: sbatch printed %q, not a job id", o.Dir, strings.TrimSpace(string(out)))
	}
	job := Job{ID: id, Submitted: s.now().UTC(), Script: script}
	for _, i := range o.Run {
		e := Element{Index: i, Row: o.Rows[i]}
		if i < len(o.Groups) {
			e.Rows = o.Groups[i]
		}
		job.Elements = append(job.Elements, e)
	}
	if err := appendJob(o.Dir, job); err != nil {
		// The array runs anyway; say how to find it.
		return job, fmt.Errorf("submitted Slurm job %s, but recording it failed: %w", id, err)
	}
	return job, nil
}

func (s *Slurm) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// script is the batch script: the #SBATCH lines of [launcher], its set-up
// snippet, then the harness on the row of this element's index.
func (s *Slurm) script(o SubmitOptions) string {
	c := s.Config
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	opt := func(format string, args ...any) { fmt.Fprintf(&b, "#SBATCH "+format+"\n", args...) }
	opt("--job-name=%s", o.Name)
	opt("--output=%s", filepath.Join(o.Dir, rundir.SlurmOutputPattern))
	if c.Partition != "" {
		opt("--partition=%s", c.Partition)
	}
	if c.TimeLimit != "" {
		opt("--time=%s", c.TimeLimit)
	}
	if c.CPUs > 0 {
		opt("--cpus-per-task=%d", c.CPUs)
	}
	if c.Memory != "" {
		opt("--mem=%s", c.Memory)
	}
	// Before the lines of [launcher] sbatch, so that a --signal there wins.
	opt("--signal=B:TERM@%d", int(stopWarning(c.TimeLimit).Seconds()))
	for _, line := range c.Sbatch {
		opt("%s", line)
	}
	fmt.Fprintf(&b, "# Written by harness: element i runs row (or group of rows) rows[i] of %s.\nset -e\n", o.Dir)
	if setup := strings.TrimSpace(c.Setup); setup != "" {
		b.WriteString(setup + "\n")
	}
	quoted := make([]string, len(o.Rows))
	for i, r := range o.Rows {
		quoted[i] = shellQuote(r)
	}
	fmt.Fprintf(&b, "rows=(%s)\n", strings.Join(quoted, " "))
	args := make([]string, len(o.Command))
	for i, a := range o.Command {
		args[i] = shellQuote(a)
	}
	flag := o.Flag
	if flag == "" {
		flag = "--row"
	}
	fmt.Fprintf(&b, "exec %s %s \"${rows[$SLURM_ARRAY_TASK_ID]}\"\n", strings.Join(args, " "), flag)
	return b.String()
}

// arraySpec is sbatch --array for the indices: "0,2,3".
func arraySpec(idx []int) string {
	s := slices.Sorted(slices.Values(idx))
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Cancel stops the job array so that every element can save its row.
// Elements still pending are cancelled and never start. Running ones get
// SIGTERM in their batch shell alone, which the script replaced with the
// harness, so that it saves its row and removes its containers, then ends
// with the element; its children and nothing else are signalled. A plain
// scancel would follow its SIGTERM with SIGKILL after Slurm's KillWait (30 s
// by default), often before the row is saved. Cancel does not wait for the
// elements to end; Kill ends those that do not.
func (s *Slurm) Cancel(ctx context.Context, jobID string) error {
	if _, err := s.Runner.Run(ctx, "scancel", "--state=PENDING", jobID); err != nil {
		return fmt.Errorf("cancel the pending elements of Slurm job %s: %w", jobID, err)
	}
	if _, err := s.Runner.Run(ctx, "scancel", "--batch", "--signal=TERM", jobID); err != nil {
		// Every element may have ended since: nothing left to signal.
		if q, qerr := s.Queue(ctx, jobID); qerr == nil && len(q) == 0 {
			return nil
		}
		return fmt.Errorf("signal the running elements of Slurm job %s to stop: %w", jobID, err)
	}
	return nil
}

// Kill cancels what is left of the job array outright.
func (s *Slurm) Kill(ctx context.Context, jobID string) error {
	if _, err := s.Runner.Run(ctx, "scancel", jobID); err != nil {
		return fmt.Errorf("cancel Slurm job %s: %w", jobID, err)
	}
	return nil
}

// maxStopWarning is how long before an element's time limit Slurm sends
// its harness SIGTERM (#SBATCH --signal), so that it saves its row and
// removes its containers before the limit kills it.
const maxStopWarning = 2 * time.Minute

// stopWarning is the warning for a time limit: maxStopWarning, or a
// quarter of a limit shorter than eight minutes (at least a second).
func stopWarning(limit string) time.Duration {
	d, ok := slurmDuration(limit)
	if !ok || d/4 >= maxStopWarning {
		return maxStopWarning
	}
	return max(d/4, time.Second)
}

// slurmDuration reads sbatch --time: minutes, MM:SS, HH:MM:SS, D-HH,
// D-HH:MM or D-HH:MM:SS. It says false for no limit or a form it does not
// know.
func slurmDuration(s string) (time.Duration, bool) {
	days, hasDays := 0, false
	if d, rest, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil {
			return 0, false
		}
		days, s, hasDays = n, rest, true
	}
	var f []int
	for _, part := range strings.Split(s, ":") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return 0, false
		}
		f = append(f, n)
	}
	var h, m, sec int
	switch {
	case hasDays && len(f) <= 3: // D-HH[:MM[:SS]]
		f = append(f, 0, 0)
		h, m, sec = f[0], f[1], f[2]
	case len(f) == 1:
		m = f[0]
	case len(f) == 2:
		m, sec = f[0], f[1]
	case len(f) == 3:
		h, m, sec = f[0], f[1], f[2]
	default:
		return 0, false
	}
	d := time.Duration(days)*24*time.Hour + time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second
	return d, d > 0
}
