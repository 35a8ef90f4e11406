package inspect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// Helpers that lay out run and matrix directories the way the harness
// writes them, so the readers are tested against the real formats.

func ptr[T any](v T) *T { return &v }

// legacyRow is a metric row as parts written before the updates table hold
// it: the iteration's committed updates repeated on every row.
type legacyRow struct {
	rundir.MetricRow
	SkillUpdates []rundir.SkillUpdate `parquet:"skill_updates,list"`
}

// writeLegacyPart writes rows in that older format to path.
func writeLegacyPart(t testing.TB, path string, rows []legacyRow, opts ...parquet.WriterOption) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := parquet.NewGenericWriter[legacyRow](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeUpdates records skill updates committed in iteration it of the run
// in runDir, as the harness does.
func writeUpdates(t testing.TB, runDir string, it int, rows ...rundir.UpdateRow) {
	t.Helper()
	for i := range rows {
		rows[i].Iteration = int32(it)
	}
	if err := rundir.WriteUpdatesPart(filepath.Join(runDir, rundir.MetricsDir), it, rows); err != nil {
		t.Fatal(err)
	}
}

var fixtureTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func writeManifest(t testing.TB, dir string, m rundir.Manifest) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if m.ID == "" {
		m.ID = filepath.Base(dir)
	}
	if m.StartedAt.IsZero() {
		m.StartedAt, m.UpdatedAt = fixtureTime, fixtureTime
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// Temporary name and rename, as the harness does: a follower polling
	// the file must never see half of it.
	tmp := filepath.Join(dir, ".run.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, rundir.ManifestFile)); err != nil {
		t.Fatal(err)
	}
}

// writeMetrics writes rows as one Parquet part per iteration.
func writeMetrics(t testing.TB, dir string, rows []rundir.MetricRow) {
	t.Helper()
	byIter := map[int][]rundir.MetricRow{}
	for _, r := range rows {
		byIter[int(r.Iteration)] = append(byIter[int(r.Iteration)], r)
	}
	its := make([]int, 0, len(byIter))
	for it := range byIter {
		its = append(its, it)
	}
	sort.Ints(its)
	mdir := filepath.Join(dir, "metrics")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if err := rundir.WriteMetricsPart(mdir, it, byIter[it]); err != nil {
			t.Fatal(err)
		}
	}
}

func writeLines(t testing.TB, path string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, l := range lines {
		data = append(data, l...)
		data = append(data, '\n')
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// trial is one metric row to write: a nil reward means none was
// produced; status env_failure marks an environment failure.
type trial struct {
	iteration int
	task      string
	status    rundir.TrialStatus
	reward    *float64
}

func scored(it int, task string, r float64) trial { return trial{it, task, "scored", &r} }

func rowsOf(runID, row, condition, policy string, seed int64, trials ...trial) []rundir.MetricRow {
	out := make([]rundir.MetricRow, 0, len(trials))
	for _, tr := range trials {
		m := rundir.MetricRow{
			RunID: runID, Row: row, Condition: condition, SkillUpdatePolicy: policy, Lab: "default",
			Seed: seed, Iteration: int32(tr.iteration), TaskID: tr.task, Status: tr.status, Reward: tr.reward,
			EnvFailure: tr.status == "env_failure",
		}
		out = append(out, m)
	}
	return out
}

// writeMatrix creates a matrix directory whose rows are the given runs
// (row directory name -> metric rows), in the given plan order.
func writeMatrix(t testing.TB, dir string, plan []string, runs map[string][]rundir.MetricRow) {
	t.Helper()
	writeManifest(t, dir, rundir.Manifest{Kind: rundir.KindMatrix, Name: "fixture", Status: rundir.StatusCompleted,
		Rows: plan, Tasks: []string{"a", "b", "c"}, Iterations: 2})
	for _, name := range plan {
		rows := runs[name]
		rd := filepath.Join(dir, name)
		m := rundir.Manifest{Kind: rundir.KindRun, Name: name, Status: rundir.StatusCompleted,
			MatrixID: filepath.Base(dir), Tasks: []string{"a", "b", "c"}, Iterations: 2, CompletedIterations: 2}
		if len(rows) > 0 {
			m.Condition, m.Policy, m.Seed = rows[0].Condition, rows[0].SkillUpdatePolicy, rows[0].Seed
		}
		writeManifest(t, rd, m)
		writeMetrics(t, rd, rows)
	}
}
