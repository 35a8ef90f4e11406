package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
)

// cheapRows is a matrix whose second row runs its Executor on another
// model, priced ten times the default's, and its lab with two students.
const cheapRows = `name = "models"
[[rows]]
name = "base"
preset = "full_coevolution"
[[rows]]
name = "other"
preset = "full_coevolution"
[rows.models.executor]
model = "other/model"
context_tokens = 32768
price_input_per_mtok = 5.0
price_output_per_mtok = 30.0
[rows.labs.default]
students = 2
`

// A row's [rows.models.<key>] keys are laid over the configuration for
// that row only: the dry run names its model and prices its tokens with
// the row's own prices, the other row keeps the configuration's, and the
// written matrix file reads back the same rows.
func TestMatrixRowOverridesModels(t *testing.T) {
	cfg := rundirTestConfig(t)
	mf, err := ParseMatrixFile([]byte(cheapRows), "m.toml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildMatrixPlan(cfg, PlanOptions{Name: mf.Name, Rows: mf.Rows, Tasks: []string{"a", "b"}, Iterations: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) != 2 || p.Rows[0].Models != nil || p.Rows[1].Models[conditions.RoleExecutor] != "openai/other/model" {
		t.Fatalf("rows' own models: %+v", p.Rows)
	}
	if got := p.Models[conditions.RoleExecutor]; got != "openai/google/gemini-3-flash-preview" {
		t.Errorf("plan's executor model %q, want the configuration's", got)
	}
	// Only the other row's lab has two students.
	if len(p.Students) != 2 || len(p.Students[0].Students) != 1 || p.Students[1].Row != "other" || len(p.Students[1].Students) != 2 {
		t.Errorf("students %+v: want the configuration's lab, then row other's with two students", p.Students)
	}
	same, err := BuildMatrixPlan(cfg, PlanOptions{Name: "same", Rows: mf.Rows[:1], Tasks: []string{"a", "b"}, Iterations: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The other row costs more than the base row, at its own prices: the
	// matrix is more than twice one base row.
	if p.EstimatedCostUSD <= 2*same.EstimatedCostUSD {
		t.Errorf("cost of both rows %.4f, of the base row %.4f: want the other row priced higher", p.EstimatedCostUSD, same.EstimatedCostUSD)
	}
	rc, err := p.RowConfig(p.Rows[1])
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := rc.Model(conditions.RoleExecutor); m.Model != "other/model" || m.ContextTokens != 32768 || m.BaseURL == "" {
		t.Errorf("row config executor %+v: want the override over the configuration's endpoint", m)
	}
	if m, _ := p.Config().Model(conditions.RoleExecutor); m.Model == "other/model" {
		t.Error("the row's override leaked into the plan's configuration")
	}

	var buf bytes.Buffer
	if err := p.WriteMatrixFile(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "matrix.toml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := LoadMatrixFile(path)
	if err != nil {
		t.Fatalf("written file does not read back: %v\n%s", err, buf.String())
	}
	again, err := BuildMatrixPlan(cfg, PlanOptions{Name: back.Name, Rows: back.Rows, Tasks: []string{"a", "b"}, Iterations: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Rows, p.Rows) {
		t.Errorf("round trip rows %+v\nwant %+v\nfile:\n%s", again.Rows, p.Rows, buf.String())
	}
}

// A bad override is refused before anything runs, naming the row, the
// key and the fix.
func TestMatrixRowOverrideErrors(t *testing.T) {
	tests := []struct {
		name, rows string
		want       []string
	}{
		{"unknown model key", "[rows.models.exeuctor]\nmodel = \"x\"\n", []string{`"other"`, "models.exeuctor", `did you mean "executor"`}},
		{"unknown key in a model", "[rows.models.executor]\nmodle = \"x\"\n", []string{`"other"`, "modle"}},
		{"new model without context", "[rows.models.executor]\nmodel = \"x\"\n", []string{`"other"`, "context_tokens"}},
		{"another lab", "[rows.labs.hierarchical]\nstudents = 2\n", []string{`"other"`, "[rows.labs.hierarchical]", "[rows.labs.default]"}},
		{"unknown lab key", "[rows.labs.default]\nstudent = 2\n", []string{`"other"`, "student"}},
		{"unknown row table", "[rows.budget]\nmax_usd = 1.0\n", []string{"rows.budget", "[rows.models.<key>]"}},
	}
	cfg := rundirTestConfig(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := "name = \"m\"\n[[rows]]\nname = \"other\"\npreset = \"no_feedback\"\n" + tc.rows
			mf, err := ParseMatrixFile([]byte(file), "m.toml")
			if err == nil {
				_, err = BuildMatrixPlan(cfg, PlanOptions{Name: mf.Name, Rows: mf.Rows, Tasks: []string{"a"}, Iterations: 1})
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The dry run counts the gate's trials of each own-skill student and
// prices them on that student's model, the one its gate measures on.
func TestDryRunPricesOwnSkillValidationOnTheStudentsModel(t *testing.T) {
	plan := func(own bool) *Plan {
		t.Helper()
		cfg := rundirTestConfig(t)
		heteroLab(config.AssignRotate)(cfg)
		lab := cfg.Labs[config.DefaultLab]
		lab.Students.ByID["weak"] = config.Student{Model: "cheap", OwnSkill: own}
		cfg.Labs[config.DefaultLab] = lab
		cfg.Validation.Enabled = true
		cfg.Experiment.AdvisorBufferMax = 2
		p, err := BuildRunPlan(cfg, PlanOptions{Tasks: []string{"a", "b", "c", "d"}, Iterations: 6,
			Condition: conditions.LearnedMediator, Policy: conditions.PolicyAll, OutDir: "out"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	shared, own := plan(false), plan(true)
	if own.ValidationTrials == 0 || shared.ValidationTrials == 0 {
		t.Fatalf("validation trials: shared %d, own %d; want some in both", shared.ValidationTrials, own.ValidationTrials)
	}
	// The same training trials; the weak student's own gate adds its
	// validation on the cheap model, which the lab's gate would run on the
	// executor's.
	if own.EstimatedTokensByRole["cheap"] <= shared.EstimatedTokensByRole["cheap"] {
		t.Errorf("cheap model tokens: own skill %d, shared %d; want the own skill's validation on the cheap model",
			own.EstimatedTokensByRole["cheap"], shared.EstimatedTokensByRole["cheap"])
	}
	// Two skill lines of half the proposals each: each gate decides less
	// often, but both are counted.
	lines := planLines(own.Config().Labs[config.DefaultLab])
	if len(lines) != 2 || lines[0].student != nil || lines[1].student == nil || lines[1].student.ID != "weak" {
		t.Errorf("skill lines %+v: want the lab's, then weak's", lines)
	}
}

// A dollar budget refuses a row whose own model has no price, naming the
// row and the model; priced, the row runs under it.
func TestDollarBudgetChecksRowModels(t *testing.T) {
	tests := []struct {
		name, prices string
		wantErr      bool
	}{
		{"unpriced", "", true},
		{"priced", "price_input_per_mtok = 1.0\nprice_output_per_mtok = 2.0\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := "[[rows]]\nname = \"other\"\npreset = \"no_feedback\"\n[rows.models.executor]\nmodel = \"other/model\"\ncontext_tokens = 32768\n" + tc.prices
			mf, err := ParseMatrixFile([]byte(file), "m.toml")
			if err != nil {
				t.Fatal(err)
			}
			budget := 100.0
			_, err = BuildMatrixPlan(rundirTestConfig(t), PlanOptions{Rows: mf.Rows, Tasks: []string{"a"}, Iterations: 1, BudgetUSD: &budget})
			if tc.wantErr != (err != nil) || (err != nil && !strings.Contains(err.Error(), "row other's models.executor (other/model)")) {
				t.Errorf("error %v, want one naming row other's model: %v", err, tc.wantErr)
			}
		})
	}
}
