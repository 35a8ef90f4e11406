package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// finishedRun writes a run directory that completed its iterations.
func finishedRun(t *testing.T, iterations int) string {
	t.Helper()
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	d, err := rundir.Create(t.TempDir(), rundir.Spec{
		Manifest: rundir.Manifest{Kind: rundir.KindRun, Condition: "full_traces", Policy: "none",
			Seed: 3, Tasks: []string{"csv-parser"}, Iterations: iterations},
		Config: cfg,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UpdateManifest(func(m *rundir.Manifest) {
		m.Status, m.CompletedIterations = rundir.StatusCompleted, iterations
	}); err != nil {
		t.Fatal(err)
	}
	return d.Path
}

// Resuming a finished run says so and how to extend it, and starts
// nothing; with a larger --iterations it runs.
func TestResumeFinishedRunSaysHowToExtend(t *testing.T) {
	dir := finishedRun(t, 2)
	want := "is finished: all 2 iterations ran"
	extend := "harness run --resume " + dir + " --iterations 4"

	r := runCLI(t, nil, "run", "--resume", dir, "--dry-run", "--offline")
	if r.code != 0 || !strings.Contains(r.out, want) || !strings.Contains(r.out, extend) {
		t.Errorf("dry run: exit %d, plan lacks %q and %q:\n%s\nstderr: %s", r.code, want, extend, r.out, r.errOut)
	}

	called := false
	f := testFactory()
	f.Execute = func(context.Context, *ValidatedPlan) error { called = true; return nil }
	r = runCLI(t, f, "run", "--resume", dir, "--offline")
	if r.code != 0 || called {
		t.Errorf("resume of a finished run: exit %d, executed %v; want 0 and nothing started", r.code, called)
	}
	if !strings.Contains(r.errOut, want) || !strings.Contains(r.errOut, extend) {
		t.Errorf("stderr %q lacks %q and %q", r.errOut, want, extend)
	}

	r = runCLI(t, f, "run", "--resume", dir, "--iterations", "4", "--offline")
	if r.code != 0 || !called || strings.Contains(r.errOut, want) {
		t.Errorf("resume with --iterations 4: exit %d, executed %v, stderr %q; want it to run", r.code, called, r.errOut)
	}
}

func TestFinishedNote(t *testing.T) {
	matrix := fixtureMatrix(t) // completed, 2 iterations
	zero, some := 0, 4
	tests := []struct {
		name string
		plan harness.Plan
		want string
	}{
		{"finished matrix", harness.Plan{Kind: rundir.KindMatrix, ResumeDir: matrix, Iterations: 2, RemainingTrials: &zero},
			"all 2 iterations ran, so resuming it runs nothing; to extend it, resume with more iterations, for example: harness matrix --resume " + matrix + " --iterations 4"},
		{"trials remain", harness.Plan{Kind: rundir.KindMatrix, ResumeDir: matrix, Iterations: 4, RemainingTrials: &some}, ""},
		{"not a resume", harness.Plan{Kind: rundir.KindMatrix, Iterations: 2}, ""},
		{"status not settled", harness.Plan{Kind: rundir.KindRun, ResumeDir: interruptedRun(t), Iterations: 2, RemainingTrials: &zero}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := finishedNote(&tt.plan)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("finishedNote = %q, want %q", got, tt.want)
			}
		})
	}
}

// interruptedRun is a run with all its iterations done whose status was
// never settled.
func interruptedRun(t *testing.T) string {
	dir := finishedRun(t, 2)
	d, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UpdateManifest(func(m *rundir.Manifest) { m.Status = rundir.StatusInterrupted }); err != nil {
		t.Fatal(err)
	}
	return dir
}
