package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
)

func rundirTestConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Load("")
	if err != nil {
		t.Fatalf("load default config: %v", err)
	}
	return cfg
}

// rundirTestSpec is a run directory to resume plans from.
func rundirTestSpec(cfg *config.Config) rundir.Spec {
	return rundir.Spec{
		Manifest: rundir.Manifest{Kind: rundir.KindRun, Condition: "learned_mediator", Policy: "all", Lab: "default",
			Seed: 42, Tasks: []string{"a", "b"}, Iterations: 3},
		Config: cfg,
		Meta:   config.RunMeta{Args: []string{"run", "--tasks=a,b"}},
		Now:    time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

func TestBuildRunPlanDefaults(t *testing.T) {
	cfg := rundirTestConfig(t)
	p, err := BuildRunPlan(cfg, PlanOptions{Tasks: []string{"a", "b"}, Policy: conditions.PolicyAll, OutDir: "out"})
	if err != nil {
		t.Fatal(err)
	}
	want := RowSpec{Name: "learned_mediator", Condition: conditions.LearnedMediator, Policy: conditions.PolicyAll, Lab: config.DefaultLab, Seed: cfg.Experiment.Seed, Routing: conditions.RoutingIsolated}
	if len(p.Rows) != 1 || !reflect.DeepEqual(p.Rows[0], want) {
		t.Errorf("rows = %+v, want [%+v]", p.Rows, want)
	}
	if p.Kind != rundir.KindRun || p.Iterations != cfg.Experiment.Iterations || p.Agent != AgentLab ||
		p.Concurrency != cfg.ExecutorRuntime.Concurrency || p.OutDir != "out" {
		t.Errorf("plan = %+v", p)
	}
	if p.Trials != 2*cfg.Experiment.Iterations {
		t.Errorf("trials = %d, want tasks x iterations = %d", p.Trials, 2*cfg.Experiment.Iterations)
	}
	if !slices.Equal(p.Images, []string{"a", "b"}) {
		t.Errorf("images = %v", p.Images)
	}
	if p.EstimatedTokens <= 0 || !p.CostKnown || p.EstimatedCostUSD <= 0 {
		t.Errorf("estimate: tokens %d, cost %v known %v", p.EstimatedTokens, p.EstimatedCostUSD, p.CostKnown)
	}
	for _, role := range []conditions.Role{conditions.RolePlanner, conditions.RoleExecutor, conditions.RoleMediator} {
		if p.Models[role] == "" {
			t.Errorf("models lacks %s: %v", role, p.Models)
		}
	}
}

// -j above max_containers is allowed (trials wait for a container) but the
// plan says how many really run at once.
func TestBuildRunPlanNotesTheContainerCap(t *testing.T) {
	cfg := rundirTestConfig(t)
	cfg.ExecutorRuntime.MaxContainers = 4
	tests := []struct {
		jobs int
		note bool
	}{{4, false}, {2, false}, {16, true}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.jobs), func(t *testing.T) {
			p, err := BuildRunPlan(cfg, PlanOptions{Tasks: []string{"a"}, Policy: conditions.PolicyAll, OutDir: "out", Concurrency: tt.jobs})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(strings.Join(p.Notes, "\n"), "at most 4 trials run at once")
			if got != tt.note {
				t.Errorf("-j %d: notes %q, want the container-cap note %v", tt.jobs, p.Notes, tt.note)
			}
		})
	}
}

func TestPlanWarnsOfEmptySharedNotes(t *testing.T) {
	tests := []struct {
		name      string
		condition conditions.Condition
		notes     string
		agent     string
		warn      bool
	}{
		{"shared_notes without notes", conditions.SharedNotes, "", "", true},
		{"blank notes count as none", conditions.SharedNotes, " \n ", "", true},
		{"shared_notes with notes", conditions.SharedNotes, "Check outputs first.", "", false},
		{"another condition", conditions.NoFeedback, "", "", false},
		{"an agent without a Planner", conditions.SharedNotes, "", AgentOracle, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := rundirTestConfig(t)
			cfg.Experiment.SharedNotes = tt.notes
			p, err := BuildRunPlan(cfg, PlanOptions{Tasks: []string{"a"}, Condition: tt.condition, Policy: conditions.PolicyNone,
				Agent: tt.agent, OutDir: "out"})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(strings.Join(p.Warnings, "\n"), "[experiment] shared_notes is empty")
			if got != tt.warn {
				t.Errorf("warnings %q, want the empty shared_notes warning %v", p.Warnings, tt.warn)
			}
		})
	}
}

