package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// TestInspectCalls resumes the v1 fixture offline for one more iteration,
// whose calls are then in the run's call log, and reads them back.
func TestInspectCalls(t *testing.T) {
	dir := v1Run(t)
	f := testFactory()
	backend := &scoringBackend{rewards: v1ResumeRewards}
	f.Sandbox = func(context.Context, config.ExecutorRuntime) (SandboxBackend, error) { return backend, nil }
	f.Providers = providers.New
	if r := runCLI(t, f, "run", "--resume", dir, "--iterations", "3"); r.code != ExitOK {
		t.Fatalf("resume: exit %d\nstderr: %s", r.code, r.errOut)
	}
	// Parts written before the model columns existed read back with them
	// NULL; the resumed iteration's part names the models.
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		if old := row.Iteration < 3; (row.PlannerModel == nil) != old || (row.ExecutorModel == nil) != old {
			t.Errorf("iteration %d row: planner_model %v executor_model %v", row.Iteration, row.PlannerModel, row.ExecutorModel)
		}
	}
	var all []rundir.CallRecord
	if err := rundir.ReadCalls(filepath.Join(dir, rundir.CallsFile), func(c rundir.CallRecord) error {
		all = append(all, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	count := func(keep func(rundir.CallRecord) bool) int {
		n := 0
		for _, c := range all {
			if keep(c) {
				n++
			}
		}
		return n
	}

	tests := []struct {
		name string
		args []string
		keep func(rundir.CallRecord) bool
	}{
		{"every call", nil, func(rundir.CallRecord) bool { return true }},
		{"the mediator's", []string{"--role", "mediator"}, func(c rundir.CallRecord) bool { return c.Role == "mediator" }},
		{"one task", []string{"--task", "csv-parser"}, func(c rundir.CallRecord) bool { return c.Task == "csv-parser" }},
		{"the planner in iteration 3", []string{"--role", "planner", "--iteration", "3"},
			func(c rundir.CallRecord) bool { return c.Role == "planner" && c.Iteration == 3 }},
		{"an iteration with none", []string{"--iteration", "1"}, func(rundir.CallRecord) bool { return false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, append([]string{"inspect", dir, "--calls", "--json"}, tt.args...)...)
			if r.code != ExitOK {
				t.Fatalf("exit %d\nstderr: %s", r.code, r.errOut)
			}
			var got []rundir.CallRecord
			if err := json.Unmarshal([]byte(r.out), &got); err != nil {
				t.Fatalf("not a list of call records: %v\n%s", err, r.out)
			}
			want := count(tt.keep)
			if len(got) != want {
				t.Fatalf("%d records, want %d", len(got), want)
			}
			for _, c := range got {
				if !tt.keep(c) {
					t.Errorf("record of %s (role %s, task %s, iteration %d) does not match", c.Caller, c.Role, c.Task, c.Iteration)
				}
			}
			text := runCLI(t, nil, append([]string{"inspect", dir, "--calls"}, tt.args...)...)
			if lines := strings.Count(text.out, "\n"); text.code != ExitOK || (want > 0 && lines != want+1) {
				t.Errorf("text listing: exit %d, %d lines for %d calls\n%s", text.code, lines, want, text.out)
			}
		})
	}
	if count(func(c rundir.CallRecord) bool { return c.Role == "mediator" }) == 0 {
		t.Error("the resumed iteration recorded no mediator call")
	}

	usage := [][]string{
		{"inspect", dir, "--role", "mediator"},
		{"inspect", dir, "--calls", "--iteration", "0"},
		{"inspect", dir, "--calls", "--follow"},
		{"inspect", "--calls"},
	}
	for _, args := range usage {
		if r := runCLI(t, nil, args...); r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, r.code, ExitUsage)
		}
	}
}
