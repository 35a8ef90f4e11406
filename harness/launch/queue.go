package launch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// Queued is an element of a job array still in the queue (pending,
// running, completing), as squeue reports it.
type Queued struct {
	Index  int
	State  string // PENDING, RUNNING, ...
	Reason string // why it waits, "None" when running
}

// Queue lists the job array's elements still in the queue; none once the
// array has ended (Slurm forgets a finished job after MinJobAge).
func (s *Slurm) Queue(ctx context.Context, jobID string) ([]Queued, error) {
	out, err := s.Runner.Run(ctx, "squeue", "--noheader", "--array", "--jobs="+jobID, "--format=%K|%T|%r")
	if err != nil {
		if strings.Contains(err.Error(), "Invalid job id") {
			return nil, nil
		}
		return nil, fmt.Errorf("ask Slurm about job %s: %w", jobID, err)
	}
	var q []Queued
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 {
			continue
		}
		i, err := strconv.Atoi(f[0])
		if err != nil {
			continue // not an array element ("N/A")
		}
		q = append(q, Queued{Index: i, State: f[1], Reason: f[2]})
	}
	return q, nil
}

// Ended says how Slurm saw an element of a job end: its state, reason and
// exit code, "" once Slurm has forgotten the job (after MinJobAge).
func (s *Slurm) Ended(ctx context.Context, jobID string, index int) (string, error) {
	id := fmt.Sprintf("%s_%d", jobID, index)
	out, err := s.Runner.Run(ctx, "scontrol", "--oneliner", "show", "job", id)
	if err != nil {
		if strings.Contains(err.Error(), "Invalid job id") {
			return "", nil
		}
		return "", fmt.Errorf("ask Slurm about job %s: %w", id, err)
	}
	want := map[string]bool{"JobState": true, "Reason": true, "ExitCode": true}
	var parts []string
	for _, kv := range strings.Fields(string(out)) {
		if k, _, ok := strings.Cut(kv, "="); ok && want[k] {
			parts = append(parts, kv)
			delete(want, k)
		}
	}
	return strings.Join(parts, " "), nil
}

// Explain says why an element left its row unfinished: Slurm's account
// while it remembers the job, else the last line the element wrote.
func (s *Slurm) Explain(ctx context.Context, dir, jobID string, index int) string {
	id := fmt.Sprintf("Slurm job %s_%d", jobID, index)
	if how, err := s.Ended(ctx, jobID, index); err == nil && how != "" {
		return id + ": " + how
	}
	out := filepath.Join(dir, rundir.SlurmOutput(jobID, index))
	last := lastLine(out)
	if last == "" {
		return fmt.Sprintf("%s: Slurm no longer knows the job and it wrote nothing to %s (did it start?)", id, out)
	}
	return fmt.Sprintf("%s: Slurm no longer knows the job; the last line it wrote (%s): %s", id, out, last)
}

// lastLine is the last non-empty line of a file ("" if none), cut short.
func lastLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	// A status line redrawn in place keeps only its last drawing.
	if i := strings.LastIndex(l, "\r"); i >= 0 {
		l = strings.TrimSpace(l[i+1:])
	}
	if len(l) > 300 {
		l = l[:300] + "..."
	}
	return l
}

// ReadJobs lists the job arrays submitted for a matrix, oldest first.
func ReadJobs(dir string) ([]Job, error) {
	path := filepath.Join(dir, rundir.SlurmJobsFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var jobs []Job
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var j Job
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			return nil, fmt.Errorf("read %s line %d: %w", path, n, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, sc.Err()
}

// appendJob adds job to the matrix's record, durably.
func appendJob(dir string, job Job) error {
	line, err := json.Marshal(job)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, rundir.SlurmJobsFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// RowState is how far a row got, from its run.json.
type RowState struct {
	Row string
	// Status is empty while the row's directory does not exist yet.
	Status     rundir.Status
	Iterations int
	// Error is the row's own account of how it failed, if it did.
	Error string
}

// Finished says the row has ended (completed, failed, stopped by a budget
// or interrupted); a row still "running" after its element ended was
// killed before it could say.
func (r RowState) Finished() bool {
	return r.Status != "" && r.Status != rundir.StatusRunning
}

// ReadRows reads the state of each row of the matrix in dir.
func ReadRows(dir string, rows []string) []RowState {
	out := make([]RowState, len(rows))
	for i, name := range rows {
		out[i] = RowState{Row: name}
		if _, err := os.Stat(filepath.Join(dir, name, rundir.ManifestFile)); err != nil {
			continue
		}
		d, err := rundir.Open(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		m := d.Manifest()
		out[i].Status, out[i].Iterations, out[i].Error = m.Status, m.CompletedIterations, m.Error
	}
	return out
}

// Progress is what a waiting launcher sees at one poll.
type Progress struct {
	Job   Job
	Queue []Queued
	Rows  []RowState // the job's rows, in its order
}

// WaitOptions say how Wait follows a job.
type WaitOptions struct {
	Dir  string
	Job  Job
	Poll time.Duration
	// Report, when set, is called at every poll.
	Report func(Progress)
}

// Wait polls the queue and the rows, reporting each answered poll, until
// no element of the job is left in the queue, or ctx ends. A few failed polls in a row (a controller
// restarting) are borne; more end the wait with the error.
func (s *Slurm) Wait(ctx context.Context, o WaitOptions) error {
	poll := o.Poll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	failures := 0
	for {
		q, err := s.Queue(ctx, o.Job.ID)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			if failures++; failures >= 5 {
				return err
			}
		default:
			failures = 0
		}
		if err == nil && o.Report != nil {
			o.Report(Progress{Job: o.Job, Queue: q, Rows: ReadRows(o.Dir, o.Job.Rows())})
		}
		if err == nil && len(q) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
