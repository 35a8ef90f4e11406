package harness

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
)

// retryingProvider reports that every call took two attempts.
type retryingProvider struct{ llm.Provider }

func (p retryingProvider) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := p.Provider.Complete(ctx, req)
	resp.Attempts = 2
	return resp, err
}

// timedTrials stamps each trial's start and end, as the executor does, and
// gives task "a" a per-test report.
type timedTrials struct{ inner TrialRunner }

func (tt timedTrials) Run(ctx context.Context, spec executor.TrialSpec) *executor.Trace {
	start := time.Now().UTC()
	tr := tt.inner.Run(ctx, spec)
	tr.StartedAt, tr.FinishedAt = start, time.Now().UTC()
	if spec.Task.ID == "a" {
		tr.Tests = executor.Tests{Passed: 1, Failed: 1, Total: 2, Reported: true}
	}
	return tr
}

// readTable reads a metrics part with Apache Arrow's Parquet reader, so a
// NULL is seen as stored, not as a Go reader maps it.
func readTable(t *testing.T, path string) arrow.Table {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdr.Close() })
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tbl.Release)
	return tbl
}

// nulls counts the NULLs of a column, failing when it is missing.
func nulls(t *testing.T, tbl arrow.Table, name string) int {
	t.Helper()
	idx := tbl.Schema().FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("column %s missing", name)
	}
	n := 0
	for _, c := range tbl.Column(idx[0]).Data().Chunks() {
		n += c.NullN()
	}
	return n
}

func TestMetricColumnsAreNullWhereTheyDoNotApply(t *testing.T) {
	always := []string{"matrix_id", "baseline_preset", "checkpoint_iteration", "cause"}
	trial := []string{"planner_model", "executor_model", "planner_context_chars", "trial_started_at", "trial_finished_at",
		"build_ms", "agent_ms", "verifier_ms", "trial_ms"}
	tests := []struct {
		name      string
		cond      conditions.Condition
		pol       conditions.Policy
		null, set []string
	}{
		{"learned mediator, all updates", conditions.LearnedMediator, conditions.PolicyAll,
			append(always, "compactor_model"),
			append(trial, "mediator_model", "advisor_model", "reflector_model", "report_withheld")},
		{"full traces, executor updates", conditions.FullTraces, conditions.Policy{Executor: true},
			append(always, "mediator_model", "reflector_model", "report_withheld"),
			append(trial, "compactor_model", "advisor_model")},
		{"no feedback, no updates", conditions.NoFeedback, conditions.PolicyNone,
			append(always, "mediator_model", "compactor_model", "advisor_model", "reflector_model", "report_withheld"),
			trial},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRun(t, tc.cond, tc.pol, []string{"a", "b"}, 2, nil)
			tr.trials.delay = 3 * time.Millisecond
			tr.run.Trials = timedTrials{tr.trials}
			for _, c := range tr.run.Clients.byRole {
				c.Provider = retryingProvider{c.Provider}
			}
			tr.execute(t)
			tbl := readTable(t, filepath.Join(tr.run.Dir.MetricsDir(), rundir.MetricsPartName(2)))
			rows := int(tbl.NumRows())
			for _, col := range tc.null {
				if n := nulls(t, tbl, col); n != rows {
					t.Errorf("%s: %d of %d rows NULL, want all", col, n, rows)
				}
			}
			for _, col := range tc.set {
				if n := nulls(t, tbl, col); n != 0 {
					t.Errorf("%s: %d of %d rows NULL, want none", col, n, rows)
				}
			}
			// Only task a's verifier reported its tests.
			if n := nulls(t, tbl, "tests_total"); n != rows/2 {
				t.Errorf("tests_total: %d of %d rows NULL, want task b's only", n, rows)
			}
			checkTrialRows(t, tr.run.Dir.Path)
		})
	}
}

// checkTrialRows checks what every row records of its trial: a start
// before its end, in UTC, a run id, and each retry of its model calls.
func checkTrialRows(t *testing.T, dir string) {
	t.Helper()
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.TrialStartedAt == nil || r.TrialFinishedAt == nil || !r.TrialStartedAt.Before(*r.TrialFinishedAt) ||
			r.TrialStartedAt.Location() != time.UTC {
			t.Errorf("%s: trial started %v, finished %v; want a UTC start before the end", r.TrialID, r.TrialStartedAt, r.TrialFinishedAt)
		}
		if r.ModelCalls == 0 || r.ModelRetries != r.ModelCalls {
			t.Errorf("%s: %d model calls, %d retries; want one retry per call", r.TrialID, r.ModelCalls, r.ModelRetries)
		}
		if r.RunID != filepath.Base(dir) {
			t.Errorf("%s: run id %q, want the run directory %q", r.TrialID, r.RunID, filepath.Base(dir))
		}
	}
}
