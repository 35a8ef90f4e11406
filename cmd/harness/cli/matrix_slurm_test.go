package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/launch"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// scheduler is a fake Slurm: sbatch accepts job 77, squeue says the array
// has ended, scontrol says why each element ended.
type scheduler struct {
	ended string
	// queued, when set, is squeue's answer: elements still in the queue.
	queued string
	calls  [][]string
}

func (s *scheduler) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	s.calls = append(s.calls, append([]string{name}, args...))
	switch name {
	case "sbatch":
		return []byte("77\n"), nil
	case "squeue":
		return []byte(s.queued), nil
	case "scontrol":
		return []byte("JobId=78 ArrayJobId=77 " + s.ended + "\n"), nil
	}
	return nil, errors.New(name + ": not faked")
}

func fakeSlurmFactory(s *scheduler) *Factory {
	f := testFactory()
	f.Scheduler = s
	f.Executable = func() (string, error) { return "/opt/harness", nil }
	return f
}

// --detach submits one element per row and seed, prints the job id,
// records the job and waits for nothing.
func TestMatrixOnSlurmDetachSubmitsEveryRow(t *testing.T) {
	out := t.TempDir()
	s := &scheduler{}
	r := runCLI(t, fakeSlurmFactory(s), "matrix", "--task-set", "smoke", "--preset", "no_feedback,full_coevolution", "--seeds", "1,2",
		"--offline", "--iterations", "2", "--out", out, "--launcher", "slurm", "--detach", "-j", "3")
	if r.code != ExitOK || strings.TrimSpace(r.out) != "77" {
		t.Fatalf("exit %d, stdout %q, want 0 and the job id\n%s", r.code, r.out, r.errOut)
	}
	dir := onlyMatrix(t, out)
	jobs, err := launch.ReadJobs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || !slices.Equal(jobs[0].Rows(), slurmRows) {
		t.Fatalf("recorded jobs %+v, want one array of %v", jobs, slurmRows)
	}
	for _, c := range s.calls {
		if c[0] != "sbatch" {
			t.Errorf("a detached matrix ran %q", c)
		}
	}
	script, err := os.ReadFile(filepath.Join(dir, jobs[0].Script))
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	want := fmt.Sprintf("exec '/opt/harness' 'matrix' '--resume' '%s' '--iterations' '2' '--jobs' '3' --row", abs)
	if !strings.Contains(string(script), want) {
		t.Errorf("script lacks %q:\n%s", want, script)
	}
	if !strings.Contains(r.errOut, "squeue --jobs 77") {
		t.Errorf("stderr does not say how to follow the job:\n%s", r.errOut)
	}
}

// An array that ended with its rows unfinished is reported row by row
// with the scheduler's reason, and the matrix is left resumable (exit 130).
func TestMatrixOnSlurmReportsWhyRowsAreUnfinished(t *testing.T) {
	out := t.TempDir()
	s := &scheduler{ended: "JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15"}
	r := runCLI(t, fakeSlurmFactory(s), "matrix", "--task-set", "smoke", "--preset", "no_feedback", "--seeds", "1,2",
		"--offline", "--iterations", "1", "--out", out, "--launcher", "slurm")
	if r.code != ExitInterrupted {
		t.Fatalf("exit %d, want %d\n%s\n%s", r.code, ExitInterrupted, r.out, r.errOut)
	}
	for i, row := range []string{"no_feedback-seed1", "no_feedback-seed2"} {
		want := fmt.Sprintf("Slurm job 77_%d: JobState=TIMEOUT Reason=TimeLimit", i)
		if !strings.Contains(r.out, row) || !strings.Contains(r.out, want) {
			t.Errorf("the summary does not report row %s with %q:\n%s", row, want, r.out)
		}
	}
	if !strings.Contains(r.errOut, "--launcher slurm") {
		t.Errorf("the error does not say how to resume on Slurm: %s", r.errOut)
	}
	d, err := rundir.Open(onlyMatrix(t, out))
	if err != nil {
		t.Fatal(err)
	}
	if st := d.Manifest().Status; st != rundir.StatusInterrupted {
		t.Errorf("matrix status %s, want interrupted", st)
	}
}

