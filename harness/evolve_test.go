package harness

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/mediator"
)

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	var out []T
	err := durable.ReadLog(path, func(line []byte) error {
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

func TestFullCoevolutionGatesAndReflects(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b", "c"}, 8, func(c *config.Config) {
		c.Experiment.AdvisorBufferMax = 3
		c.Experiment.CoevoInterval = 2
	})
	tr.execute(t)
	dir := tr.run.Dir.Path
	rejected := readJSONL[rejection](t, filepath.Join(dir, rundir.RejectedFile))
	updates := readJSONL[Provenance](t, filepath.Join(dir, rundir.SkillUpdatesFile))
	reflections := readJSONL[reflectionRecord](t, filepath.Join(dir, rundir.ReflectionsFile))
	adopted := 0
	for _, u := range updates {
		if u.Flow == "advisor_gate" {
			adopted++
			if u.OldHash == u.NewHash || u.Rule == "" || len(u.ProposalIDs) == 0 || u.Evidence == "" {
				t.Errorf("adopted update lacks provenance: %+v", u)
			}
			for _, snap := range []string{u.OldSnapshot, u.NewSnapshot} {
				if _, err := os.Stat(filepath.Join(dir, snap)); err != nil {
					t.Errorf("snapshot %s missing: %v", snap, err)
				}
			}
		}
	}
	if adopted == 0 {
		t.Error("no executor-skill candidate was adopted")
	}
	if len(rejected) == 0 {
		t.Error("nothing was rejected")
	}
	t.Logf("adopted %d, rejected %d, reflections %d", adopted, len(rejected), len(reflections))
	for _, r := range rejected {
		t.Logf("rejected %s %s: %s", r.Type, r.BatchID, r.Reason)
	}
	its := map[int][]string{}
	for _, r := range reflections {
		its[r.Iteration] = append(its[r.Iteration], r.Role)
	}
	for _, it := range []int{2, 4, 6, 8} {
		if len(its[it]) != 2 {
			t.Errorf("iteration %d: reflections for %v, want planner and mediator", it, its[it])
		}
	}
	for it := range its {
		if it%2 != 0 {
			t.Errorf("reflection at iteration %d, off the coevo_interval", it)
		}
	}
	assertUpdatesInMetrics(t, dir, updates)
	assertDecisionsCarryErrorRates(t, dir)
}

// TestPolicyLimitsWhatChanges runs every preset and compares the skill
// hashes at the start and the end of the run.
func TestPolicyLimitsWhatChanges(t *testing.T) {
	for _, p := range conditions.Presets() {
		t.Run(p.Name, func(t *testing.T) {
			tr := newTestRun(t, p.Condition, p.Policy, []string{"a", "b", "c"}, 6, func(c *config.Config) {
				c.Experiment.AdvisorBufferMax = 2
				c.Experiment.CoevoInterval = 2
			})
			before, err := tr.runStore().Hashes()
			if err != nil {
				t.Fatal(err)
			}
			tr.execute(t)
			after, err := tr.runStore().Hashes()
			if err != nil {
				t.Fatal(err)
			}
			for _, role := range conditions.SkillRoles() {
				changed := before[role] != after[role]
				if changed && !p.Policy.Allows(role) {
					t.Errorf("%s skill changed under policy %s", role, p.Policy)
				}
			}
			if p.Condition == conditions.StaticMediator && before["mediator"] != after["mediator"] {
				t.Error("static_mediator changed the mediator skill")
			}
		})
	}
}

func TestCoevolutionSpendingIsSpreadExactly(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b", "c"}, 4, func(c *config.Config) {
		c.Experiment.AdvisorBufferMax = 3
		c.Experiment.CoevoInterval = 2
	})
	tr.execute(t)
	rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	var inRows int64
	for _, r := range rows {
		inRows += r.CoevoInputTokens + r.CoevoOutputTokens
	}
	var inLedger int64
	for caller, u := range tr.run.Ledger.ByCaller() {
		if len(caller) > 6 && caller[:6] == "coevo/" {
			inLedger += u.Tokens()
		}
	}
	if inLedger == 0 || inRows != inLedger {
		t.Errorf("co-evolution tokens in metric rows %d, in the ledger %d", inRows, inLedger)
	}
	var all int64
	for _, r := range rows {
		all += r.PlannerInputTokens + r.PlannerOutputTokens + r.ExecutorInputTokens + r.ExecutorOutputTokens +
			r.MediatorInputTokens + r.MediatorOutputTokens + r.CompactorInputTokens + r.CompactorOutputTokens +
			r.CoevoInputTokens + r.CoevoOutputTokens
	}
	if total := tr.run.Ledger.Total().Tokens(); all != total {
		t.Errorf("metric rows account for %d tokens, the ledger for %d", all, total)
	}
}

