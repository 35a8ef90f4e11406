package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
)

// studentRewards gives each student's training trials a reward of its
// own, so two students of one lab behave differently: a diligent one that
// scores and a sloppy one that does not.
type studentRewards struct {
	*fakeTrials
	by map[string]float64
}

func (s studentRewards) Run(ctx context.Context, spec executor.TrialSpec) *executor.Trace {
	tr := s.fakeTrials.Run(ctx, spec)
	c, err := rundir.ParseCaller(spec.Caller)
	if v, ok := s.by[c.Student]; err == nil && ok && c.Kind == rundir.CallerExecutor && tr.Reward != nil {
		tr.Reward = &v
	}
	return tr
}

// routingLab is a lab of two students, each on its own model and with its
// own executor skill, under the given routing.
func newRoutingRun(t *testing.T, routing conditions.Routing, iterations int) *testRun {
	t.Helper()
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b", "c", "d"}, iterations, func(c *config.Config) {
		heteroLab(config.AssignRotate)(c)
		lab := c.Labs[config.DefaultLab]
		lab.Students.ByID = map[string]config.Student{"diligent": {OwnSkill: true}, "sloppy": {Model: "cheap", OwnSkill: true}}
		c.Labs[config.DefaultLab] = lab
		c.Experiment.AdvisorBufferMax = 2
		c.Experiment.CoevoInterval = 2
	})
	tr.run.Spec.Routing = routing
	tr.run.Trials = studentRewards{fakeTrials: tr.trials, by: map[string]float64{"diligent": 1, "sloppy": 0}}
	return tr
}

// routeEntries are the routed items a run's history holds.
func routeEntries(t *testing.T, dir string) []rundir.Entry {
	t.Helper()
	var out []rundir.Entry
	for _, e := range historyEntries(t, dir) {
		if e.Kind == rundir.EntryRoute {
			out = append(out, e)
		}
	}
	return out
}

func TestIsolatedRoutingPassesNothingBetweenStudents(t *testing.T) {
	tr := newRoutingRun(t, conditions.RoutingIsolated, 3)
	tr.execute(t)
	if got := routeEntries(t, tr.run.Dir.Path); len(got) != 0 {
		t.Errorf("isolated routing recorded %d routed items: %+v", len(got), got)
	}
	if n := len(tr.rec.ByKind(mediator.KindRoute)); n != 0 {
		t.Errorf("isolated routing made %d routing calls", n)
	}
	for _, q := range tr.rec.ByKind(mediator.KindAdvice) {
		if text := promptText(q); strings.Contains(text, "from student") {
			t.Errorf("a batch under isolated routing shows another student's item:\n%s", text)
		}
	}
}

func TestMediatedRoutingRecordsEachItemWithItsProvenance(t *testing.T) {
	tr := newRoutingRun(t, conditions.RoutingMediated, 3)
	tr.execute(t)
	routes := routeEntries(t, tr.run.Dir.Path)
	if len(routes) == 0 {
		t.Fatal("mediated routing between a diligent and a sloppy student recorded no routed item")
	}
	calls := map[string]bool{}
	for _, q := range tr.rec.ByKind(mediator.KindRoute) {
		calls[q.Caller] = true
	}
	toSloppy := 0
	for _, e := range routes {
		if e.From == "" || e.To == "" || e.From == e.To || e.TrialID == "" || e.TaskID == "" || e.Iteration == 0 || e.Reason == "" {
			t.Errorf("routed item %s lacks provenance: %+v", e.ID, e)
		}
		if e.Form != mediator.FormNote && e.Form != mediator.FormProposal {
			t.Errorf("routed item %s has form %q", e.ID, e.Form)
		}
		if !strings.Contains(e.TrialID, "@"+e.From) && !trialOfStudent(tr, e.TrialID, e.From) {
			t.Errorf("routed item %s names trial %s, which student %s did not run", e.ID, e.TrialID, e.From)
		}
		if caller := rundir.RouteCaller(e.To, e.Iteration).String(); !calls[caller] {
			t.Errorf("routed item %s has no routing call %s in the call log", e.ID, caller)
		}
		if e.To == "sloppy" {
			toSloppy++
		}
	}
	if toSloppy == 0 {
		t.Errorf("nothing of the diligent student reached the sloppy one: %+v", routes)
	}
	// The Mediator's budget holds per student and iteration.
	per := map[string]int{}
	for _, e := range routes {
		per[fmt.Sprintf("%s/%d", e.To, e.Iteration)]++
	}
	for k, n := range per {
		if n > config.DefaultRouteItems {
			t.Errorf("%s received %d items, over the budget of %d", k, n, config.DefaultRouteItems)
		}
	}
}

