package inspect

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// randomRows makes rows exercising what the scanner must get right: NULL
// and non-NULL rewards, environment failures, skill-update lists of length
// 0 to 3, and every spend column.
func randomRows(n int) []legacyRow {
	rng := rand.New(rand.NewPCG(3, 4))
	rows := make([]legacyRow, n)
	for i := range rows {
		r := legacyRow{MetricRow: rundir.MetricRow{
			RunID: fmt.Sprintf("run-%d", i%3), Row: fmt.Sprintf("row-%d", i%4), BaselinePreset: ptr("p"), Condition: "c",
			SkillUpdatePolicy: "all", Lab: "default", Seed: int64(i % 5), Offline: i%2 == 0, Iteration: int32(i / 10),
			TaskID: fmt.Sprintf("task-%d", rng.IntN(7)), Status: "scored",
			PlannerInputTokens: rng.Int64N(1000), PlannerOutputTokens: rng.Int64N(1000), PlannerCostUSD: rng.Float64(),
			ExecutorInputTokens: rng.Int64N(1000), ExecutorOutputTokens: rng.Int64N(1000), ExecutorCostUSD: rng.Float64(),
			MediatorInputTokens: rng.Int64N(1000), MediatorOutputTokens: rng.Int64N(1000), MediatorCostUSD: rng.Float64(),
			CompactorInputTokens: rng.Int64N(1000), CompactorOutputTokens: rng.Int64N(1000), CompactorCostUSD: rng.Float64(),
			CoevoInputTokens: rng.Int64N(1000), CoevoOutputTokens: rng.Int64N(1000), CoevoCostUSD: rng.Float64(),
		}}
		switch rng.IntN(4) {
		case 0:
			r.Status, r.EnvFailure = "env_failure", true
		case 1:
			r.Status = "agent_error"
		default:
			v := rng.Float64()
			r.Reward = &v
		}
		for k := range rng.IntN(4) {
			r.SkillUpdates = append(r.SkillUpdates, rundir.SkillUpdate{Role: fmt.Sprint("role", k),
				ProvenanceID: fmt.Sprintf("p-%d-%d", i, k), OldHash: fmt.Sprint("old", i), NewHash: fmt.Sprint("new", k)})
		}
		rows[i] = r
	}
	return rows
}

func checkRecord(t *testing.T, i int, want legacyRow, got record) {
	t.Helper()
	if got.RunID != want.RunID || got.Row != want.Row || got.Preset != *want.BaselinePreset || got.Condition != want.Condition ||
		got.Policy != want.SkillUpdatePolicy || got.Lab != want.Lab || got.Seed != want.Seed || got.Offline != want.Offline ||
		got.Iteration != want.Iteration || got.TaskID != want.TaskID || got.Status != want.Status || got.EnvFailure != want.EnvFailure {
		t.Fatalf("row %d: got %+v, want %+v", i, got, want)
	}
	if got.HasReward != (want.Reward != nil) || (want.Reward != nil && got.Reward != *want.Reward) {
		t.Fatalf("row %d: reward %v/%v, want %v", i, got.Reward, got.HasReward, want.Reward)
	}
	wantSpend := [len(roles)][3]float64{
		{float64(want.PlannerInputTokens), float64(want.PlannerOutputTokens), want.PlannerCostUSD},
		{float64(want.ExecutorInputTokens), float64(want.ExecutorOutputTokens), want.ExecutorCostUSD},
		{float64(want.MediatorInputTokens), float64(want.MediatorOutputTokens), want.MediatorCostUSD},
		{float64(want.CompactorInputTokens), float64(want.CompactorOutputTokens), want.CompactorCostUSD},
		{float64(want.CoevoInputTokens), float64(want.CoevoOutputTokens), want.CoevoCostUSD},
	}
	for r := range roles {
		if g := [3]float64{float64(got.InputTokens[r]), float64(got.OutputTokens[r]), got.CostUSD[r]}; g != wantSpend[r] {
			t.Fatalf("row %d role %s: spend %v, want %v", i, roles[r], g, wantSpend[r])
		}
	}
	if len(got.Updates) != len(want.SkillUpdates) {
		t.Fatalf("row %d: %d updates, want %d", i, len(got.Updates), len(want.SkillUpdates))
	}
	for k, u := range want.SkillUpdates {
		if got.Updates[k] != (update{u.Role, u.ProvenanceID, u.OldHash, u.NewHash}) {
			t.Fatalf("row %d update %d: %+v, want %+v", i, k, got.Updates[k], u)
		}
	}
}