func TestBuildRunPlanRefuses(t *testing.T) {
	cfg := rundirTestConfig(t)
	base := PlanOptions{Tasks: []string{"a"}, Condition: conditions.LearnedMediator, Policy: conditions.PolicyAll}
	tests := []struct {
		name   string
		mutate func(*PlanOptions)
		want   string
	}{
		{"design rule", func(o *PlanOptions) { o.Condition = conditions.NoFeedback }, string(conditions.RuleNoFeedbackNoUpdates)},
		{"no tasks", func(o *PlanOptions) { o.Tasks = nil }, "--tasks"},
		{"duplicate task", func(o *PlanOptions) { o.Tasks = []string{"a", "a"} }, "listed twice"},
		{"task path", func(o *PlanOptions) { o.Tasks = []string{"../a"} }, "not a plain name"},
		{"unknown agent", func(o *PlanOptions) { o.Agent = "human" }, "unknown agent"},
		{"unknown lab", func(o *PlanOptions) { o.Lab = "nolab" }, `unknown lab "nolab"`},
		{"unknown preset", func(o *PlanOptions) { o.Preset = "nope" }, "unknown preset"},
		{"negative iterations", func(o *PlanOptions) { o.Iterations = -1 }, "iterations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			tt.mutate(&o)
			_, err := BuildRunPlan(cfg, o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestBuildRunPlanDesignRuleIsTyped(t *testing.T) {
	_, err := BuildRunPlan(rundirTestConfig(t), PlanOptions{Tasks: []string{"a"}, Condition: conditions.StaticMediator, Policy: conditions.Policy{Mediator: true}})
	var re *conditions.RuleError
	if !errors.As(err, &re) || re.Rule != conditions.RuleStaticMediatorNeverEvolve {
		t.Errorf("err = %v, want the static_mediator rule", err)
	}
}

func TestDollarBudgetNeedsPrices(t *testing.T) {
	unpriced := func() *config.Config {
		cfg := rundirTestConfig(t)
		m := cfg.Models[conditions.RoleMediator]
		m.PriceInputPerMTok = nil
		cfg.Models[conditions.RoleMediator] = m
		return cfg
	}
	opts := PlanOptions{Tasks: []string{"a"}, Condition: conditions.LearnedMediator, Policy: conditions.PolicyAll}

	cfg := unpriced()
	cfg.Budget.MaxUSD = 10
	_, err := BuildRunPlan(cfg, opts)
	if err == nil || !strings.Contains(err.Error(), "models.mediator") || !strings.Contains(err.Error(), "price") {
		t.Errorf("dollar budget with an unpriced model: err = %v, want it to name models.mediator and its price", err)
	}

	p, err := BuildRunPlan(unpriced(), opts)
	if err != nil {
		t.Fatalf("no dollar budget: %v", err)
	}
	if p.CostKnown {
		t.Error("cost reported as known with an unpriced model in use")
	}

	cfg = unpriced()
	cfg.Budget.MaxTokens = 1000
	if _, err := BuildRunPlan(cfg, opts); err != nil {
		t.Errorf("token budget needs no prices: %v", err)
	}

	cfg = unpriced()
	cfg.Budget.MaxUSD = 10
	cfg.SetOffline()
	p, err = BuildRunPlan(cfg, opts)
	if err != nil {
		t.Fatalf("offline models cost nothing: %v", err)
	}
	if p.EstimatedCostUSD != 0 || !p.CostKnown {
		t.Errorf("offline cost = %v (known %v), want 0", p.EstimatedCostUSD, p.CostKnown)
	}
}

func TestEstimateFollowsTheDesign(t *testing.T) {
	cfg := rundirTestConfig(t)
	plan := func(c conditions.Condition, pol conditions.Policy, agent string) *Plan {
		t.Helper()
		p, err := BuildRunPlan(cfg, PlanOptions{Tasks: []string{"a"}, Condition: c, Policy: pol, Agent: agent, Iterations: 10})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, ok := plan(conditions.NoFeedback, conditions.PolicyNone, AgentLab).Models[conditions.RoleMediator]; ok {
		t.Error("no_feedback plan counts Mediator calls")
	}
	if _, ok := plan(conditions.StaticMediator, conditions.PolicyNone, AgentLab).Models[conditions.RoleMediator]; !ok {
		t.Error("static_mediator plan counts no Mediator calls")
	}
	if _, ok := plan(conditions.FullTraces, conditions.PolicyNone, AgentLab).Models[conditions.RoleCompactor]; !ok {
		t.Error("full_traces plan counts no compactor calls")
	}
	if _, ok := plan(conditions.NoFeedback, conditions.PolicyNone, AgentNop).Models[conditions.RoleExecutor]; ok {
		t.Error("nop agent counts Executor calls")
	}
	lab := plan(conditions.NoFeedback, conditions.PolicyNone, AgentLab)
	oracle := plan(conditions.NoFeedback, conditions.PolicyNone, AgentOracle)
	if oracle.EstimatedTokens >= lab.EstimatedTokens {
		t.Errorf("oracle estimate %d not below the lab's %d", oracle.EstimatedTokens, lab.EstimatedTokens)
	}
	// The oracle gets no plan: a no_feedback row of it calls no model.
	if oracle.EstimatedTokens != 0 || len(oracle.Models) != 0 {
		t.Errorf("oracle no_feedback plan estimates %d tokens for %v, want none", oracle.EstimatedTokens, oracle.Models)
	}
}

func TestBuildMatrixPlanBaseline(t *testing.T) {
	cfg := rundirTestConfig(t)
	p, err := BuildMatrixPlan(cfg, PlanOptions{Tasks: []string{"a", "b"}, Iterations: 2})
	if err != nil {
		t.Fatal(err)
	}
	presets := conditions.Presets()
	if len(p.Rows) != len(presets) || len(p.Rows) != 6 {
		t.Fatalf("rows = %d, want the six baseline presets", len(p.Rows))
	}
	for i, pr := range presets {
		r := p.Rows[i]
		if r.Name != pr.Name || r.Preset != pr.Name || r.Condition != pr.Condition || r.Policy != pr.Policy || r.Seed != cfg.Experiment.Seed {
			t.Errorf("row %d = %+v, want preset %+v", i, r, pr)
		}
	}
	if p.Name != "baseline" || p.Kind != rundir.KindMatrix || p.Trials != 6*2*2 {
		t.Errorf("plan %s (%s) with %d trials", p.Name, p.Kind, p.Trials)
	}
}

func TestBuildMatrixPlanSeeds(t *testing.T) {
	cfg := rundirTestConfig(t)
	rows := []MatrixRow{
		{Name: "a", Preset: "no_feedback", Condition: conditions.NoFeedback},
		{Name: "b", Condition: conditions.LearnedMediator, Policy: conditions.Policy{Planner: true}, Lab: "hierarchical", Seeds: []int64{9}},
	}
	p, err := BuildMatrixPlan(cfg, PlanOptions{Name: "abl", Tasks: []string{"t"}, Rows: rows, Seeds: []int64{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.Rows {
		got = append(got, r.Name+"/"+r.Lab)
	}
	want := []string{"a-seed1/default", "a-seed2/default", "b/hierarchical"}
	if !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	if !slices.Equal(p.Seeds, []int64{1, 2, 9}) {
		t.Errorf("seeds = %v", p.Seeds)
	}
	if _, ok := p.Models[conditions.RoleCode]; !ok {
		t.Error("hierarchical row counts no code subagent calls")
	}
}

func TestBuildMatrixPlanRefusesBadRow(t *testing.T) {
	cfg := rundirTestConfig(t)
	tests := []struct {
		name string
		rows []MatrixRow
		want []string
	}{
		{"design rule", []MatrixRow{{Name: "bad", Condition: conditions.SharedNotes, Policy: conditions.Policy{Executor: true}}},
			[]string{`"bad"`, string(conditions.RuleSharedNotesNoExecutor)}},
		{"unknown lab", []MatrixRow{{Name: "r", Condition: conditions.NoFeedback, Lab: "nolab"}}, []string{`"r"`, "nolab"}},
		{"duplicate row", []MatrixRow{{Name: "r", Condition: conditions.NoFeedback}, {Name: "r", Condition: conditions.FullTraces}}, []string{`"r"`, "twice"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := BuildMatrixPlan(cfg, PlanOptions{Tasks: []string{"t"}, Rows: tt.rows})
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to mention %s", err, w)
				}
			}
		})
	}
}

func TestResumeRunPlan(t *testing.T) {
	cfg := rundirTestConfig(t)
	spec := rundirTestSpec(cfg)
	spec.Manifest.Condition, spec.Manifest.Policy, spec.Manifest.Preset = "static_mediator", "none", "static_mediator_same_task"
	spec.Manifest.Iterations = 5
	d, err := rundir.Create(t.TempDir(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UpdateManifest(func(m *rundir.Manifest) { m.CompletedIterations = 3; m.Status = rundir.StatusInterrupted }); err != nil {
		t.Fatal(err)
	}
	p, err := BuildRunPlan(cfg, PlanOptions{Resume: d.Path})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Rows[0]
	if r.Condition != conditions.StaticMediator || !r.Policy.IsNone() || r.Preset != "static_mediator_same_task" || r.Seed != 42 {
		t.Errorf("resumed row = %+v, want the run's own design", r)
	}
	if !slices.Equal(p.Tasks, []string{"a", "b"}) || p.Iterations != 5 || p.OutDir != d.Path {
		t.Errorf("resumed plan tasks %v, iterations %d, out %s", p.Tasks, p.Iterations, p.OutDir)
	}
	if len(p.ResumeSkips) != 1 || !strings.Contains(p.ResumeSkips[0], "resumes at iteration 4") {
		t.Errorf("resume skips = %q", p.ResumeSkips)
	}

	if _, err := BuildMatrixPlan(cfg, PlanOptions{Resume: d.Path}); err == nil || !strings.Contains(err.Error(), "harness run --resume") {
		t.Errorf("matrix resume of a run directory: err = %v", err)
	}
}

func TestResumeMatrixPlan(t *testing.T) {
	cfg := rundirTestConfig(t)
	p, err := BuildMatrixPlan(cfg, PlanOptions{Tasks: []string{"a"}, Iterations: 4, Seeds: []int64{5}})
	if err != nil {
		t.Fatal(err)
	}
	md, err := rundir.Create(t.TempDir(), p.MatrixDirSpec(cfg, []string{"matrix"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := md.WriteFileFunc(rundir.MatrixPlanFile, p.WriteMatrixFile); err != nil {
		t.Fatal(err)
	}
	done, err := rundir.Create(md.Path, p.RunDirSpecFor(p.Rows[0], cfg, nil, md.ID))
	if err != nil {
		t.Fatal(err)
	}
	done.UpdateManifest(func(m *rundir.Manifest) { m.CompletedIterations = 4; m.Status = rundir.StatusCompleted })
	half, err := rundir.Create(md.Path, p.RunDirSpecFor(p.Rows[1], cfg, nil, md.ID))
	if err != nil {
		t.Fatal(err)
	}
	half.UpdateManifest(func(m *rundir.Manifest) { m.CompletedIterations = 2 })

	rp, err := BuildMatrixPlan(cfg, PlanOptions{Resume: md.Path})
	if err != nil {
		t.Fatal(err)
	}
	if len(rp.Rows) != 6 || !reflect.DeepEqual(rp.Rows[0], p.Rows[0]) || !reflect.DeepEqual(rp.Rows[5], p.Rows[5]) || rp.Iterations != 4 {
		t.Errorf("resumed rows = %+v", rp.Rows)
	}
	want := []string{
		"row no_feedback: completed (4 iterations); skipped",
		"row full_trace_same_task: iterations 1-2 done; resumes at iteration 3",
	}
	if !slices.Equal(rp.ResumeSkips, want) {
		t.Errorf("resume skips = %q, want %q", rp.ResumeSkips, want)
	}
	// One task: 0 + 2 + 4 x 4 iterations remain of 6 x 4.
	if rp.Trials != 24 || rp.RemainingTrials == nil || *rp.RemainingTrials != 18 {
		t.Errorf("trials %d, remaining %v; want 24 and 18", rp.Trials, rp.RemainingTrials)
	}
	if p.RemainingTrials != nil || rp.EstimatedTokens >= p.EstimatedTokens {
		t.Errorf("estimates: fresh %d tokens (remaining %v), resumed %d; want the resume to estimate only what remains",
			p.EstimatedTokens, p.RemainingTrials, rp.EstimatedTokens)
	}
}

func TestWriteMatrixFileRoundTrip(t *testing.T) {
	cfg := rundirTestConfig(t)
	rows := []MatrixRow{
		{Name: "full", Preset: "full_coevolution", Condition: conditions.LearnedMediator, Policy: conditions.PolicyAll},
		{Name: "mine", Condition: conditions.LearnedMediator, Policy: conditions.Policy{Planner: true, Mediator: true}, Lab: "hierarchical"},
	}
	p, err := BuildMatrixPlan(cfg, PlanOptions{Name: "abl", Tasks: []string{"t"}, Rows: rows, Seeds: []int64{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.WriteMatrixFile(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "matrix.toml")
	os.WriteFile(path, buf.Bytes(), 0o644)
	mf, err := LoadMatrixFile(path)
	if err != nil {
		t.Fatalf("written matrix file does not parse: %v\n%s", err, buf.String())
	}
	again, err := BuildMatrixPlan(cfg, PlanOptions{Name: mf.Name, Tasks: []string{"t"}, Rows: mf.Rows})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Rows, p.Rows) || again.Name != "abl" {
		t.Errorf("round trip rows = %+v\nwant %+v", again.Rows, p.Rows)
	}
}

// Reflections fall on multiples of coevo_interval; a resume counts only the
// multiples still ahead, not a share of them.
func TestRowRequestsCountRemainingReflections(t *testing.T) {
	cfg := rundirTestConfig(t)
	cfg.Experiment.CoevoInterval = 2
	lab, err := cfg.Lab(config.DefaultLab)
	if err != nil {
		t.Fatal(err)
	}
	row := RowSpec{Name: "p", Condition: conditions.NoFeedback, Policy: conditions.Policy{Planner: true}, Lab: config.DefaultLab}
	tests := []struct{ done, iterations, want int }{
		{0, 4, 2}, {1, 4, 2}, {2, 4, 1}, {3, 4, 1}, {4, 4, 0}, {5, 4, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d of %d", tt.done, tt.iterations), func(t *testing.T) {
			m := requestModel{cfg: cfg, lab: lab, agent: AgentLab, offline: true, skill: map[conditions.Role]float64{}}
			tokens := map[conditions.Role]roleTokens{}
			rowRequests(tokens, m, row, 1, max(tt.iterations-tt.done, 0), tt.done)
			if got, per := tokens[conditions.RoleReflector].out, kindReflect.Output; got != float64(tt.want)*per {
				t.Errorf("reflector output tokens = %v, want %d calls of %v", got, tt.want, per)
			}
		})
	}
}

// The dry run says where the gate finds its validation tasks: the split,
// the pool, or the row's tasks apart from the batch's; a plan in which no
// row can propose an executor edit says nothing.
func TestBuildRunPlanNotesTheValidationSource(t *testing.T) {
	tasks := []string{"a", "b", "c", "d"}
	tests := []struct {
		name   string
		opts   PlanOptions
		pool   []string
		want   string
		absent bool
	}{
		{"split", PlanOptions{Split: SplitOptions{Spec: "2:1:1"}}, nil, "on the validation split (1 tasks)", false},
		{"pool", PlanOptions{}, []string{"p1", "p2"}, "[validation] pool tasks (2)", false},
		{"default", PlanOptions{}, nil, "the row's tasks that contributed no proposal to its batch", false},
		{"no executor edits", PlanOptions{Policy: conditions.PolicyNone}, nil, "the gate validates", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := rundirTestConfig(t)
			cfg.Validation.Pool = tt.pool
			o := tt.opts
			o.Tasks, o.Condition, o.OutDir = tasks, conditions.LearnedMediator, "out"
			if o.Policy == (conditions.Policy{}) && tt.name != "no executor edits" {
				o.Policy = conditions.PolicyAll
			}
			p, err := BuildRunPlan(cfg, o)
			if err != nil {
				t.Fatal(err)
			}
			notes := strings.Join(p.Notes, "\n")
			if got := strings.Contains(notes, tt.want); got == tt.absent {
				t.Errorf("notes %q: contains %q = %v, want %v", notes, tt.want, got, !tt.absent)
			}
		})
	}
}
