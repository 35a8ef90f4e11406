package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// A run directory written before the packages were reshaped: an offline
// learned_mediator run with skill updates "all" over csv-parser and
// log-analysis, two iterations, seed 3, completed on the Docker backend.
// The names and values below are what that program wrote; the test reads
// and resumes a copy, so a reader that no longer understands the old format
// (a renamed file, a changed field) fails here.
const (
	v1Fixture     = "../../../harness/testdata/run-format-v1"
	v1ID          = "20261123T214145Z-3-learned_mediator"
	v1Fingerprint = "ad86ee502ce70c0ddbb563b1df86baaa0057a7bb06728c2112bbf06abef1a802"
	// v1HistoryLines is the line count of history/history.jsonl.
	v1HistoryLines = 13
)

// v1Run copies the fixture into a fresh temporary directory named as the
// program named it, and returns the copy's path.
func v1Run(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), v1ID)
	if err := os.CopyFS(dir, os.DirFS(v1Fixture)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// readV1Fixture returns a file of the committed fixture (never the copy).
func readV1Fixture(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(v1Fixture, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// inspectRun runs `inspect dir --json` and decodes the view.
func inspectRun(t *testing.T, dir string) inspect.RunView {
	t.Helper()
	r := runCLI(t, nil, "inspect", dir, "--json")
	if r.code != 0 {
		t.Fatalf("inspect --json: exit %d\nstderr: %s", r.code, r.errOut)
	}
	var v inspect.RunView
	if err := json.Unmarshal([]byte(r.out), &v); err != nil {
		t.Fatalf("inspect --json does not print a run view: %v\n%s", err, r.out)
	}
	return v
}

// meanOf formats an optional mean reward for comparison.
func meanOf(p *float64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%.4f", *p)
}

func TestRunFormatV1IsRead(t *testing.T) {
	tests := []struct {
		name  string
		args  func(dir, out string) []string
		check func(t *testing.T, dir, out string, r result)
	}{
		{"inspect", func(dir, _ string) []string { return []string{"inspect", dir} }, func(t *testing.T, _, _ string, r result) {
			for _, want := range []string{
				"Run " + v1ID + " (completed)",
				"condition learned_mediator, skill updates all, lab default, agent lab, seed 3",
				"iterations 2/2, tasks 2, trials 4 (4 scored, 0 env failures, 0 unscored), mean reward 0.069",
				"mediator/report 4, planner/plan 4, planner/proposal 3; 1 reports withheld, 6 entries rewarded, 0 dropped",
				"offline results",
			} {
				if !strings.Contains(r.out, want) {
					t.Errorf("inspect lacks %q:\n%s", want, r.out)
				}
			}
		}},
		{"inspect json", func(dir, _ string) []string { return []string{"inspect", dir, "--json"} }, func(t *testing.T, dir, _ string, r result) {
			var v inspect.RunView
			if err := json.Unmarshal([]byte(r.out), &v); err != nil {
				t.Fatalf("not a run view: %v\n%s", err, r.out)
			}
			if v.ID != v1ID || v.Path != dir || v.Status != rundir.StatusCompleted || v.Condition != "learned_mediator" ||
				v.Policy != "all" || v.Lab != "default" || v.Agent != "lab" || v.Seed != 3 || !v.Offline || v.FinishedAt == nil {
				t.Errorf("identity: %+v", v)
			}
			if !slices.Equal(v.Tasks, []string{"csv-parser", "log-analysis"}) || v.IterationsDone != 2 || v.IterationsPlanned != 2 {
				t.Errorf("tasks %v, iterations %d/%d; want both tasks, 2/2", v.Tasks, v.IterationsDone, v.IterationsPlanned)
			}
			if v.Trials != 4 || v.Scored != 4 || v.EnvFailures != 0 || v.Unscored != 0 || v.Statuses["scored"] != 4 || meanOf(v.MeanReward) != "0.0694" {
				t.Errorf("trials %d, scored %d, env %d, unscored %d, statuses %v, mean %s; want 4 scored, mean 0.0694",
					v.Trials, v.Scored, v.EnvFailures, v.Unscored, v.Statuses, meanOf(v.MeanReward))
			}
			want := []struct {
				mean   string
				tokens int64
			}{{"0.0000", 36512}, {"0.1389", 42137}}
			if len(v.Iterations) != len(want) {
				t.Fatalf("%d iterations, want %d: %+v", len(v.Iterations), len(want), v.Iterations)
			}
			for i, it := range v.Iterations {
				if it.Iteration != i+1 || it.Trials != 2 || it.Scored != 2 || meanOf(it.MeanReward) != want[i].mean || it.Tokens != want[i].tokens {
					t.Errorf("iteration %d: %+v (mean %s); want 2 scored, mean %s, %d tokens", i+1, it, meanOf(it.MeanReward), want[i].mean, want[i].tokens)
				}
			}
			h := v.History
			if h.Entries["mediator/report"] != 4 || h.Entries["planner/plan"] != 4 || h.Entries["planner/proposal"] != 3 ||
				h.Withheld != 1 || h.Rewarded != 6 || h.Dropped != 0 {
				t.Errorf("history: %+v", h)
			}
			if v.TotalTokens != 78649 {
				t.Errorf("total tokens %d, want 78649 (the ledger of state.json)", v.TotalTokens)
			}
			if len(v.SkillUpdates) != 0 || len(v.Rejected) != 0 {
				t.Errorf("skill updates %v, rejected %v; the run had none", v.SkillUpdates, v.Rejected)
			}
		}},
		{"report", func(dir, out string) []string { return []string{"report", dir, "--out", out} }, func(t *testing.T, _, out string, r result) {
			for _, name := range []string{"summary.md", "reward.png", "reward.svg"} {
				if _, err := os.Stat(filepath.Join(out, name)); err != nil {
					t.Errorf("report did not write %s", name)
				}
			}
			summary, err := os.ReadFile(filepath.Join(out, "summary.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"# Report: " + v1ID,
				"status **completed**, 1 rows",
				"| `learned_mediator` | 3 | 2 | 4 | 0 | 0 | 0.069 |",
				"| `learned_mediator` | planner | 25304 | 586 | 0.00 |",
				"| `learned_mediator` | executor | 44073 | 311 | 0.00 |",
				"| `learned_mediator` | mediator | 7852 | 523 | 0.00 |",
			} {
				if !bytes.Contains(summary, []byte(want)) {
					t.Errorf("summary.md lacks %q:\n%s", want, summary)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, out := v1Run(t), t.TempDir()
			before := listing(t, dir)
			r := runCLI(t, nil, tt.args(dir, out)...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.errOut)
			}
			tt.check(t, dir, out, r)
			if after := listing(t, dir); after != before {
				t.Errorf("reading the run changed it:\nbefore:\n%safter:\n%s", before, after)
			}
		})
	}
}

// Rewards the fake verifier gives in the resumed iteration.
var v1ResumeRewards = map[string]float64{"csv-parser": 1, "log-analysis": 0.5}

func TestRunFormatV1Resumes(t *testing.T) {
	dir := v1Run(t)
	// Git keeps no empty folder, so a clone of the fixture lacks the empty
	// notes/ and artifacts/validation/ a real run has: the resume must do
	// without them, whatever the checkout holds.
	for _, rel := range []string{"notes", "artifacts/validation"} {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("remove the empty %s from the fixture copy: %v", rel, err)
		}
	}
	backend := &scoringBackend{rewards: v1ResumeRewards}
	f := testFactory()
	f.Sandbox = func(context.Context, config.ExecutorRuntime) (SandboxBackend, error) { return backend, nil }
	f.Providers = providers.New
	r := runCLI(t, f, "run", "--resume", dir, "--iterations", "3")
	if r.code != ExitOK {
		t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.errOut)
	}
	if !strings.Contains(r.out, dir+": completed (2 trials in this session, 0 environment failures)") {
		t.Errorf("resume outcome:\n%s", r.out)
	}
	if !backend.closed || backend.trials("csv-parser") == 0 || backend.trials("log-analysis") == 0 {
		t.Errorf("backend closed %v, sandboxes %v; want both tasks run and the backend closed", backend.closed, backend.started)
	}
	for _, s := range backend.started {
		if s.RunID != v1ID || s.Row != "learned_mediator" || s.Iteration != 3 {
			t.Errorf("sandbox for %+v; want run %s, row learned_mediator, iteration 3", s, v1ID)
		}
	}

	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"run.json", func(t *testing.T) {
			var m struct {
				ID          string            `json:"id"`
				Status      string            `json:"status"`
				Iterations  int               `json:"iterations"`
				Completed   int               `json:"completed_iterations"`
				Condition   string            `json:"condition"`
				Policy      string            `json:"skill_update_policy"`
				Seed        int64             `json:"seed"`
				Offline     bool              `json:"offline"`
				Fingerprint string            `json:"config_fingerprint"`
				Counts      map[string]int    `json:"counts"`
				Forced      []json.RawMessage `json:"forced_resumes"`
			}
			readJSON(t, filepath.Join(dir, "run.json"), &m)
			if m.ID != v1ID || m.Status != "completed" || m.Iterations != 3 || m.Completed != 3 || m.Condition != "learned_mediator" ||
				m.Policy != "all" || m.Seed != 3 || !m.Offline {
				t.Errorf("run.json: %+v", m)
			}
			if m.Fingerprint != v1Fingerprint || len(m.Forced) != 0 {
				t.Errorf("fingerprint %s, forced resumes %d; want the run's own %s and none", m.Fingerprint, len(m.Forced), v1Fingerprint)
			}
			if m.Counts["scored"] != 6 {
				t.Errorf("counts %v, want 6 scored", m.Counts)
			}
		}},
		{"state.json", func(t *testing.T) {
			var st struct {
				Version     int    `json:"version"`
				RunID       string `json:"run_id"`
				Fingerprint string `json:"config_fingerprint"`
				Completed   int    `json:"completed_iteration"`
				History     int    `json:"history_lines"`
			}
			readJSON(t, filepath.Join(dir, "state.json"), &st)
			if st.Version != 1 || st.RunID != v1ID || st.Fingerprint != v1Fingerprint || st.Completed != 3 || st.History <= v1HistoryLines {
				t.Errorf("state.json: %+v; want iteration 3 and more than %d history lines", st, v1HistoryLines)
			}
			if n := lineCount(t, filepath.Join(dir, "history", "history.jsonl")); st.History != n {
				t.Errorf("state.json counts %d history lines, the file has %d", st.History, n)
			}
		}},
		{"config.toml", func(t *testing.T) {
			got, err := os.ReadFile(filepath.Join(dir, "config.toml"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, readV1Fixture(t, "config.toml")) {
				t.Errorf("the resume rewrote config.toml:\n%s", got)
			}
		}},
		{"metrics parts", func(t *testing.T) {
			for it, name := range []string{"part-00001.parquet", "part-00002.parquet"} {
				got, err := os.ReadFile(filepath.Join(dir, "metrics", name))
				if err != nil {
					t.Fatalf("iteration %d: %v", it+1, err)
				}
				if !bytes.Equal(got, readV1Fixture(t, "metrics/"+name)) {
					t.Errorf("the resume rewrote %s", name)
				}
			}
			rows, err := rundir.ReadMetricsFile(filepath.Join(dir, "metrics", "part-00003.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 {
				t.Fatalf("iteration 3 has %d metric rows, want 2", len(rows))
			}
			for _, row := range rows {
				want, ok := v1ResumeRewards[row.TaskID]
				if !ok || row.Iteration != 3 || row.RunID != v1ID || row.Row != "learned_mediator" || row.Condition != "learned_mediator" ||
					row.SkillUpdatePolicy != "all" || row.Seed != 3 || !row.Offline || row.Status != "scored" || row.Reward == nil || *row.Reward != want {
					t.Errorf("iteration 3 row: task %s, iteration %d, run %s, status %s, reward %s; want reward %v",
						row.TaskID, row.Iteration, row.RunID, row.Status, meanOf(row.Reward), want)
				}
			}
			all, err := rundir.ReadMetrics(filepath.Join(dir, "metrics"))
			if err != nil || len(all) != 6 {
				t.Errorf("all metrics: %d rows, %v; want 6", len(all), err)
			}
		}},
		{"history", func(t *testing.T) {
			got, err := os.ReadFile(filepath.Join(dir, "history", "history.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			old := readV1Fixture(t, "history/history.jsonl")
			if !bytes.HasPrefix(got, old) || len(got) == len(old) {
				t.Errorf("history.jsonl: %d bytes, old %d; want the old lines kept and new ones after them", len(got), len(old))
			}
			if !bytes.Contains(got[len(old):], []byte(`"id":"learned_mediator/i0003/csv-parser/plan"`)) {
				t.Errorf("no plan of iteration 3 in the new history lines:\n%s", got[len(old):])
			}
		}},
		{"trial files", func(t *testing.T) {
			for _, task := range []string{"csv-parser", "log-analysis"} {
				for _, rel := range []string{
					"jobs/" + task + "/0003/trace.json",
					"jobs/" + task + "/0003/verifier/reward.txt",
					"artifacts/traces/" + task + "/0003.json",
					"jobs/" + task + "/0001/trace.json",
					"artifacts/traces/" + task + "/0002.json",
				} {
					if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
						t.Errorf("%s: %v", rel, err)
					}
				}
			}
		}},
		{"inspect", func(t *testing.T) {
			v := inspectRun(t, dir)
			if v.Status != rundir.StatusCompleted || v.IterationsDone != 3 || v.IterationsPlanned != 3 || v.Trials != 6 || v.Scored != 6 {
				t.Errorf("after the resume: status %s, iterations %d/%d, trials %d, scored %d; want completed, 3/3, 6 scored",
					v.Status, v.IterationsDone, v.IterationsPlanned, v.Trials, v.Scored)
			}
			want := []string{"0.0000", "0.1389", "0.7500"}
			var got []string
			for _, it := range v.Iterations {
				got = append(got, meanOf(it.MeanReward))
			}
			if !slices.Equal(got, want) {
				t.Errorf("mean reward by iteration %v, want %v", got, want)
			}
			if v.History.Entries["planner/plan"] != 6 || v.TotalTokens <= 78649 {
				t.Errorf("history %+v, total tokens %d; want 6 plans and more than the 78649 tokens spent before", v.History, v.TotalTokens)
			}
			if r := runCLI(t, nil, "inspect", dir); r.code != 0 || !strings.Contains(r.out, "Run "+v1ID+" (completed)") ||
				!strings.Contains(r.out, "iterations 3/3, tasks 2, trials 6 (6 scored") {
				t.Errorf("inspect text: exit %d\n%s%s", r.code, r.out, r.errOut)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func lineCount(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

// scoringBackend starts in-memory sandboxes whose verifier gives each task
// a fixed reward; the agent's commands all succeed and change nothing. No
// engine is needed.
type scoringBackend struct {
	rewards map[string]float64

	mu      sync.Mutex
	started []executor.ContainerSpec
	closed  bool
}

func (b *scoringBackend) EnsureImage(_ context.Context, task *benchmarks.Task) (string, bool, error) {
	return "harness-task-" + task.ID + ":1", false, nil
}

func (b *scoringBackend) StartSandbox(_ context.Context, spec executor.ContainerSpec) (executor.ClosableSandbox, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.started = append(b.started, spec)
	reward, ok := b.rewards[spec.Task.ID]
	if !ok {
		return nil, &executor.EnvError{Op: "start", Err: fmt.Errorf("no reward for task %s", spec.Task.ID)}
	}
	return &scoringSandbox{reward: reward}, nil
}

func (b *scoringBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

// trials counts the sandboxes started for task.
func (b *scoringBackend) trials(task string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.started {
		if s.Task.ID == task {
			n++
		}
	}
	return n
}

type scoringSandbox struct{ reward float64 }

func (s *scoringSandbox) ID() string { return "scoring-fake" }

// Exec succeeds with no output. A command that streams its standard output
// (the verifier's one-exec path) gets test.sh's exit line and the logs.
func (s *scoringSandbox) Exec(_ context.Context, req executor.ExecRequest) (executor.ExecResult, error) {
	if req.Stdin != nil {
		_, _ = io.Copy(io.Discard, req.Stdin)
	}
	if req.Stdout != nil {
		if _, err := io.WriteString(req.Stdout, "harness: test.sh exit 0\n"); err != nil {
			return executor.ExecResult{}, err
		}
		if err := s.CopyOut(context.Background(), executor.VerifierLogDir, req.Stdout); err != nil {
			return executor.ExecResult{}, err
		}
	}
	return executor.ExecResult{}, nil
}

func (s *scoringSandbox) ReadFile(context.Context, string, string, int) ([]byte, error) {
	return nil, fs.ErrNotExist
}

func (s *scoringSandbox) WriteFile(context.Context, string, string, []byte, int64) error { return nil }

func (s *scoringSandbox) CopyDirIn(context.Context, string, string) error { return nil }

// CopyOut sends /logs/verifier with the reward and a one-test report.
func (s *scoringSandbox) CopyOut(_ context.Context, p string, w io.Writer) error {
	if p != executor.VerifierLogDir {
		return errors.New("the fake sandbox only has " + executor.VerifierLogDir)
	}
	files := []struct{ name, body string }{
		{"reward.txt", fmt.Sprintf("%g\n", s.reward)},
		{"ctrf.json", `{"results":{"tests":[{"name":"outputs","status":"passed"}]}}`},
		{"test-stdout.txt", "ok\n"},
	}
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "verifier/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		return err
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: "verifier/" + f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.body))}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, f.body); err != nil {
			return err
		}
	}
	return tw.Close()
}

func (s *scoringSandbox) Close(context.Context) error { return nil }