// assertUpdatesInMetrics checks that the updates table holds every
// committed skill update exactly once, under the iteration that committed
// it, and nothing else.
func assertUpdatesInMetrics(t *testing.T, dir string, updates []Provenance) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, rundir.MetricsDir, rundir.UpdatesDir, rundir.UpdatesPartPattern))
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]int{}
	for _, f := range files {
		rows, err := rundir.ReadUpdatesFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if it, _ := rundir.ParseUpdatesPart(filepath.Base(f)); int(r.Iteration) != it {
				t.Errorf("%s holds update %s of iteration %d", filepath.Base(f), r.ProvenanceID, r.Iteration)
			}
			if r.RunID == "" || r.Row == "" {
				t.Errorf("update %s: run id %q, row %q", r.ProvenanceID, r.RunID, r.Row)
			}
			recorded[r.ProvenanceID]++
		}
	}
	for _, u := range updates {
		if recorded[u.ID] != 1 {
			t.Errorf("skill update %s is recorded %d times in the updates table, want once", u.ID, recorded[u.ID])
		}
		delete(recorded, u.ID)
	}
	for id := range recorded {
		t.Errorf("the updates table holds %s, which is no committed update", id)
	}
	if len(updates) == 0 {
		t.Error("no committed skill updates to check")
	}
}

func TestValidationTasksPreferCompatibleHeldOutTasks(t *testing.T) {
	task := func(id, category string, tags ...string) *benchmarks.Task {
		var tt []any
		for _, s := range tags {
			tt = append(tt, s)
		}
		return &benchmarks.Task{ID: id, Config: benchmarks.TaskConfig{Metadata: map[string]any{"category": category, "tags": tt}}}
	}
	runTasks := []*benchmarks.Task{task("a", "build", "c"), task("b", "text", "parsing"), task("c", "science")}
	pool := []*benchmarks.Task{
		task("a", "build"),               // a contributing task: never used
		task("p1", "build"),              // same category as a
		task("p2", "other", "parsing"),   // shares a tag with b
		task("p3", "other", "unrelated"), // compatible with nothing
	}
	batch := []mediator.Proposal{{TaskID: "a"}, {TaskID: "b"}, {TaskID: "a"}}
	tests := []struct {
		name     string
		pool     []*benchmarks.Task
		poolSize int
		want     []string
	}{
		{"no pool: the row's tasks apart from the batch's", nil, 0, []string{"c"}},
		{"compatible held-out tasks only", pool, 0, []string{"p1", "p2"}},
		{"pool_size samples", pool, 1, nil},
		{"no compatible pool task: the row's tasks apart from the batch's", []*benchmarks.Task{task("p3", "other", "unrelated")}, 0, []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a"}, 1, func(c *config.Config) {
				c.Validation.PoolSize = tt.poolSize
				c.Validation.MinTagOverlap = 1
			})
			tr.run.Tasks = runTasks
			tr.run.ValidationPool = tt.pool
			var got []string
			picked, source := tr.run.validationTasks("b001", batch)
			for _, vt := range picked {
				got = append(got, vt.ID)
			}
			if source == "" {
				t.Error("the task source is not recorded")
			}
			if tt.want == nil {
				if len(got) != tt.poolSize || (got[0] != "p1" && got[0] != "p2") {
					t.Errorf("got %v, want %d of the compatible tasks", got, tt.poolSize)
				}
				return
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// Without a split or a pool, a candidate is validated on the row's tasks
// that contributed no proposal, compatible ones first; the batch's own
// tasks are used only when every task contributed.
func TestValidationStaysApartFromTheProposalsTasks(t *testing.T) {
	task := func(id, category string) *benchmarks.Task {
		return &benchmarks.Task{ID: id, Config: benchmarks.TaskConfig{Metadata: map[string]any{"category": category}}}
	}
	tests := []struct {
		name       string
		poolSize   int
		batch      []string
		want       []string
		wantSource string
	}{
		{"every other task", 0, []string{"a"}, []string{"b", "c", "d"}, "row tasks apart from the batch's"},
		{"compatible first", 1, []string{"a"}, []string{"c"}, "row tasks apart from the batch's"},
		{"every task contributed", 0, []string{"a", "b", "c", "d"}, []string{"a", "b", "c", "d"},
			"batch tasks (every task of the row contributed a proposal)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a"}, 1, func(c *config.Config) {
				c.Validation.PoolSize = tt.poolSize
			})
			tr.run.Tasks = []*benchmarks.Task{task("a", "build"), task("b", "text"), task("c", "build"), task("d", "text")}
			var batch []mediator.Proposal
			for _, id := range tt.batch {
				batch = append(batch, mediator.Proposal{TaskID: id})
			}
			picked, source := tr.run.validationTasks("b001", batch)
			var got []string
			for _, vt := range picked {
				got = append(got, vt.ID)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") || source != tt.wantSource {
				t.Errorf("got %v from %q, want %v from %q", got, source, tt.want, tt.wantSource)
			}
		})
	}
}

