package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// fixtureMatrix writes a small finished matrix: two rows, two tasks, two
// iterations, with known rewards.
func fixtureMatrix(t *testing.T) string {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	md, err := rundir.Create(t.TempDir(), rundir.Spec{Manifest: rundir.Manifest{Kind: rundir.KindMatrix,
		Name: "fixture", Tasks: []string{"a", "b"}, Iterations: 2, Seed: 1, Rows: []string{"no_feedback", "full_coevolution"}}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	rewards := map[string]float64{"no_feedback": 0.25, "full_coevolution": 0.75}
	for _, row := range []string{"no_feedback", "full_coevolution"} {
		d, err := rundir.Create(md.Path, rundir.Spec{DirName: row, Manifest: rundir.Manifest{Kind: rundir.KindRun,
			Preset: row, Condition: "no_feedback", Policy: "none", Tasks: []string{"a", "b"}, Iterations: 2, Seed: 1}, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		for it := 1; it <= 2; it++ {
			var rows []rundir.MetricRow
			for _, task := range []string{"a", "b"} {
				r := rewards[row]
				rows = append(rows, rundir.MetricRow{RunID: d.ID, Row: row, Condition: "no_feedback", Iteration: int32(it),
					TaskID: task, Status: "scored", Reward: &r})
			}
			if err := rundir.WriteMetricsPart(d.MetricsDir(), it, rows); err != nil {
				t.Fatal(err)
			}
		}
		d.UpdateManifest(func(m *rundir.Manifest) { m.Status = rundir.StatusCompleted; m.CompletedIterations = 2 })
	}
	md.UpdateManifest(func(m *rundir.Manifest) { m.Status = rundir.StatusCompleted })
	return md.Path
}

func TestInspectCommand(t *testing.T) {
	matrix := fixtureMatrix(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		check    func(t *testing.T, r result)
	}{
		{"list under root", []string{"inspect", "--root", filepath.Dir(matrix)}, 0, func(t *testing.T, r result) {
			if !strings.Contains(r.out, filepath.Base(matrix)) {
				t.Errorf("listing lacks the matrix:\n%s", r.out)
			}
		}},
		{"matrix json", []string{"inspect", matrix, "--json"}, 0, func(t *testing.T, r result) {
			var v MatrixView
			if err := json.Unmarshal([]byte(r.out), &v); err != nil {
				t.Fatal(err)
			}
			if len(v.Rows) != 2 || v.Matrix.Trials != 8 {
				t.Errorf("matrix view: %d rows, %d trials; want 2 and 8", len(v.Rows), v.Matrix.Trials)
			}
		}},
		{"compare json", []string{"inspect", matrix, "--compare", "--json"}, 0, func(t *testing.T, r result) {
			var v struct {
				Rows []struct {
					Name string   `json:"row"`
					Mean *float64 `json:"mean_reward"`
				} `json:"rows"`
			}
			if err := json.Unmarshal([]byte(r.out), &v); err != nil {
				t.Fatal(err)
			}
			if len(v.Rows) != 2 {
				t.Fatalf("compare lists %d rows", len(v.Rows))
			}
			for _, row := range v.Rows {
				want := map[string]float64{"no_feedback": 0.25, "full_coevolution": 0.75}[row.Name]
				if row.Mean == nil || *row.Mean != want {
					t.Errorf("row %s mean %v, want %v", row.Name, row.Mean, want)
				}
			}
		}},
		{"run view", []string{"inspect", filepath.Join(matrix, "no_feedback")}, 0, nil},
		{"compare on a run", []string{"inspect", filepath.Join(matrix, "no_feedback"), "--compare"}, 2, nil},
		{"compare without dir", []string{"inspect", "--compare"}, 2, nil},
		{"baseline without compare", []string{"inspect", matrix, "--baseline", "x"}, 2, nil},
		{"unknown baseline", []string{"inspect", matrix, "--compare", "--baseline", "nope"}, 2, nil},
		{"k without compare", []string{"inspect", matrix, "--k", "2"}, 2, nil},
		{"k below 1", []string{"inspect", matrix, "--compare", "--k", "0"}, 2, nil},
		{"k fixed", []string{"inspect", matrix, "--compare", "--json", "--k", "1"}, 0, func(t *testing.T, r result) {
			if !strings.Contains(r.out, `"k": 1`) {
				t.Errorf("compare JSON does not carry k 1:\n%s", r.out)
			}
		}},
		{"last without compare", []string{"inspect", matrix, "--last", "3"}, 2, nil},
		{"last below 1", []string{"inspect", matrix, "--compare", "--last", "0"}, 2, nil},
		{"effect out of range", []string{"inspect", matrix, "--compare", "--effect", "1.5"}, 2, nil},
		{"last and effect", []string{"inspect", matrix, "--compare", "--json", "--last", "3", "--effect", "0.2"}, 0, func(t *testing.T, r result) {
			if !strings.Contains(r.out, `"last_n": 3`) || !strings.Contains(r.out, `"effect_of_interest": 0.2`) {
				t.Errorf("compare JSON does not carry last_n 3 and effect 0.2:\n%s", r.out)
			}
		}},
		{"tournament json of a run without one", []string{"inspect", filepath.Join(matrix, "no_feedback"), "--tournament", "--json"}, 0, func(t *testing.T, r result) {
			var v struct {
				Candidates []map[string]any `json:"candidates"`
				Note       string           `json:"note"`
			}
			if err := json.Unmarshal([]byte(r.out), &v); err != nil || v.Candidates == nil || !strings.Contains(v.Note, "no tournament ran") {
				t.Errorf("tournament JSON %s (%v): want an empty candidates list and a note", r.out, err)
			}
		}},
		{"tournament of a matrix", []string{"inspect", matrix, "--tournament"}, 1, nil},
		{"tournament without dir", []string{"inspect", "--tournament"}, 2, nil},
		{"tournament with compare", []string{"inspect", matrix, "--tournament", "--compare"}, 2, nil},
		{"two dirs", []string{"inspect", matrix, matrix}, 2, nil},
		{"missing dir", []string{"inspect", filepath.Join(matrix, "nope")}, 2, func(t *testing.T, r result) {
			if !strings.Contains(r.errOut, "does not exist") {
				t.Errorf("stderr %q does not say the directory is missing", r.errOut)
			}
		}},
		{"a file, not a dir", []string{"inspect", filepath.Join(matrix, "run.json")}, 2, func(t *testing.T, r result) {
			if !strings.Contains(r.errOut, "is not a run or matrix directory") {
				t.Errorf("stderr %q", r.errOut)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, tt.args...)
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.wantCode, r.out, r.errOut)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func TestReportCommand(t *testing.T) {
	matrix := fixtureMatrix(t)
	out := t.TempDir()
	r := runCLI(t, nil, "report", matrix, "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	for _, name := range []string{"summary.md", "reward.png", "reward.svg", "skill_updates.png", "tokens.svg"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("report did not write %s", name)
		}
	}
	if r := runCLI(t, nil, "report"); r.code != 2 {
		t.Errorf("report without a directory exits %d, want 2", r.code)
	}
	if r := runCLI(t, nil, "report", t.TempDir()); r.code != 2 {
		t.Errorf("report on a non-run directory exits %d, want 2", r.code)
	}
}

func TestInspectTasks(t *testing.T) {
	matrix := fixtureMatrix(t)
	// One unscored trial, so the failures column has something to count.
	d, err := rundir.Open(filepath.Join(matrix, "no_feedback"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteMetricsPart(d.MetricsDir(), 3, []rundir.MetricRow{{RunID: d.ID, Row: "no_feedback",
		Condition: "no_feedback", Iteration: 3, TaskID: "b", Status: "agent_error"}}); err != nil {
		t.Fatal(err)
	}

	r := runCLI(t, nil, "inspect", matrix, "--tasks")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	want := []string{
		"task\trow\tmean reward\ttrials\tscored\tfailures",
		"a\tno_feedback\t0.250\t2\t2\t-",
		"a\tfull_coevolution\t0.750\t2\t2\t-",
		"b\tno_feedback\t0.250\t3\t2\tagent_error 1",
		"b\tfull_coevolution\t0.750\t2\t2\t-",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("--tasks printed\n%s\nwant\n%s", r.out, strings.Join(want, "\n"))
	}

	r = runCLI(t, nil, "inspect", matrix, "--tasks", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var g inspect.TaskGrid
	if err := json.Unmarshal([]byte(r.out), &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Rows) != 2 || len(g.Tasks) != 2 || g.Tasks[1].Task != "b" {
		t.Fatalf("JSON grid = %+v, want 2 rows and tasks a, b", g)
	}
	b := g.Tasks[1].Cells[0]
	if g.Rows[0] != "no_feedback" || b.Trials != 3 || b.Statuses["agent_error"] != 1 || b.MeanReward == nil || *b.MeanReward != 0.25 {
		t.Errorf("no_feedback b = %+v, want 3 trials, 1 agent_error, mean 0.25", b)
	}

	for _, args := range [][]string{{"inspect", "--tasks"}, {"inspect", matrix, "--tasks", "--compare"}, {"inspect", matrix, "--tasks", "--follow"}} {
		if r := runCLI(t, nil, args...); r.code != ExitUsage {
			t.Errorf("%v exits %d, want %d", args, r.code, ExitUsage)
		}
	}
}
