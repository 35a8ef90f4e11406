package rundir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// oldRow is a metric row as earlier harnesses wrote it: every column
// required, "" and 0 standing for "not applicable", a matrix row's run id
// its row directory alone, and the iteration's skill updates on each row.
type oldRow struct {
	RunID               string        `parquet:"run_id,dict"`
	MatrixID            string        `parquet:"matrix_id,dict"`
	Row                 string        `parquet:"row,dict"`
	BaselinePreset      string        `parquet:"baseline_preset,dict"`
	Seed                int64         `parquet:"seed"`
	Iteration           int32         `parquet:"iteration"`
	TaskID              string        `parquet:"task_id,dict"`
	Phase               string        `parquet:"phase,dict"`
	CheckpointIteration int32         `parquet:"checkpoint_iteration"`
	TestsPassed         int32         `parquet:"tests_passed"`
	TestsTotal          int32         `parquet:"tests_total"`
	TrialMS             int64         `parquet:"trial_ms"`
	Cause               string        `parquet:"cause"`
	PlannerModel        string        `parquet:"planner_model,dict"`
	SkillUpdates        []SkillUpdate `parquet:"skill_updates,list"`
}

func writeOldPart(t *testing.T, path string, rows []oldRow) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(path, rows); err != nil {
		t.Fatal(err)
	}
}

func TestOldPartsReadInTheCurrentForm(t *testing.T) {
	upd := []SkillUpdate{{Role: "executor", ProvenanceID: "executor/b001", OldHash: "h1", NewHash: "h2"}}
	tests := []struct {
		name string
		old  oldRow
		want MetricRow
	}{
		{"single run, nothing applicable",
			oldRow{RunID: "20250301T120000Z-7-run", Row: "run", Iteration: 1, TaskID: "a", TrialMS: 5},
			MetricRow{RunID: "20250301T120000Z-7-run", Row: "run", Iteration: 1, TaskID: "a", TrialMS: new(int64(5))}},
		{"matrix row: run id qualified, values kept",
			oldRow{RunID: "full", MatrixID: "m1", Row: "full", BaselinePreset: "full_coevolution", Iteration: 2, TaskID: "b",
				Cause: "model: boom", PlannerModel: "p/model", TestsPassed: 1, TestsTotal: 2, SkillUpdates: upd},
			MetricRow{RunID: "m1/full", MatrixID: new("m1"), Row: "full", BaselinePreset: new("full_coevolution"), Iteration: 2,
				TaskID: "b", Cause: new("model: boom"), PlannerModel: new("p/model"), TestsPassed: new(int32(1)),
				TestsTotal: new(int32(2)), TrialMS: new(int64(0))}},
		{"evaluation row keeps its checkpoint 0",
			oldRow{RunID: "r", Row: "r", Iteration: 3, TaskID: "h", Phase: "eval"},
			MetricRow{RunID: "r", Row: "r", Iteration: 3, TaskID: "h", Phase: PhaseEval, CheckpointIteration: new(int32(0)),
				TrialMS: new(int64(0))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), MetricsDir, MetricsPartName(1))
			writeOldPart(t, path, []oldRow{tc.old})
			rows, err := ReadMetricsFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := rows[0]
			got.Warnings = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("read\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestSkillUpdatesAreReadOnceFromTheTableAndOldParts(t *testing.T) {
	dir := t.TempDir()
	metrics := filepath.Join(dir, MetricsDir)
	old := []SkillUpdate{{Role: "executor", ProvenanceID: "executor/b001", OldHash: "h1", NewHash: "h2"}}
	// An old part repeats iteration 1's update on each of its rows.
	writeOldPart(t, filepath.Join(metrics, MetricsPartName(1)), []oldRow{
		{RunID: "full", MatrixID: "m1", Row: "full", Seed: 7, Iteration: 1, TaskID: "a", SkillUpdates: old},
		{RunID: "full", MatrixID: "m1", Row: "full", Seed: 7, Iteration: 1, TaskID: "b", SkillUpdates: old},
	})
	// The resumed run recorded iteration 2's in the table.
	if err := WriteMetricsPart(metrics, 2, []MetricRow{{RunID: "m1/full", Row: "full", Iteration: 2, TaskID: "a"}}); err != nil {
		t.Fatal(err)
	}
	newer := UpdateRow{RunID: "m1/full", MatrixID: new("m1"), Row: "full", Seed: 7, Iteration: 2, Role: "planner",
		ProvenanceID: "planner/reflection-i0002", OldHash: "p1", NewHash: "p2"}
	if err := WriteUpdatesPart(metrics, 2, []UpdateRow{newer}); err != nil {
		t.Fatal(err)
	}
	// A redone iteration that committed nothing leaves no stale part.
	if err := WriteUpdatesPart(metrics, 3, []UpdateRow{newer}); err != nil {
		t.Fatal(err)
	}
	if err := WriteUpdatesPart(metrics, 3, nil); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSkillUpdates(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []UpdateRow{
		{RunID: "m1/full", MatrixID: new("m1"), Row: "full", Seed: 7, Iteration: 1, Role: "executor", ProvenanceID: "executor/b001",
			OldHash: "h1", NewHash: "h2"},
		newer,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("updates\n%+v\nwant\n%+v", got, want)
	}
	rows, err := ReadMetrics(dir)
	if err != nil || len(rows) != 3 {
		t.Errorf("ReadMetrics: %d rows, %v; want the 3 metric rows, not the updates table", len(rows), err)
	}
}

// No glob of metric parts, however deep, reaches the updates table, whose
// schema differs; a part under the old extension is still read, and a
// redone iteration replaces it rather than keeping both.
func TestUpdatesTableIsOutOfTheMetricGlob(t *testing.T) {
	dir := t.TempDir()
	metrics := filepath.Join(dir, "row", MetricsDir)
	u := UpdateRow{RunID: "m/row", Row: "row", Iteration: 2, Role: "planner", ProvenanceID: "planner/reflection-i0002", OldHash: "a", NewHash: "b"}
	if err := WriteMetricsPart(metrics, 2, []MetricRow{{RunID: "m/row", Row: "row", Iteration: 2, TaskID: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteUpdatesPart(metrics, 2, []UpdateRow{u}); err != nil {
		t.Fatal(err)
	}
	var parquet []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".parquet") {
			parquet = append(parquet, p)
		}
		return nil
	})
	if len(parquet) != 1 || filepath.Base(parquet[0]) != MetricsPartName(2) {
		t.Errorf("files a **/*.parquet glob reads: %v, want only the metric part", parquet)
	}

	// A directory written before: its part ends in .parquet.
	old := filepath.Join(metrics, UpdatesDir, "updates-00001.parquet")
	if err := writeParquet(old, []UpdateRow{{RunID: "m/row", Row: "row", Iteration: 1, Role: "executor", ProvenanceID: "executor/b001"}}); err != nil {
		t.Fatal(err)
	}
	if it, ok := ParseUpdatesPart("updates-00001.parquet"); !ok || it != 1 {
		t.Errorf("ParseUpdatesPart of an old part = %d, %v", it, ok)
	}
	got, err := ReadSkillUpdates(filepath.Join(dir, "row"))
	if err != nil || len(got) != 2 {
		t.Fatalf("ReadSkillUpdates = %+v, %v; want the old part's update and the new one", got, err)
	}
	if err := WriteUpdatesPart(metrics, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a redone iteration 1 kept its old part (%v)", err)
	}
}
