package config

import (
	"strings"
	"testing"
)

const heteroLab = `
[models.cheap]
model = "qwen/qwen3-coder"
context_tokens = 32000
price_input_per_mtok = 0.05
price_output_per_mtok = 0.2

[labs.het]
assignment = "all"
[labs.het.students.strong]
own_skill = false
[labs.het.students.weak]
model = "cheap"
executor_mode = "hierarchical"
`

func TestLoadStudentTables(t *testing.T) {
	dir, _ := writeLayer(t, heteroLab)
	c, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	lab, err := c.Lab("het")
	if err != nil {
		t.Fatal(err)
	}
	got := lab.Roster()
	want := []LabStudent{
		{ID: "strong", ModelKey: "executor", ExecutorMode: ModeSingle},
		{ID: "weak", ModelKey: "cheap", ExecutorMode: ModeHierarchical},
	}
	if len(got) != len(want) {
		t.Fatalf("Roster = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("student %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if lab.Assign() != AssignAll {
		t.Errorf("assignment = %q, want all", lab.Assign())
	}
	m, err := c.ModelByKey("cheap")
	if err != nil {
		t.Fatal(err)
	}
	exec := c.Models["executor"]
	// A model only students name starts from the executor's and keeps
	// what it does not set.
	if m.Model != "qwen/qwen3-coder" || m.ContextTokens != 32000 || m.Provider != exec.Provider || m.Timeout != exec.Timeout {
		t.Errorf("models.cheap = %+v, want qwen with the executor's provider and timeout", m)
	}
	// The default lab keeps one student, rotating.
	def, _ := c.Lab("")
	if r := def.Roster(); len(r) != 1 || r[0].ID != "student-1" || def.Assign() != AssignRotate {
		t.Errorf("default lab roster %+v assignment %q, want one student-1 rotating", r, def.Assign())
	}
}

func TestLoadRejectsBadStudents(t *testing.T) {
	tests := []struct {
		name, body, wantKey, wantMsg string
	}{
		{"unknown model", "[labs.x.students.a]\nmodel = \"nosuch\"\n", "labs.x.students.a.model", "add [models.nosuch]"},
		{"bad assignment", "[labs.x]\nassignment = \"random\"\n", "labs.x.assignment", "rotate"},
		{"bad mode", "[labs.x.students.a]\nexecutor_mode = \"swarm\"\n", "labs.x.students.a.executor_mode", "single"},
		{"unknown student key", "[labs.x.students.a]\nmodle = \"cheap\"\n", "labs.x.students.a.modle", `did you mean "model"`},
		{"students of the wrong type", "[labs.x]\nstudents = \"two\"\n", "labs.x.students", "number of students or [labs.x.students.<id>] tables"},
		{"no students", "[labs.x]\nstudents = 0\n", "labs.x.students", "at least 1"},
		{"offline diligence out of range", "[models.executor]\noffline_diligence = 1.5\n", "models.executor.offline_diligence", "[0, 1]"},
		{"model named by nobody", "[models.cheap]\nmodel = \"y\"\n", "models.cheap", "named by a student"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := writeLayer(t, tc.body)
			_, err := Load(dir)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			ce := asConfigError(t, err)
			if ce.Key != tc.wantKey {
				t.Errorf("key %q, want %q (%v)", ce.Key, tc.wantKey, err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
		})
	}
}
