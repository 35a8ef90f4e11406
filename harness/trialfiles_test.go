package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// markingTrials writes each trial's id into its job directory before the
// fake trial runs, so a test can tell whose files a directory holds.
type markingTrials struct{ *fakeTrials }

func (m markingTrials) Run(ctx context.Context, spec executor.TrialSpec) *executor.Trace {
	if err := os.MkdirAll(filepath.Join(spec.JobDir, rundir.AgentDir), 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(spec.JobDir, rundir.AgentOutputFile), []byte(spec.TrialID), 0o644)
	}
	return m.fakeTrials.Run(ctx, spec)
}

func TestEachStudentsTrialKeepsItsOwnFiles(t *testing.T) {
	tests := []struct {
		name  string
		tweak func(*config.Config)
		// key is the task segment the trial's files are expected under.
		key func(row rundir.MetricRow) string
	}{
		{"two students attempt every task", heteroLab(config.AssignAll),
			func(r rundir.MetricRow) string { return rundir.StudentTrialKey(r.TaskID, r.Student) }},
		{"one student keeps the task's paths", nil,
			func(r rundir.MetricRow) string { return r.TaskID }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyNone, []string{"a", "b"}, 2, tc.tweak)
			tr.run.Trials = markingTrials{tr.trials}
			tr.execute(t)
			dir := tr.run.Dir.Path
			rows, err := rundir.ReadMetrics(dir)
			if err != nil {
				t.Fatal(err)
			}
			traces, _ := filepath.Glob(filepath.Join(dir, rundir.TracesDir, "*", "*.json"))
			if len(rows) == 0 || len(traces) != len(rows) {
				t.Errorf("%d trace files for %d trials, want one each: %v", len(traces), len(rows), traces)
			}
			for _, r := range rows {
				key, it := tc.key(r), int(r.Iteration)
				var trace rundir.Trace
				if ok, err := readTestJSON(filepath.Join(dir, rundir.TracePath(key, it)), &trace); !ok || trace.TrialID != r.TrialID {
					t.Errorf("trace %s holds trial %q, want %s (%v)", rundir.TracePath(key, it), trace.TrialID, r.TrialID, err)
				}
				var rep struct {
					TrialID string `json:"trial_id"`
				}
				if ok, err := readTestJSON(filepath.Join(dir, rundir.ReportPath(key, it)), &rep); !ok || rep.TrialID != r.TrialID {
					t.Errorf("report %s is of trial %q, want %s (%v)", rundir.ReportPath(key, it), rep.TrialID, r.TrialID, err)
				}
				out, err := os.ReadFile(filepath.Join(dir, rundir.JobDir(key, it), rundir.AgentOutputFile))
				if err != nil || string(out) != r.TrialID {
					t.Errorf("job directory %s holds trial %q, want %s (%v)", rundir.JobDir(key, it), out, r.TrialID, err)
				}
			}
		})
	}
}

// readTestJSON decodes the file at path into v; ok is false when it cannot.
func readTestJSON(path string, v any) (ok bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, err
	}
	return true, nil
}