// trialOfStudent reports whether student ran the training trial id.
func trialOfStudent(tr *testRun, id, student string) bool {
	for _, s := range tr.trials.specs {
		if s.TrialID == id {
			c, err := rundir.ParseCaller(s.Caller)
			return err == nil && c.Student == student
		}
	}
	return false
}

func TestPooledRoutingHandsEveryBatchEveryStudentsProposals(t *testing.T) {
	tr := newRoutingRun(t, conditions.RoutingPooled, 3)
	tr.execute(t)
	if n := len(tr.rec.ByKind(mediator.KindRoute)); n != 0 {
		t.Errorf("pooled routing made %d routing calls; it passes everything on unchosen", n)
	}
	// Which students made proposals in the iterations each own batch drew on.
	proposers := map[string]bool{}
	for _, e := range historyEntries(t, tr.run.Dir.Path) {
		if e.Kind == rundir.EntryProposal {
			for _, s := range tr.trials.specs {
				if c, err := rundir.ParseCaller(s.Caller); err == nil && s.TrialID == e.TrialID && c.Kind == rundir.CallerExecutor {
					proposers[c.Student] = true
				}
			}
		}
	}
	if !proposers["diligent"] || !proposers["sloppy"] {
		t.Fatalf("proposals came from %v; the test needs both students proposing", proposers)
	}
	reviews := 0
	for _, q := range tr.rec.ByKind(mediator.KindAdvice) {
		c, err := rundir.ParseCaller(q.Caller)
		if err != nil || !strings.HasPrefix(c.Batch, "s") {
			continue
		}
		reviews++
		student := map[string]string{"s1": "diligent", "s2": "sloppy"}[c.Batch[:2]]
		other := map[string]string{"diligent": "sloppy", "sloppy": "diligent"}[student]
		text := promptText(q)
		if !strings.Contains(text, "from student "+other+" ") {
			t.Errorf("batch %s of student %s shows no proposal of student %s:\n%s", c.Batch, student, other, text)
		}
		if !strings.Contains(text, "it was proposed from") {
			t.Errorf("batch %s carries no feedback the proposals came from", c.Batch)
		}
	}
	if reviews < 2 {
		t.Errorf("%d reviews of own-skill batches; want both students' batches reviewed", reviews)
	}
	for _, e := range routeEntries(t, tr.run.Dir.Path) {
		if e.Form != mediator.FormPooled || e.From == e.To {
			t.Errorf("pooled item %s: form %q from %s to %s", e.ID, e.Form, e.From, e.To)
		}
	}
}

func TestRoutingNeedsStudentsWithTheirOwnSkill(t *testing.T) {
	tests := []struct {
		name    string
		own     bool
		routing conditions.Routing
		policy  conditions.Policy
		want    string
	}{
		{"shared skill, pooled", false, conditions.RoutingPooled, conditions.PolicyAll, "own_skill = true"},
		{"shared skill, mediated", false, conditions.RoutingMediated, conditions.PolicyAll, "own_skill = true"},
		{"own skill, no executor updates", true, conditions.RoutingMediated, conditions.Policy{Planner: true}, "needs executor skill updates"},
		{"shared skill, isolated", false, conditions.RoutingIsolated, conditions.PolicyAll, ""},
		{"own skill, mediated", true, conditions.RoutingMediated, conditions.PolicyAll, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, func(c *config.Config) {
				lab := c.Labs[config.DefaultLab]
				lab.Students = config.Students{ByID: map[string]config.Student{"x": {OwnSkill: tt.own}, "y": {}}}
				c.Labs[config.DefaultLab] = lab
			})
			_, err := BuildRunPlan(cfg, PlanOptions{Tasks: []string{"a"}, Condition: conditions.LearnedMediator, Policy: tt.policy,
				Routing: []conditions.Routing{tt.routing}, Offline: true})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("plan refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want one that says %q", err, tt.want)
			}
		})
	}
}

