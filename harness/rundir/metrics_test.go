package rundir

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestMetricsReadByIndependentReader reads a metrics part with Apache
// Arrow's Parquet implementation, not the library that wrote it.
func TestMetricsReadByIndependentReader(t *testing.T) {
	dir := t.TempDir()
	r1, r2 := 0.5, 1.0
	withheld := true
	rows := []MetricRow{
		{RunID: "run", Row: "full", Condition: "learned_mediator", SkillUpdatePolicy: "all", Iteration: 3,
			TaskID: "a", Status: "scored", Reward: &r1, TestsPassed: new(int32(1)), TestsFailed: new(int32(1)), TestsTotal: new(int32(2)),
			TestsReported: true, ReportWithheld: &withheld, Cause: new("model: boom")},
		{RunID: "run", Row: "full", Iteration: 3, TaskID: "b", Status: "env_failure", EnvFailure: true},
		{RunID: "run", Row: "full", Iteration: 3, TaskID: "c", Status: "scored", Reward: &r2,
			Warnings: []string{"storage_mb = 64 is not enforced"}},
	}
	if err := WriteMetricsPart(dir, 3, rows); err != nil {
		t.Fatal(err)
	}
	rdr, err := file.OpenParquetFile(filepath.Join(dir, MetricsPartName(3)), false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != 3 {
		t.Fatalf("rows = %d, want 3", tbl.NumRows())
	}
	col := func(name string) int {
		idx := tbl.Schema().FieldIndices(name)
		if len(idx) != 1 {
			t.Fatalf("column %s missing from %s", name, tbl.Schema())
		}
		return idx[0]
	}
	rewards := tbl.Column(col("reward")).Data().Chunk(0).(*array.Float64)
	if rewards.Value(0) != 0.5 || !rewards.IsNull(1) || rewards.Value(2) != 1.0 {
		t.Errorf("reward column = %v; want 0.5, NULL, 1", rewards)
	}
	tasks := tbl.Column(col("task_id")).Data().Chunk(0)
	if got := tasks.ValueStr(1); got != "b" {
		t.Errorf("task_id[1] = %q", got)
	}
	if idx := tbl.Schema().FieldIndices("skill_updates"); len(idx) != 0 {
		t.Errorf("metric rows still carry a skill_updates column: updates belong to the updates table")
	}
	totals := tbl.Column(col("tests_total")).Data().Chunk(0).(*array.Int32)
	if totals.Value(0) != 2 || !totals.IsNull(1) || !totals.IsNull(2) {
		t.Errorf("tests_total column = %v; want 2, NULL, NULL", totals)
	}
	causes := tbl.Column(col("cause")).Data().Chunk(0)
	if causes.ValueStr(0) != "model: boom" || !causes.IsNull(1) {
		t.Errorf("cause column = %v; want a cause, then NULL", causes)
	}
	warnings := tbl.Column(col("warnings")).Data().Chunk(0).(*array.List)
	if a, b := warnings.ValueOffsets(2); b-a != 1 || warnings.ListValues().ValueStr(int(a)) != "storage_mb = 64 is not enforced" {
		t.Errorf("warnings column = %v; want one warning on the third row", warnings)
	}
	if a, b := warnings.ValueOffsets(0); b != a {
		t.Errorf("warnings of a trial without any: %v", warnings)
	}
}