// A resume while an earlier array of the matrix is still queued submits
// nothing: its rows would run twice.
func TestMatrixOnSlurmResumeRefusesWhileAnArrayIsQueued(t *testing.T) {
	out := t.TempDir()
	s := &scheduler{}
	r := runCLI(t, fakeSlurmFactory(s), "matrix", "--task-set", "smoke", "--preset", "no_feedback", "--offline", "--iterations", "1",
		"--out", out, "--launcher", "slurm", "--detach")
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s", r.code, r.errOut)
	}
	dir := onlyMatrix(t, out)
	s.queued = "0|RUNNING|None\n"
	r = runCLI(t, fakeSlurmFactory(s), "matrix", "--resume", dir, "--launcher", "slurm")
	if r.code != ExitFailed || !strings.Contains(r.errOut, "Slurm job 77 of "+dir+" still has 1 element(s) in the queue") {
		t.Errorf("exit %d, stderr %q; want 1 and the job still queued", r.code, r.errOut)
	}
	if jobs, _ := launch.ReadJobs(dir); len(jobs) != 1 {
		t.Errorf("the refused resume submitted again: %+v", jobs)
	}
}

// A network on Slurm is one element per seed, each running every lab and
// treatment of its seed (they meet at the diffusion barrier, so they must
// share a process), resumed with `harness network --group seed<S>`.
func TestNetworkOnSlurmSubmitsOneElementPerSeed(t *testing.T) {
	out := t.TempDir()
	s := &scheduler{}
	r := runCLI(t, fakeSlurmFactory(s), "network", "--labs", "a,b", "--diffusion", "none,mediated", "--seeds", "1,2", "--tasks", "csv-parser",
		"--offline", "--iterations", "2", "--skip-stability-check", "--config-dir", networkConfigDir(t), "--out", out, "--launcher", "slurm", "--detach")
	if r.code != ExitOK || strings.TrimSpace(r.out) != "77" {
		t.Fatalf("exit %d, stdout %q, want 0 and the job id\n%s", r.code, r.out, r.errOut)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(dirs) != 1 {
		t.Fatalf("directories in %s: %v", out, dirs)
	}
	jobs, err := launch.ReadJobs(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := []launch.Element{
		{Index: 0, Row: "seed1", Rows: []string{"none-a-seed1", "none-b-seed1", "mediated-a-seed1", "mediated-b-seed1"}},
		{Index: 1, Row: "seed2", Rows: []string{"none-a-seed2", "none-b-seed2", "mediated-a-seed2", "mediated-b-seed2"}},
	}
	if len(jobs) != 1 || !slices.EqualFunc(jobs[0].Elements, want, func(a, b launch.Element) bool {
		return a.Index == b.Index && a.Row == b.Row && slices.Equal(a.Rows, b.Rows)
	}) {
		t.Fatalf("recorded jobs %+v, want one array of %+v", jobs, want)
	}
	script, err := os.ReadFile(filepath.Join(dirs[0], jobs[0].Script))
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dirs[0])
	if w := fmt.Sprintf("exec '/opt/harness' 'network' '--resume' '%s' '--iterations' '2'", abs); !strings.Contains(string(script), w) ||
		!strings.Contains(string(script), `--group "${rows[$SLURM_ARRAY_TASK_ID]}"`) || !strings.Contains(string(script), "rows=('seed1' 'seed2')") {
		t.Errorf("script does not resume the network one seed per element:\n%s", script)
	}
	if !strings.Contains(r.errOut, "harness network --resume") {
		t.Errorf("stderr does not say how to settle the network:\n%s", r.errOut)
	}
}

// The launch flags of a network are checked before anything is created.
func TestNetworkLaunchFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a group without resume", []string{"--group", "seed1"}, "--resume DIR"},
		{"a group on slurm", []string{"--resume", "x", "--group", "seed1", "--launcher", "slurm"}, "cannot be combined with --launcher slurm"},
		{"a group that is not a seed", []string{"--resume", "x", "--group", "one"}, "seed<S>, such as seed1"},
		{"an unknown launcher", []string{"--launcher", "pbs"}, "--launcher must be local or slurm"},
		{"detach locally", []string{"--launcher", "local", "--detach"}, "--detach needs --launcher slurm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"network", "--labs", "a,b", "--tasks", "csv-parser", "--offline", "--skip-stability-check",
				"--config-dir", networkConfigDir(t), "--out", out}, tt.args...)
			if slices.Contains(tt.args, "--resume") {
				args = append([]string{"network", "--offline", "--config-dir", networkConfigDir(t), "--out", out}, tt.args...)
			}
			r := runCLI(t, fakeSlurmFactory(&scheduler{}), args...)
			if r.code != ExitUsage || !strings.Contains(r.errOut, tt.want) {
				t.Errorf("exit %d, stderr %q, want %d saying %q", r.code, r.errOut, ExitUsage, tt.want)
			}
			if ents, _ := os.ReadDir(out); len(ents) != 0 {
				t.Errorf("a refused network created %d entries", len(ents))
			}
		})
	}
}