func TestMatrixCrossesRowsWithRouting(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		lab := c.Labs[config.DefaultLab]
		lab.Students = config.Students{ByID: map[string]config.Student{"x": {OwnSkill: true}, "y": {OwnSkill: true}}}
		c.Labs[config.DefaultLab] = lab
	})
	rows := []MatrixRow{{Name: "full", Condition: conditions.LearnedMediator, Policy: conditions.PolicyAll},
		{Name: "fixed", Condition: conditions.LearnedMediator, Policy: conditions.PolicyAll, Routing: conditions.RoutingPooled}}
	p, err := BuildMatrixPlan(cfg, PlanOptions{Tasks: []string{"a"}, Rows: rows, Seeds: []int64{1},
		Routing: []conditions.Routing{conditions.RoutingIsolated, conditions.RoutingMediated}, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.Rows {
		got = append(got, r.Name+"="+string(r.Routing))
	}
	want := "full-isolated=isolated full-mediated=mediated fixed=pooled"
	if strings.Join(got, " ") != want {
		t.Errorf("rows %v, want %s", got, want)
	}
	var b strings.Builder
	if err := p.WriteMatrixFile(&b); err != nil {
		t.Fatal(err)
	}
	mf, err := ParseMatrixFile([]byte(b.String()), "plan")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range mf.Rows {
		if r.Routing != p.Rows[i].Routing {
			t.Errorf("the plan file gives row %s routing %q, want %q", r.Name, r.Routing, p.Rows[i].Routing)
		}
	}
}

// Under every routing, each call that reviews, drafts or routes a
// student's proposals carries another student's items, and (from raw
// digests) the verifier's diagnostics, only where the visibility contract
// allows them.
func TestRoutingCallsCarryWhatTheContractAllows(t *testing.T) {
	consumers := map[string]conditions.Consumer{string(mediator.KindAdvice): conditions.ConsumerAdvisor,
		string(mediator.KindSkillDraft): conditions.ConsumerPlannerDraft, string(mediator.KindRoute): conditions.ConsumerRouter}
	for _, cond := range []conditions.Condition{conditions.FullTraces, conditions.LearnedMediator} {
		for _, routing := range conditions.Routings() {
			t.Run(string(cond)+"/"+string(routing), func(t *testing.T) {
				tr := newRoutingRun(t, routing, 3)
				tr.run.Spec.Condition = cond
				if cond == conditions.FullTraces {
					tr.run.Spec.Policy = conditions.Policy{Executor: true, Planner: true}
				}
				tr.run.Config.Experiment.VerifierFeedback = string(conditions.VerifierDiagnostics)
				tr.execute(t)
				s := tr.run.setting()
				crossed := map[conditions.Consumer]bool{}
				for _, q := range tr.rec.Requests() {
					c, ok := consumers[string(q.Kind)]
					if !ok {
						continue
					}
					text, allowed := promptText(q), s.Visible(c)
					if allowed.Empty() {
						t.Errorf("a %s call was made, which the contract never makes under %+v", c, s)
					}
					if strings.Contains(text, "from student ") {
						crossed[c] = true
						if !allowed.Has(conditions.EvidenceOtherStudents) && !allowed.Has(conditions.EvidenceRoutedItems) {
							t.Errorf("%s call %s carries another student's item:\n%s", c, q.Caller, text)
						}
					}
					// A Mediator report is its own writing and may quote what
					// it was shown, so the marker is traced through raw
					// digests only (full_traces).
					if cond == conditions.FullTraces && strings.Contains(text, "DIAG-") && !allowed.Has(conditions.EvidenceDiagnostics) {
						t.Errorf("%s call %s carries the verifier's diagnostics", c, q.Caller)
					}
				}
				if routing.Shares() && !crossed[conditions.ConsumerAdvisor] {
					t.Errorf("no Advisor review under %s routing showed another student's item", routing)
				}
			})
		}
	}
}

// The dry run prices the Mediator's routing calls: one per student with
// its own skill and iteration, under mediated routing only.
func TestPlanPricesTheRoutingCalls(t *testing.T) {
	cfg := testConfig(t, func(c *config.Config) {
		lab := c.Labs[config.DefaultLab]
		lab.Students = config.Students{ByID: map[string]config.Student{"x": {OwnSkill: true}, "y": {OwnSkill: true}}}
		c.Labs[config.DefaultLab] = lab
	})
	mediatorTokens := map[conditions.Routing]int64{}
	for _, r := range conditions.Routings() {
		p, err := BuildRunPlan(cfg, PlanOptions{Tasks: []string{"a", "b"}, Condition: conditions.LearnedMediator, Policy: conditions.PolicyAll,
			Routing: []conditions.Routing{r}, Iterations: 4, Offline: true})
		if err != nil {
			t.Fatal(err)
		}
		mediatorTokens[r] = p.EstimatedTokensByRole[conditions.RoleMediator]
	}
	if mediatorTokens[conditions.RoutingPooled] != mediatorTokens[conditions.RoutingIsolated] ||
		mediatorTokens[conditions.RoutingMediated] <= mediatorTokens[conditions.RoutingIsolated] {
		t.Errorf("Mediator tokens by routing %v: want more under mediated only", mediatorTokens)
	}
}

// Offline, with students whose models differ in diligence and every trial
// running the real lab agent in the in-memory world, mediated routing
// passes what the diligent student's trials hold to the sloppy one.
func TestMediatedRoutingReachesTheSloppyStudentOffline(t *testing.T) {
	tasks := memTasks(t, 3)
	one, zero := 1.0, 0.0
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, taskIDs(tasks), 2, func(c *config.Config) {
		diligent, sloppy := c.Models[conditions.RoleExecutor], c.Models[conditions.RoleExecutor]
		diligent.OfflineDiligence = &one
		sloppy.Model, sloppy.OfflineDiligence = "sloppy/model", &zero
		c.Models[conditions.RoleExecutor], c.Models["sloppy"] = diligent, sloppy
		lab := c.Labs[config.DefaultLab]
		lab.Assignment = config.AssignAll
		lab.Students = config.Students{ByID: map[string]config.Student{"diligent": {OwnSkill: true}, "sloppy": {Model: "sloppy", OwnSkill: true}}}
		c.Labs[config.DefaultLab] = lab
		// No batch fills: the test is about what routing passes on.
		c.Experiment.AdvisorBufferMax = 100
	})
	tr.run.Tasks, tr.run.Spec.Routing = tasks, conditions.RoutingMediated
	tr.run.Clients.byModel = map[string]*llm.Client{"sloppy": {Provider: tr.rec, Ledger: tr.run.Ledger, Role: string(conditions.RoleExecutor), Model: "sloppy/model"}}
	tr.run.Trials = newTrialRunner(memWorld{}, tr.run.Config)
	newAgent, err := agentFactory(tr.run.Config, AgentLab, config.DefaultLab, tr.run.Clients)
	if err != nil {
		t.Fatal(err)
	}
	tr.run.NewAgent = newAgent
	tr.execute(t)
	rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	sum := map[string]float64{}
	for _, r := range rows {
		if r.Reward != nil {
			sum[r.Student] += *r.Reward
		}
	}
	if sum["diligent"] <= sum["sloppy"] {
		t.Fatalf("rewards by student %v: the profiles should make the diligent student score more", sum)
	}
	reached := 0
	for _, e := range routeEntries(t, tr.run.Dir.Path) {
		if e.From == "diligent" && e.To == "sloppy" {
			reached++
		}
	}
	if reached == 0 {
		t.Errorf("nothing of the diligent student's evidence was routed to the sloppy one: %+v", routeEntries(t, tr.run.Dir.Path))
	}
}
