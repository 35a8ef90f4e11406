// Command genmatrix writes a synthetic matrix directory of metric rows the
// way the harness writes them (one Parquet part per iteration per row), for
// measuring the readers at scale: binary rewards, about 2% environment
// failures, spend on every row and a skill update every fifth iteration.
//
//	go run ./genmatrix -out DIR [-rows 10] [-tasks 100] [-iterations 1000]
//
// writes rows x tasks x iterations metric rows (1,000,000 by default).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
)

func main() {
	out := flag.String("out", "", "matrix directory to create (must not exist)")
	rows := flag.Int("rows", 10, "matrix rows (the first is no_feedback)")
	tasks := flag.Int("tasks", 100, "tasks per row")
	iterations := flag.Int("iterations", 1000, "iterations per row")
	flag.Parse()
	if err := run(*out, *rows, *tasks, *iterations); err != nil {
		fmt.Fprintln(os.Stderr, "genmatrix:", err)
		os.Exit(1)
	}
}

func run(out string, rows, tasks, iterations int) error {
	if out == "" || rows < 1 || tasks < 1 || iterations < 1 {
		return fmt.Errorf("pass -out DIR and positive -rows, -tasks and -iterations")
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("%s exists: pass a new directory", out)
	}
	var plan []string
	for i := range rows {
		name := fmt.Sprintf("row%02d", i)
		if i == 0 {
			name = "no_feedback"
		}
		plan = append(plan, name)
		if err := writeRun(filepath.Join(out, name), name, int64(42), i, tasks, iterations); err != nil {
			return err
		}
	}
	return writeManifest(out, rundir.Manifest{Kind: rundir.KindMatrix, Status: rundir.StatusCompleted, Rows: plan, Iterations: iterations})
}

// writeRun writes one row's run directory. Each row has its own success
// rate, so the rows differ and the comparison has something to find.
func writeRun(dir, row string, seed int64, index, tasks, iterations int) error {
	cond := "learned_mediator"
	if row == "no_feedback" {
		cond = "no_feedback"
	}
	err := writeManifest(dir, rundir.Manifest{Kind: rundir.KindRun, Status: rundir.StatusCompleted, Condition: cond,
		Seed: seed, Iterations: iterations, CompletedIterations: iterations})
	if err != nil {
		return err
	}
	mdir := filepath.Join(dir, rundir.MetricsDir)
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(index)))
	batch := make([]rundir.MetricRow, tasks)
	for it := 1; it <= iterations; it++ {
		// Every fifth iteration commits one skill update, recorded once in
		// the updates table as the harness records it.
		var updates []rundir.UpdateRow
		if it%5 == 0 {
			updates = []rundir.UpdateRow{{RunID: row, Row: row, Seed: seed, Iteration: int32(it), Role: "executor",
				ProvenanceID: fmt.Sprintf("executor/b-%04d", it), OldHash: "old", NewHash: "new"}}
		}
		for t := range batch {
			r := rundir.MetricRow{
				RunID: row, Row: row, Condition: cond, SkillUpdatePolicy: "all", Lab: "default",
				Seed: seed, Iteration: int32(it), TaskID: fmt.Sprintf("task-%03d", t), TrialID: fmt.Sprintf("%s/%d/%d", row, it, t),
				Status: "scored", PlannerInputTokens: 1200, PlannerOutputTokens: 300, PlannerCostUSD: 0.01,
				ExecutorInputTokens: 20000, ExecutorOutputTokens: 2000, ExecutorCostUSD: 0.05,
				MediatorInputTokens: 3000, MediatorOutputTokens: 500, MediatorCostUSD: 0.004,
				ExecutorSkillHash: "e", PlannerSkillHash: "p", MediatorSkillHash: "m",
			}
			if rng.IntN(50) == 0 {
				r.Status, r.EnvFailure = "env_failure", true
			} else {
				// Task difficulty and row skill both move the success rate.
				p := 0.2 + 0.6*float64(t)/float64(tasks) + 0.01*float64(index)
				v := 0.0
				if rng.Float64() < p {
					v = 1
				}
				r.Reward = &v
			}
			batch[t] = r
		}
		if err := rundir.WriteMetricsPart(mdir, it, batch); err != nil {
			return fmt.Errorf("write %s iteration %d: %w", dir, it, err)
		}
		if err := rundir.WriteUpdatesPart(mdir, it, updates); err != nil {
			return fmt.Errorf("write %s updates of iteration %d: %w", dir, it, err)
		}
	}
	return nil
}

func writeManifest(dir string, m rundir.Manifest) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m.ID = filepath.Base(dir)
	m.StartedAt = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	m.UpdatedAt = m.StartedAt
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, rundir.ManifestFile), data, 0o644)
}
