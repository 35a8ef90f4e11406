package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// fakeRunner answers each command with the next scripted reply for its
// name and records every call.
type fakeRunner struct {
	replies map[string][]reply
	calls   [][]string
}

type reply struct {
	out string
	err error
}

func (f *fakeRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, append([]string{name}, args...))
	rs := f.replies[name]
	if len(rs) == 0 {
		return nil, fmt.Errorf("%s: no reply scripted", name)
	}
	r := rs[0]
	if len(rs) > 1 {
		f.replies[name] = rs[1:]
	}
	return []byte(r.out), r.err
}

func TestSubmitWritesScriptSubmitsAndRecords(t *testing.T) {
	dir := t.TempDir()
	run := &fakeRunner{replies: map[string][]reply{"sbatch": {{out: "4242;cluster\n"}, {out: "4243\n"}}}}
	s := &Slurm{Runner: run, Now: func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) },
		Config: config.Launcher{Partition: "short", TimeLimit: "1:00:00", CPUs: 4, Memory: "8G", MaxRunning: 2,
			Sbatch: []string{"--account=lab"}, Setup: "module load docker"}}
	rows := []string{"a-seed1", "a-seed2", "it's"}
	job, err := s.Submit(t.Context(), SubmitOptions{Dir: dir, Command: []string{"/bin/harness", "matrix", "--resume", dir}, Rows: rows, Run: []int{2, 0}, Name: "harness-m"})
	if err != nil {
		t.Fatal(err)
	}
	if job.ID != "4242" || !slices.Equal(job.Rows(), []string{"it's", "a-seed1"}) || job.Script != rundir.SlurmScript(1) {
		t.Errorf("job = %+v", job)
	}
	wantCall := []string{"sbatch", "--parsable", "--array=0,2%2", filepath.Join(dir, rundir.SlurmScript(1))}
	if !slices.Equal(run.calls[0], wantCall) {
		t.Errorf("sbatch call %q, want %q", run.calls[0], wantCall)
	}
	data, err := os.ReadFile(filepath.Join(dir, rundir.SlurmScript(1)))
	if err != nil {
		t.Fatal(err)
	}
	script := string(data)
	for _, want := range []string{"#!/bin/bash\n", "#SBATCH --job-name=harness-m\n", "#SBATCH --output=" + filepath.Join(dir, rundir.SlurmOutputPattern) + "\n",
		"#SBATCH --partition=short\n", "#SBATCH --time=1:00:00\n", "#SBATCH --cpus-per-task=4\n", "#SBATCH --mem=8G\n",
		"#SBATCH --account=lab\n", "#SBATCH --signal=B:TERM@120\n", "module load docker\n", `rows=('a-seed1' 'a-seed2' 'it'\''s')`,
		`exec '/bin/harness' 'matrix' '--resume' '` + dir + `' --row "${rows[$SLURM_ARRAY_TASK_ID]}"`} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	// A second submission gets its own script and a second record line.
	if _, err := s.Submit(t.Context(), SubmitOptions{Dir: dir, Command: []string{"h"}, Rows: rows, Run: []int{1}, Name: "m"}); err != nil {
		t.Fatal(err)
	}
	jobs, err := ReadJobs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].ID != "4242" || jobs[1].ID != "4243" || jobs[1].Script != rundir.SlurmScript(2) ||
		!jobs[0].Submitted.Equal(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("recorded jobs = %+v", jobs)
	}
}

