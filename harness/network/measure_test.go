package network

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// baselineMatrix writes a no_feedback matrix with one row per seed whose
// tasks score the rewards given, and a full_coevolution row the check
// must ignore.
func baselineMatrix(t *testing.T, rewards map[int64][]float64) string {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for seed := range rewards {
		names = append(names, fmt.Sprintf("no_feedback-seed%d", seed))
	}
	names = append(names, "other")
	md, err := rundir.Create(t.TempDir(), rundir.Spec{Manifest: rundir.Manifest{Kind: rundir.KindMatrix, Name: "baseline", Rows: names}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, condition string, seed int64, values []float64) {
		d, err := rundir.Create(md.Path, rundir.Spec{Manifest: rundir.Manifest{Kind: rundir.KindRun, Condition: condition, Seed: seed}, DirName: name, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		var rows []rundir.MetricRow
		for i, v := range values {
			rows = append(rows, rundir.MetricRow{RunID: name, Row: name, Seed: seed, Iteration: 1, TaskID: fmt.Sprintf("t%d", i),
				TrialID: fmt.Sprintf("i0001-t%d", i), Phase: rundir.PhaseTrain, Reward: new(v), Condition: condition})
		}
		if err := rundir.WriteMetricsPart(d.MetricsDir(), 1, rows); err != nil {
			t.Fatal(err)
		}
	}
	for seed, values := range rewards {
		write(fmt.Sprintf("no_feedback-seed%d", seed), "no_feedback", seed, values)
	}
	write("other", "learned_mediator", 9, []float64{1, 1})
	return md.Path
}

// The gate passes a baseline whose seeds agree, and refuses, naming the
// fix, one whose seeds disagree, one with a single seed, and a run
// directory.
func TestCheckStability(t *testing.T) {
	stable := baselineMatrix(t, map[int64][]float64{1: {0.5, 0.5}, 2: {0.5, 0.6}})
	st, err := CheckStability(stable, 0.1)
	if err != nil {
		t.Fatalf("a stable baseline was refused: %v", err)
	}
	if st.Spread <= 0 || st.Spread >= 0.1 || len(st.SeedMeans) != 2 {
		t.Errorf("stability = %+v", st)
	}
	unstable := baselineMatrix(t, map[int64][]float64{1: {0, 0}, 2: {1, 1}})
	single := baselineMatrix(t, map[int64][]float64{1: {0.5}})
	run := stable + "/no_feedback-seed1"
	for name, c := range map[string]struct {
		dir, want string
	}{
		"unstable":     {unstable, "not under the bound 0.100"},
		"one seed":     {single, "the spread needs two or more"},
		"not a matrix": {run, "is a run directory"},
	} {
		_, err := CheckStability(c.dir, 0.1)
		if !errors.Is(err, ErrUnstable) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrUnstable saying %q", name, err, c.want)
		}
	}
}