func TestScanMatchesTheWrittenRows(t *testing.T) {
	rows := randomRows(2500)
	dir := t.TempDir()
	tests := []struct {
		name  string
		write func(path string) error
	}{
		// As an older harness wrote a part, with the updates on the rows.
		{"older harness part", func(path string) error {
			writeLegacyPart(t, path, rows, parquet.Compression(&parquet.Zstd))
			return nil
		}},
		// Several row groups and many small pages, as a compacted dataset
		// might have.
		{"row groups and pages", func(path string) error {
			writeLegacyPart(t, path, rows, parquet.MaxRowsPerRowGroup(300), parquet.PageBufferSize(512))
			return nil
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprint(i), "part-00001.parquet")
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := tc.write(path); err != nil {
				t.Fatal(err)
			}
			n := 0
			batches := 0
			err := scanFiles([]string{path}, fullScan, func(batch []record) error {
				batches++
				if len(batch) > batchRows {
					t.Fatalf("batch of %d rows, more than %d", len(batch), batchRows)
				}
				for _, r := range batch {
					checkRecord(t, n, rows[n], r)
					n++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(rows) || batches < 3 {
				t.Errorf("scanned %d rows in %d batches, want %d in at least 3", n, batches, len(rows))
			}
		})
	}
}

func TestScanOnlyDecodesWhatItIsAsked(t *testing.T) {
	rows := randomRows(10)
	dir := t.TempDir()
	writeLegacyPart(t, filepath.Join(dir, "part-00001.parquet"), rows)
	err := scanFiles([]string{filepath.Join(dir, "part-00001.parquet")}, compareScan, func(batch []record) error {
		for _, r := range batch {
			if r.InputTokens != [len(roles)]int64{} || len(r.Updates) != 0 {
				t.Errorf("compare scan decoded spend or updates: %+v", r)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestScanRejectsAForeignSchema(t *testing.T) {
	// A file whose reward column is a string was not written by the harness.
	type foreign struct {
		TaskID string `parquet:"task_id"`
		Reward string `parquet:"reward"`
	}
	path := filepath.Join(t.TempDir(), "part-00001.parquet")
	if err := parquet.WriteFile(path, []foreign{{"a", "1"}}); err != nil {
		t.Fatal(err)
	}
	err := scanFiles([]string{path}, compareScan, func([]record) error { return nil })
	if err == nil || !containsSubstring([]string{err.Error()}, "column reward holds BYTE_ARRAY values, want DOUBLE") {
		t.Errorf("err = %v", err)
	}
}

// Parts of different schemas in one scan (an older harness wrote fewer
// columns, in another order) each get their own plan: the plan made for
// one schema is never applied to the other.
func TestScanPlansEachSchema(t *testing.T) {
	type older struct {
		Reward *float64 `parquet:"reward,optional"`
		TaskID string   `parquet:"task_id"`
	}
	dir := t.TempDir()
	one := 1.0
	paths := []string{filepath.Join(dir, "part-00001.parquet"), filepath.Join(dir, "part-00002.parquet"), filepath.Join(dir, "part-00003.parquet")}
	if err := parquet.WriteFile(paths[0], []older{{&one, "old"}}); err != nil {
		t.Fatal(err)
	}
	cur := rundir.MetricRow{TaskID: "new", Row: "r", Iteration: 2, Status: "scored"}
	if err := rundir.WriteMetricsPart(dir, 2, []rundir.MetricRow{cur}); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(paths[2], []older{{nil, "old2"}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := scanFiles(paths, compareScan, func(batch []record) error {
		for _, r := range batch {
			got = append(got, fmt.Sprintf("%s/%s/%d/%v", r.TaskID, r.Row, r.Iteration, r.HasReward))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"old//0/true", "new/r/2/false", "old2//0/false"}; !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
}

// Files decoded on several goroutines reach fn as they do from one: the
// same rows in file order; the first damaged file's error ends the scan,
// and so does fn's.
func TestScanParallelKeepsFileOrder(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for it := 1; it <= 12; it++ {
		rows := make([]rundir.MetricRow, 1+it%4*700) // some parts span several batches
		for i := range rows {
			rows[i] = rundir.MetricRow{TaskID: fmt.Sprintf("t%d-%d", it, i), Iteration: int32(it)}
		}
		if err := rundir.WriteMetricsPart(dir, it, rows); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Join(dir, rundir.MetricsPartName(it)))
	}
	collect := func(scan func(fn func([]record) error) error) ([]string, error) {
		var got []string
		err := scan(func(b []record) error {
			for _, r := range b {
				got = append(got, r.TaskID)
			}
			return nil
		})
		return got, err
	}
	want, err := collect(func(fn func([]record) error) error {
		s := newScanner(compareScan, fn)
		for _, p := range paths {
			if err := s.file(p); err != nil {
				return err
			}
		}
		return s.flush()
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := collect(func(fn func([]record) error) error { return scanParallel(paths, compareScan, fn, 3) })
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("parallel scan gave %d rows (err %v), want the %d of the sequential one in order", len(got), err, len(want))
	}

	damaged := filepath.Join(dir, "part-damaged.parquet")
	if err := os.WriteFile(damaged, []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	withDamage := append(append(slices.Clone(paths[:5]), damaged), paths[5:]...)
	if _, err := collect(func(fn func([]record) error) error { return scanParallel(withDamage, compareScan, fn, 3) }); err == nil ||
		!strings.Contains(err.Error(), "part-damaged.parquet") {
		t.Errorf("damaged file: err = %v, want it named", err)
	}
	stop := errors.New("enough")
	n := 0
	err = scanParallel(paths, compareScan, func([]record) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	}, 3)
	if !errors.Is(err, stop) {
		t.Errorf("fn's error: got %v", err)
	}
}