// An array of groups gives each element its group's name after the flag
// asked for, and records the rows each element runs, which are the job's
// rows.
func TestSubmitGroupsOfRows(t *testing.T) {
	dir := t.TempDir()
	run := &fakeRunner{replies: map[string][]reply{"sbatch": {{out: "77\n"}}}}
	s := &Slurm{Runner: run}
	job, err := s.Submit(t.Context(), SubmitOptions{Dir: dir, Command: []string{"h", "network"}, Flag: "--group",
		Rows: []string{"seed1", "seed2"}, Groups: [][]string{{"none-a-seed1", "none-b-seed1"}, {"none-a-seed2", "none-b-seed2"}}, Run: []int{1}, Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if len(job.Elements) != 1 || job.Elements[0].Row != "seed2" || !slices.Equal(job.Rows(), []string{"none-a-seed2", "none-b-seed2"}) {
		t.Errorf("job = %+v, want one element running seed2's two rows", job)
	}
	data, err := os.ReadFile(filepath.Join(dir, rundir.SlurmScript(1)))
	if err != nil {
		t.Fatal(err)
	}
	if want := `exec 'h' 'network' --group "${rows[$SLURM_ARRAY_TASK_ID]}"`; !strings.Contains(string(data), want) {
		t.Errorf("script lacks %q:\n%s", want, data)
	}
	jobs, err := ReadJobs(dir)
	if err != nil || len(jobs) != 1 || !slices.Equal(jobs[0].Elements[0].Rows, job.Elements[0].Rows) {
		t.Errorf("recorded jobs = %+v (%v), want the element's rows", jobs, err)
	}
}

func TestSubmitErrors(t *testing.T) {
	tests := []struct {
		name  string
		reply reply
		run   []int
		want  string
	}{
		{"nothing to run", reply{}, nil, "no rows to run"},
		{"sbatch fails", reply{err: errors.New("sbatch: error: invalid partition specified: gpu")}, []int{0}, "invalid partition"},
		{"not a job id", reply{out: "Submitted batch job 12\n"}, []int{0}, "not a job id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := &Slurm{Runner: &fakeRunner{replies: map[string][]reply{"sbatch": {tt.reply}}}}
			_, err := s.Submit(t.Context(), SubmitOptions{Dir: dir, Command: []string{"h"}, Rows: []string{"a"}, Run: tt.run})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
			if jobs, _ := ReadJobs(dir); len(jobs) != 0 {
				t.Errorf("a failed submission was recorded: %+v", jobs)
			}
		})
	}
}

func TestQueueParsesElementsAndTreatsAnUnknownJobAsEnded(t *testing.T) {
	run := &fakeRunner{replies: map[string][]reply{"squeue": {
		{out: "0|RUNNING|None\n3|PENDING|Resources\nN/A|RUNNING|None\n"},
		{err: errors.New("squeue: error: Invalid job id specified")},
		{err: errors.New("squeue: error: Unable to contact slurm controller")},
	}}}
	s := &Slurm{Runner: run}
	q, err := s.Queue(t.Context(), "7")
	if err != nil {
		t.Fatal(err)
	}
	want := []Queued{{0, "RUNNING", "None"}, {3, "PENDING", "Resources"}}
	if !slices.Equal(q, want) {
		t.Errorf("queue = %+v, want %+v", q, want)
	}
	if !slices.Contains(run.calls[0], "--jobs=7") || !slices.Contains(run.calls[0], "--array") {
		t.Errorf("squeue call %q does not list job 7's elements one by one", run.calls[0])
	}
	if q, err := s.Queue(t.Context(), "7"); err != nil || len(q) != 0 {
		t.Errorf("a job Slurm no longer knows: %+v, %v; want an empty queue", q, err)
	}
	if _, err := s.Queue(t.Context(), "7"); err == nil || !strings.Contains(err.Error(), "job 7") {
		t.Errorf("a controller that does not answer: %v, want an error naming the job", err)
	}
}

func TestExplainUsesSlurmThenTheElementsOutput(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, rundir.SlurmDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.SlurmOutput("9", 1)), []byte("writing to x\r\nprogress: old\rprogress: rows 0/1\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := &fakeRunner{replies: map[string][]reply{"scontrol": {
		{out: "JobId=10 ArrayJobId=9 ArrayTaskId=1 JobState=TIMEOUT Reason=TimeLimit Dependency=(null) ExitCode=0:15 RunTime=01:00:00\n"},
		{err: errors.New("slurm_load_jobs error: Invalid job id specified")},
		{err: errors.New("slurm_load_jobs error: Invalid job id specified")},
	}}}
	s := &Slurm{Runner: run}
	tests := []struct {
		index int
		want  string
	}{
		{1, "Slurm job 9_1: JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15"},
		{1, "the last line it wrote (" + filepath.Join(dir, rundir.SlurmOutput("9", 1)) + "): progress: rows 0/1"},
		{2, "wrote nothing"},
	}
	for _, tt := range tests {
		if got := s.Explain(t.Context(), dir, "9", tt.index); !strings.Contains(got, tt.want) {
			t.Errorf("explain 9_%d = %q, want it to contain %q", tt.index, got, tt.want)
		}
	}
	if !slices.Equal(run.calls[0], []string{"scontrol", "--oneliner", "show", "job", "9_1"}) {
		t.Errorf("scontrol call %q", run.calls[0])
	}
}