// With a validation split, candidates are validated on it only: tasks
// compatible with the batch first, then the rest, up to pool_size.
func TestValidationSplitIsTheOnlyValidationSource(t *testing.T) {
	task := func(id, category string) *benchmarks.Task {
		return &benchmarks.Task{ID: id, Config: benchmarks.TaskConfig{Metadata: map[string]any{"category": category}}}
	}
	split := []*benchmarks.Task{task("v1", "other"), task("v2", "build"), task("v3", "other"), task("v4", "build")}
	batch := []mediator.Proposal{{TaskID: "a"}}
	tests := []struct {
		name     string
		poolSize int
		want     []string
	}{
		{"every split task", 0, []string{"v1", "v2", "v3", "v4"}},
		{"compatible ones first", 2, []string{"v2", "v4"}},
		{"then the rest", 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a"}, 1, func(c *config.Config) {
				c.Validation.PoolSize = tt.poolSize
			})
			tr.run.Tasks = []*benchmarks.Task{task("a", "build")}
			tr.run.ValidateSplit = split
			tr.run.ValidationPool = []*benchmarks.Task{task("p", "build")} // never used beside a split
			picked, source := tr.run.validationTasks("b001", batch)
			var got []string
			for _, vt := range picked {
				got = append(got, vt.ID)
			}
			if source != "validation split" {
				t.Errorf("source %q", source)
			}
			if tt.want == nil {
				if len(got) != 3 || !slices.Contains(got, "v2") || !slices.Contains(got, "v4") {
					t.Errorf("got %v, want both compatible tasks and one other", got)
				}
				return
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCompatibleTasks(t *testing.T) {
	task := func(category string, tags ...string) *benchmarks.Task {
		md := map[string]any{}
		if category != "" {
			md["category"] = category
		}
		var raw []any
		for _, tag := range tags {
			raw = append(raw, tag)
		}
		md["tags"] = raw
		return &benchmarks.Task{Config: benchmarks.TaskConfig{Metadata: md}}
	}
	tests := []struct {
		name       string
		a, b       *benchmarks.Task
		minOverlap int
		want       bool
	}{
		{"same category", task("text", "x"), task("text", "y"), 2, true},
		{"enough shared tags", task("", "x", "y", "z"), task("", "y", "z"), 2, true},
		{"too few shared tags", task("", "x", "y"), task("", "y", "w"), 2, false},
		{"a tag listed twice counts once", task("", "x", "x"), task("", "x"), 2, false},
		{"tag matching off", task("", "x"), task("", "x"), 0, false},
		{"no category is no match", task(""), task(""), 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := compatible(tt.a, tt.b, tt.minOverlap); got != tt.want {
				t.Errorf("compatible = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPairEntryShowsWithheldReports(t *testing.T) {
	r := 0.5
	tests := []struct {
		name string
		e    rundir.Entry
		want string
	}{
		{"a report", rundir.Entry{ID: "x", Content: "check outputs", Reward: &r}, "check outputs"},
		{"a withheld report", rundir.Entry{ID: "x", Withheld: true, Reward: &r}, withheldNote},
		{"withheld with text kept", rundir.Entry{ID: "x", Withheld: true, Content: "draft", Reward: &r}, withheldNote + "\ndraft"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pairEntry(tt.e)
			if got.Content != tt.want || got.Reward != r || got.ID != "x" {
				t.Errorf("pairEntry = %+v, want content %q and reward %v", got, tt.want, r)
			}
		})
	}
}

// Each batch draws its own validation sample from a large pool, the same
// one every time for the same batch.
func TestValidationPoolSampleIsPerBatch(t *testing.T) {
	var pool []*benchmarks.Task
	for i := range 12 {
		pool = append(pool, &benchmarks.Task{ID: fmt.Sprintf("p%02d", i), Config: benchmarks.TaskConfig{Metadata: map[string]any{"category": "build"}}})
	}
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a"}, 1, func(c *config.Config) {
		c.Validation.PoolSize = 3
	})
	tr.run.Tasks = []*benchmarks.Task{{ID: "a", Config: benchmarks.TaskConfig{Metadata: map[string]any{"category": "build"}}}}
	tr.run.ValidationPool = pool
	batch := []mediator.Proposal{{TaskID: "a"}}
	ids := func(batchID string) string {
		picked, _ := tr.run.validationTasks(batchID, batch)
		var out []string
		for _, p := range picked {
			out = append(out, p.ID)
		}
		return strings.Join(out, ",")
	}
	seen := map[string]bool{}
	for _, b := range []string{"b001", "b002", "b003", "b004"} {
		got := ids(b)
		if again := ids(b); again != got || strings.Count(got, ",") != 2 {
			t.Fatalf("batch %s: samples %q then %q; want the same three tasks", b, got, again)
		}
		seen[got] = true
	}
	if len(seen) < 2 {
		t.Errorf("four batches drew the same sample %v; want a draw per batch", seen)
	}
}

// The Reflector's pairs compare decisions of one kind by the outcome that
// kind is credited with: plans by their own trials, proposals by what
// followed their batch's decision (the next trial after an adoption, the
// verdict after a rejection). A proposal still buffered forms no pair.
func TestReflectionPairsDecisionsByTheirOwnOutcomes(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b"}, 1, nil)
	if err := tr.run.openLogs(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.run.close)
	tr.run.st = &State{}
	h := tr.run.history
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	add := func(id, kind, task string, it int) {
		must(h.Add(rundir.Entry{ID: id, Role: "planner", Kind: kind, TaskID: task, Iteration: it}))
	}
	settle := func(task string, it int, reward float64) {
		_, err := h.Settle(task, "", it, fmt.Sprintf("t%d", it), &reward, true, "ok")
		must(err)
	}
	// Iteration 1: a's plan scores 0, b's 1; each proposes an edit.
	// a's proposal is adopted and a's next trial scores 1; b's is
	// rejected. Iteration 2's proposals stay buffered.
	for it, rewards := range [][2]float64{{0, 1}, {1, 0}} {
		for i, task := range []string{"a", "b"} {
			add(fmt.Sprintf("%s/%d/plan", task, it+1), rundir.EntryPlan, task, it+1)
			settle(task, it+1, rewards[i])
			add(fmt.Sprintf("%s/%d/proposal", task, it+1), rundir.EntryProposal, task, it+1)
		}
		if it == 0 {
			must(h.Pend("a", "", []string{"a/1/proposal"}))
			must(tr.run.reject(rejection{Type: "candidate", BatchID: "b001", Reason: "validation rejected the candidate",
				Proposals: []mediator.Proposal{{ID: "b/1/proposal", TaskID: "b"}}, judged: true}))
		}
	}
	pe, err := tr.run.reflectionEntries(conditions.RolePlanner)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, e := range pe {
		got[e.ID] = e.Reward
	}
	want := map[string]float64{"a/1/plan": 0, "b/1/plan": 1, "a/2/plan": 1, "b/2/plan": 0,
		"a/1/proposal": 1, "b/1/proposal": rejectedOutcome}
	if !maps.Equal(got, want) {
		t.Errorf("entries and outcomes %v, want %v", got, want)
	}
	pairs := mediator.FormPairs(pe, mediator.PairConfig{MaxPairs: 10, BucketFraction: 0.5, MinRewardGap: 0.1}, 1)
	formed := map[[2]string]bool{}
	for _, p := range pairs {
		if p.Better.Kind != p.Worse.Kind {
			t.Errorf("pair %s / %s mixes %s and %s", p.Better.ID, p.Worse.ID, p.Better.Kind, p.Worse.Kind)
		}
		formed[[2]string{p.Better.ID, p.Worse.ID}] = true
	}
	if !formed[[2]string{"a/1/proposal", "b/1/proposal"}] {
		t.Errorf("no pair of the adopted proposal over the rejected one among %v", formed)
	}
}

// The Advisor reviews each proposal next to the report it was drawn from
// and the rewards its task earned since, and a rejected batch keeps both.
func TestAdvisorSeesProposalEvidence(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b"}, 6, func(c *config.Config) {
		c.Experiment.AdvisorBufferMax = 3
	})
	tr.trials.reward["b"] = 0.5
	tr.execute(t)
	dir := tr.run.Dir.Path
	h, err := rundir.OpenHistory(filepath.Join(dir, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// The iteration each batch was reviewed at, adopted or rejected.
	reviewedAt := map[string]int{}
	for _, u := range readJSONL[Provenance](t, filepath.Join(dir, rundir.SkillUpdatesFile)) {
		reviewedAt[u.BatchID] = u.Iteration
	}
	rejected := readJSONL[rejection](t, filepath.Join(dir, rundir.RejectedFile))
	for _, rej := range rejected {
		reviewedAt[rej.BatchID] = rej.Iteration
	}
	seen, later := 0, 0
	for _, q := range tr.rec.ByKind(mediator.KindAdvice) {
		prompt := promptText(q)
		batchID := strings.TrimPrefix(q.Caller, "coevo/advisor/")
		for _, e := range h.Entries(func(e *rundir.Entry) bool { return e.Kind == rundir.EntryProposal }) {
			if !strings.Contains(prompt, "id: "+e.ID+"\n") {
				continue
			}
			seen++
			report, _ := h.Entry(strings.TrimSuffix(e.ID, rundir.EntryProposal) + rundir.EntryReport)
			if report.Content == "" || !strings.Contains(prompt, report.Content) {
				t.Errorf("the Advisor's prompt lacks the report %s was proposed from (%q)", e.ID, report.Content)
			}
			var want []string
			for _, r := range h.RewardsAfter(e.TaskID, "", e.Iteration) {
				if r.Iteration <= reviewedAt[batchID] {
					want = append(want, fmt.Sprintf("iteration %d: %.3f", r.Iteration, r.Reward))
				}
			}
			later += len(want)
			line := fmt.Sprintf("rewards of task %s since: %s\n", e.TaskID, strings.Join(want, ", "))
			if len(want) == 0 {
				line = fmt.Sprintf("later attempts at task %s: none yet\n", e.TaskID)
			}
			if !strings.Contains(prompt, fmt.Sprintf("outcome of iteration %d: status: ", e.Iteration)) {
				t.Errorf("the Advisor's prompt lacks the outcome of the trial %s was proposed after", e.ID)
			}
			if !strings.Contains(prompt, line) {
				t.Errorf("batch %s (iteration %d): the Advisor's prompt lacks %q for %s", batchID, reviewedAt[batchID], line, e.ID)
			}
		}
	}
	if seen == 0 || later == 0 {
		t.Fatalf("%d proposals reached the Advisor with %d later rewards; want some of each", seen, later)
	}
	for _, rej := range rejected {
		for _, p := range rej.Proposals {
			if p.Digest == "" || p.DigestKind != string(conditions.FeedbackMediatorReport) {
				t.Errorf("rejected proposal %s has digest %q (%s)", p.ID, p.Digest, p.DigestKind)
			}
		}
	}
}

// The Reflector sees each side of a pair with its own trial's outcome and,
// for a plan, the prior context it was written from; the history records
// both.
func TestReflectorSeesWhatEachEntryCameFrom(t *testing.T) {
	tr := newTestRun(t, conditions.LearnedMediator, conditions.PolicyAll, []string{"a", "b"}, 6, func(c *config.Config) {
		c.Experiment.CoevoInterval = 2
	})
	tr.trials.reward["b"] = 0.5
	tr.execute(t)
	h, err := rundir.OpenHistory(filepath.Join(tr.run.Dir.Path, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	sourced := 0
	for _, e := range h.Entries(func(e *rundir.Entry) bool { return e.Kind == rundir.EntryPlan }) {
		if e.Trial == nil || e.Trial.Status == "" {
			t.Errorf("plan %s records no outcome of its trial", e.ID)
		}
		if e.Source != "" {
			sourced++
			if !strings.Contains(e.Source, "The Mediator's report on your last attempt at this task:") {
				t.Errorf("plan %s records a source without its title: %q", e.ID, e.Source)
			}
		}
	}
	if sourced == 0 {
		t.Error("no plan records the prior context it was written from")
	}
	reqs := tr.rec.ByKind(mediator.KindReflection)
	if len(reqs) == 0 {
		t.Fatal("the Reflector was never called")
	}
	for _, q := range reqs {
		if p := promptText(q); !strings.Contains(p, "its own trial: status: ") {
			t.Errorf("a reflection prompt shows no entry's own trial:\n%s", p)
		}
	}
}
