package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
)

const lockResumeEnv = "HARNESS_TEST_LOCK_RESUME"

// slowBackend is a scoringBackend whose sandboxes take a while to start,
// so that two processes on one directory overlap.
type slowBackend struct {
	*scoringBackend
	delay time.Duration
}

func (b slowBackend) StartSandbox(ctx context.Context, spec executor.ContainerSpec) (executor.ClosableSandbox, error) {
	time.Sleep(b.delay)
	return b.scoringBackend.StartSandbox(ctx, spec)
}

// resumeFactory resumes on a fake engine whose trials take delay to start.
func resumeFactory(delay time.Duration) *Factory {
	f := testFactory()
	backend := slowBackend{&scoringBackend{rewards: v1ResumeRewards}, delay}
	f.Sandbox = func(context.Context, config.ExecutorRuntime) (SandboxBackend, error) { return backend, nil }
	f.Providers = providers.New
	return f
}

// TestLockResumeHelperProcess is the child of
// TestTwoResumesOfOneDirectory: it resumes the directory it is given to
// four iterations and exits with the command's code.
func TestLockResumeHelperProcess(t *testing.T) {
	dir := os.Getenv(lockResumeEnv)
	if dir == "" {
		t.Skip("helper process for TestTwoResumesOfOneDirectory")
	}
	var out, errOut bytes.Buffer
	f := resumeFactory(150 * time.Millisecond)
	f.IO = IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := Run(context.Background(), f, []string{"run", "--resume", dir, "--iterations", "4"})
	os.Stdout.Write(out.Bytes())
	os.Stderr.Write(errOut.Bytes())
	os.Exit(code)
}

// Two resumes of one directory started together: exactly one proceeds, the
// other is refused at once, names the holder and exits 1, and the finished
// run equals one resumed alone.
func TestTwoResumesOfOneDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := v1Run(t)
	type child struct {
		cmd    *exec.Cmd
		stderr bytes.Buffer
		code   int
	}
	children := make([]*child, 2)
	for i := range children {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestLockResumeHelperProcess$", "-test.count=1")}
		c.cmd.Env = append(os.Environ(), lockResumeEnv+"="+dir)
		c.cmd.Stderr = &c.stderr
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children[i] = c
	}
	for _, c := range children {
		err := c.cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		c.code = c.cmd.ProcessState.ExitCode()
	}
	codes := []int{children[0].code, children[1].code}
	slices.Sort(codes)
	if !slices.Equal(codes, []int{ExitOK, ExitFailed}) {
		t.Fatalf("exit codes %v, want one 0 and one 1\nstderr 0: %s\nstderr 1: %s", codes, &children[0].stderr, &children[1].stderr)
	}
	winner, loser := children[0], children[1]
	if loser.code == ExitOK {
		winner, loser = loser, winner
	}
	msg := loser.stderr.String()
	for _, want := range []string{"pid " + strconv.Itoa(winner.cmd.Process.Pid), "in use", "--resume again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refused resume does not say %q:\n%s", want, msg)
		}
	}

	alone := v1Run(t)
	if r := runCLI(t, resumeFactory(0), "run", "--resume", alone, "--iterations", "4"); r.code != ExitOK {
		t.Fatalf("resume alone: exit %d\n%s", r.code, r.errOut)
	}
	if got, want := datasetOf(t, dir), datasetOf(t, alone); got != want {
		t.Errorf("the contested run's dataset differs from one resumed alone:\n%s\nwant:\n%s", got, want)
	}
	if got, want := historyIDs(t, dir), historyIDs(t, alone); got != want {
		t.Errorf("history ids differ from a run resumed alone:\n%s\nwant:\n%s", got, want)
	}
}

// datasetOf lists a run's metric rows by what a trial measured, in order.
func datasetOf(t *testing.T, dir string) string {
	t.Helper()
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%d %s %s %s %s/%s", r.Iteration, r.TaskID, r.Status, meanOf(r.Reward), countOf(r.TestsPassed), countOf(r.TestsTotal)))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// countOf shows a count column, NULL as "-".
func countOf(p *int32) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(int(*p))
}

// historyIDs lists what each history line is about (entry id, or the
// trial and entries of a reward), sorted.
func historyIDs(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var e struct {
			Type  string `json:"type"`
			Entry struct {
				ID string `json:"id"`
			} `json:"entry"`
			IDs     []string `json:"ids"`
			TrialID string   `json:"trial_id"`
		}
		readJSONBytes(t, line, &e)
		ids = append(ids, fmt.Sprint(e.Type, " ", e.Entry.ID, e.TrialID, e.IDs))
	}
	// Tasks run concurrently, so only the set (duplicates kept) is stable.
	slices.Sort(ids)
	return strings.Join(ids, "\n")
}

func readJSONBytes(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
}