func TestWaitReportsUntilTheQueueIsEmpty(t *testing.T) {
	dir := t.TempDir()
	run := &fakeRunner{replies: map[string][]reply{"squeue": {
		{out: "0|RUNNING|None\n1|PENDING|Priority\n"},
		{err: errors.New("squeue: error: slurm_receive_msg: Socket timed out")},
		{out: "1|RUNNING|None\n"},
		{out: ""},
	}}}
	s := &Slurm{Runner: run}
	job := Job{ID: "5", Elements: []Element{{Index: 0, Row: "a"}, {Index: 1, Row: "b"}}}
	var seen []int
	err := s.Wait(t.Context(), WaitOptions{Dir: dir, Job: job, Poll: time.Millisecond, Report: func(p Progress) {
		seen = append(seen, len(p.Queue))
		if len(p.Rows) != 2 || p.Rows[0].Row != "a" || p.Rows[0].Status != "" {
			t.Errorf("rows = %+v, want a and b, not started", p.Rows)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 1, 0}; !slices.Equal(seen, want) {
		t.Errorf("queue lengths reported %v, want %v (a failed poll is borne, not reported)", seen, want)
	}
}

func TestWaitGivesUpAfterRepeatedFailuresAndStopsWithItsContext(t *testing.T) {
	fail := reply{err: errors.New("squeue: error: Unable to contact slurm controller")}
	s := &Slurm{Runner: &fakeRunner{replies: map[string][]reply{"squeue": {fail}}}}
	err := s.Wait(t.Context(), WaitOptions{Job: Job{ID: "5"}, Poll: time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "Unable to contact") {
		t.Errorf("err = %v, want the controller's error after repeated failures", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s = &Slurm{Runner: &fakeRunner{replies: map[string][]reply{"squeue": {{out: "0|RUNNING|None\n"}}}}}
	if err := s.Wait(ctx, WaitOptions{Job: Job{ID: "5"}, Poll: time.Hour}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// Cancel drops the pending elements and signals only the running ones'
// harness, leaving them time to save; Kill ends the rest outright.
func TestCancelSignalsTheRunningElementsAndKillEndsThem(t *testing.T) {
	denied := reply{err: errors.New("scancel: error: Kill job error on job id 5: Access/permission denied")}
	tests := []struct {
		name      string
		scancel   []reply
		squeue    []reply
		wantCalls [][]string
		wantErr   string
	}{
		{name: "pending cancelled, running signalled", scancel: []reply{{}, {}},
			wantCalls: [][]string{{"scancel", "--state=PENDING", "5"}, {"scancel", "--batch", "--signal=TERM", "5"}}},
		{name: "every element ended in between", scancel: []reply{{}, {err: errors.New("Invalid job id specified")}}, squeue: []reply{{out: ""}},
			wantCalls: [][]string{{"scancel", "--state=PENDING", "5"}, {"scancel", "--batch", "--signal=TERM", "5"},
				{"squeue", "--noheader", "--array", "--jobs=5", "--format=%K|%T|%r"}}},
		{name: "signal refused while running", scancel: []reply{{}, denied}, squeue: []reply{{out: "0|RUNNING|None\n"}}, wantErr: "signal the running elements of Slurm job 5 to stop"},
		{name: "pending refused", scancel: []reply{denied}, wantErr: "permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &fakeRunner{replies: map[string][]reply{"scancel": tt.scancel, "squeue": tt.squeue}}
			err := (&Slurm{Runner: run}).Cancel(t.Context(), "5")
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if tt.wantCalls != nil && !slices.EqualFunc(run.calls, tt.wantCalls, slices.Equal) {
				t.Errorf("calls %q, want %q", run.calls, tt.wantCalls)
			}
		})
	}
	run := &fakeRunner{replies: map[string][]reply{"scancel": {{}, denied}}}
	s := &Slurm{Runner: run}
	if err := s.Kill(t.Context(), "5"); err != nil || !slices.Equal(run.calls[0], []string{"scancel", "5"}) {
		t.Errorf("kill: %v, calls %q", err, run.calls)
	}
	if err := s.Kill(t.Context(), "5"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("err = %v, want scancel's own message", err)
	}
}

// The batch script asks Slurm for SIGTERM before the time limit: two
// minutes, or a quarter of a shorter limit.
func TestStopWarningBeforeTheTimeLimit(t *testing.T) {
	tests := []struct {
		limit string
		want  time.Duration
	}{
		{"", maxStopWarning},
		{"UNLIMITED", maxStopWarning},
		{"12:00:00", maxStopWarning},
		{"1-00", maxStopWarning},
		{"0-00:04", time.Minute},
		{"4", time.Minute},
		{"2:00", 30 * time.Second},
		{"0:00:02", time.Second},
		{"0", maxStopWarning},
	}
	for _, tt := range tests {
		if got := stopWarning(tt.limit); got != tt.want {
			t.Errorf("stopWarning(%q) = %v, want %v", tt.limit, got, tt.want)
		}
	}
}

func TestReadRowsAndFinished(t *testing.T) {
	tests := []struct {
		st   RowState
		want bool
	}{
		{RowState{}, false},
		{RowState{Status: rundir.StatusRunning}, false},
		{RowState{Status: rundir.StatusInterrupted}, true},
		{RowState{Status: rundir.StatusCompleted}, true},
	}
	for _, tt := range tests {
		if got := tt.st.Finished(); got != tt.want {
			t.Errorf("%+v finished = %v, want %v", tt.st, got, tt.want)
		}
	}
	rows := ReadRows(t.TempDir(), []string{"x"})
	if len(rows) != 1 || rows[0] != (RowState{Row: "x"}) {
		t.Errorf("a row without a directory reads %+v, want not started", rows)
	}
}
