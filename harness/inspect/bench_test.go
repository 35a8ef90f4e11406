package inspect

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// syntheticRun writes one run directory of tasks x iterations metric rows,
// one Parquet part per iteration as the harness writes them: binary
// rewards, about 2% environment failures, spend on every row and a skill
// update every fifth iteration.
func syntheticRun(b *testing.B, dir, row string, seed int64, tasks, iterations int) {
	b.Helper()
	writeManifest(b, dir, rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusCompleted, Condition: "learned_mediator",
		Seed: seed, Iterations: iterations, CompletedIterations: iterations})
	mdir := filepath.Join(dir, "metrics")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(len(row))))
	rows := make([]rundir.MetricRow, tasks)
	for it := 1; it <= iterations; it++ {
		var updates []rundir.SkillUpdate
		if it%5 == 0 {
			updates = []rundir.SkillUpdate{{Role: "executor", ProvenanceID: fmt.Sprintf("executor/b-%04d", it), OldHash: "old", NewHash: "new"}}
		}
		for t := range rows {
			r := rundir.MetricRow{
				RunID: filepath.Base(dir), Row: row, Condition: "learned_mediator", SkillUpdatePolicy: "all", Lab: "default",
				Seed: seed, Iteration: int32(it), TaskID: fmt.Sprintf("task-%03d", t), TrialID: fmt.Sprintf("%s/%d/%d", row, it, t),
				Status: "scored", PlannerInputTokens: 1200, PlannerOutputTokens: 300, PlannerCostUSD: 0.01,
				ExecutorInputTokens: 20000, ExecutorOutputTokens: 2000, ExecutorCostUSD: 0.05,
				MediatorInputTokens: 3000, MediatorOutputTokens: 500, MediatorCostUSD: 0.004,
				ExecutorSkillHash: "e", PlannerSkillHash: "p", MediatorSkillHash: "m",
			}
			if rng.IntN(50) == 0 {
				r.Status, r.EnvFailure = "env_failure", true
			} else {
				v := float64(rng.IntN(2))
				r.Reward = &v
			}
			rows[t] = r
		}
		if err := rundir.WriteMetricsPart(mdir, it, rows); err != nil {
			b.Fatal(err)
		}
		var urows []rundir.UpdateRow
		for _, u := range updates {
			urows = append(urows, rundir.UpdateRow{RunID: filepath.Base(dir), Row: row, Seed: seed, Iteration: int32(it),
				Role: u.Role, ProvenanceID: u.ProvenanceID, OldHash: u.OldHash, NewHash: u.NewHash})
		}
		if err := rundir.WriteUpdatesPart(mdir, it, urows); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU starts measuring process CPU time; the function it returns
// reports it per operation (cpu-ns/op), next to the wall time.
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if used := processCPU() - start; used > 0 && b.N > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

// BenchmarkCompare100k compares a matrix of 10 rows x 100 tasks x 100
// iterations: 100,000 metric rows in 1,000 Parquet parts.
func BenchmarkCompare100k(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "bench-matrix")
	var plan []string
	for i := range 10 {
		name := fmt.Sprintf("row%02d", i)
		if i == 0 {
			name = "no_feedback"
		}
		plan = append(plan, name)
		syntheticRun(b, filepath.Join(dir, name), name, 42, 100, 100)
	}
	writeManifest(b, dir, rundir.Manifest{Kind: rundir.KindMatrix, Status: rundir.StatusCompleted, Rows: plan, Iterations: 100})
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		c, err := Compare(dir, CompareOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if c.Rows[0].Trials != 10_000 {
			b.Fatalf("row trials = %d", c.Rows[0].Trials)
		}
	}
}

// BenchmarkRun100k views one run of 100 tasks x 1,000 iterations: 100,000
// metric rows in 1,000 Parquet parts, every column group the view needs.
func BenchmarkRun100k(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "bench-run")
	syntheticRun(b, dir, "full_coevolution", 7, 100, 1000)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		v, err := ReadRunView(dir)
		if err != nil {
			b.Fatal(err)
		}
		if v.Trials != 100_000 {
			b.Fatalf("trials = %d", v.Trials)
		}
	}
}
