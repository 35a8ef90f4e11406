package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
)

// tournamentRun is an offline run whose batches fill every iteration.
func tournamentRun(t *testing.T, iterations int, tweak func(*config.Config)) *testRun {
	t.Helper()
	return newTestRun(t, conditions.StaticMediator, conditions.Policy{Executor: true}, []string{"a", "b", "c", "d"}, iterations, func(c *config.Config) {
		c.Experiment.AdvisorBufferMax = 2
		c.Validation.Rule = "no_regress"
		c.Validation.TrialsPerTask = 1
		if tweak != nil {
			tweak(c)
		}
	})
}

func TestTournamentDraftsJudgesAndValidatesTheBest(t *testing.T) {
	tr := tournamentRun(t, 4, func(c *config.Config) {
		c.Tournament = config.Tournament{NCandidates: 4, ValidateTop: 1, EloK: 32, EloInitial: 1000}
	})
	tr.execute(t)
	recs := readJSONL[tournamentRecord](t, filepath.Join(tr.run.Dir.Path, rundir.TournamentFile))
	if len(recs) == 0 {
		t.Fatal("no tournament was recorded")
	}
	first := recs[0]
	var fresh []candidate
	for _, c := range first.Candidates {
		if !c.Pooled {
			fresh = append(fresh, c)
		}
	}
	var ops []string
	for _, c := range fresh {
		ops = append(ops, c.Operator)
		if len(c.Parents) == 0 || !strings.HasPrefix(c.Parents[0], "skill:") {
			t.Errorf("candidate %s has parents %v, want the current skill first", c.ID, c.Parents)
		}
		if c.Dropped != "" {
			t.Errorf("candidate %s (%s) dropped: %s", c.ID, c.Operator, c.Dropped)
		}
	}
	if want := []string{"refine", "combine", "simplify", "explore"}; !slices.Equal(ops, want) {
		t.Fatalf("operators %v, want %v", ops, want)
	}
	if combine := fresh[1]; len(combine.Parents) != 2 {
		t.Errorf("combine has parents %v, want the skill and its partner", combine.Parents)
	}
	// Every pair, in both orders.
	if len(first.Matches) != 12 {
		t.Errorf("%d matches among 4 candidates, want 12 (6 pairs, both orders)", len(first.Matches))
	}
	seen := map[[2]string]bool{}
	for _, m := range first.Matches {
		seen[[2]string{m.First, m.Second}] = true
	}
	for _, m := range first.Matches {
		if !seen[[2]string{m.Second, m.First}] {
			t.Errorf("%s was shown before %s but never after it", m.First, m.Second)
		}
	}
	validated, moved := 0, false
	for _, c := range first.Candidates {
		if c.Validated {
			validated++
			if c.Rank != 1 || c.Evidence == "" {
				t.Errorf("validated candidate %s has rank %d, evidence %q; want the best-rated, with its evidence", c.ID, c.Rank, c.Evidence)
			}
		}
		moved = moved || c.Elo != first.EloInitial
	}
	if validated != 1 {
		t.Errorf("%d candidates validated, want validate_top = 1", validated)
	}
	if !moved {
		t.Error("no rating moved from the initial rating")
	}
	var matches int
	for _, r := range recs {
		matches += len(r.Matches)
	}
	if n := len(tr.rec.ByKind(mediator.KindJudge)); n != matches {
		t.Errorf("%d judge calls, %d matches recorded", n, matches)
	}
	if first.TrialsSaved <= 0 || first.TrialsSpent <= 0 {
		t.Errorf("trials spent %d, saved %v; want both positive", first.TrialsSpent, first.TrialsSaved)
	}
	// The judge's and the extra drafts' spend is co-evolution work, spread
	// over the metric rows like the rest of it.
	rows, err := rundir.ReadMetrics(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	var inRows, inLedger, judged int64
	for _, r := range rows {
		inRows += r.CoevoInputTokens + r.CoevoOutputTokens
	}
	for caller, u := range tr.run.Ledger.ByCaller() {
		if strings.HasPrefix(caller, "coevo/") {
			inLedger += u.Tokens()
		}
		if strings.HasPrefix(caller, "coevo/judge/") {
			judged += u.Tokens()
		}
	}
	if judged == 0 || inRows != inLedger {
		t.Errorf("judge tokens %d; co-evolution tokens in metric rows %d, in the ledger %d", judged, inRows, inLedger)
	}
	rep, err := inspect.Tournament(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Candidates) < 4 || rep.Candidates[0].Operator != "refine" || rep.TrialsSaved <= 0 {
		t.Errorf("inspect --tournament shows %d candidates (first %+v), %v trials saved", len(rep.Candidates), rep.Candidates[0], rep.TrialsSaved)
	}
	if rep.Correlation == nil && rep.Note == "" {
		t.Error("inspect --tournament gives neither the rating-gain correlation nor a note why not")
	}
}

// TestTournamentPoolCarriesRatings checks that candidates not validated
// compete again in the next tournament with the rating they ended with.
func TestTournamentPoolCarriesRatings(t *testing.T) {
	tr := tournamentRun(t, 6, func(c *config.Config) {
		c.Tournament = config.Tournament{NCandidates: 3, ValidateTop: 1}
	})
	tr.execute(t)
	recs := readJSONL[tournamentRecord](t, filepath.Join(tr.run.Dir.Path, rundir.TournamentFile))
	ended := map[string]float64{}
	carried := 0
	for _, r := range recs {
		for _, c := range r.Candidates {
			if c.Pooled {
				carried++
				if was, ok := ended[c.ID]; !ok || was != c.EloStart {
					t.Errorf("pooled %s starts at %v, ended its last tournament at %v (seen %v)", c.ID, c.EloStart, was, ok)
				}
			}
			ended[c.ID] = c.Elo
		}
	}
	if len(recs) < 2 || carried == 0 {
		t.Fatalf("%d tournaments, %d pooled entries; want a pool carried across batches", len(recs), carried)
	}
}

// alwaysFirst is a judge that names the candidate shown first, whatever it is.
type alwaysFirst struct{}

func (alwaysFirst) Offline() bool { return false }

func (alwaysFirst) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: `{"winner":"first","reasoning":"shown first"}`}}, nil
}

func TestJudgeByPositionAloneLeavesRatingsEqual(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		judge llm.Provider
		equal bool
	}{
		{"a position-only judge on four candidates", 4, alwaysFirst{}, true},
		{"a position-only judge on two candidates", 2, alwaysFirst{}, true},
		// The offline judge prefers one text in either order, so ratings
		// part: the check above can fail.
		{"a judge that prefers content", 4, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := tournamentRun(t, 1, func(c *config.Config) { c.Tournament = config.Tournament{NCandidates: tt.n} })
			if tt.judge != nil {
				tr.run.Clients.byRole[conditions.RoleJudge] = &llm.Client{Provider: tt.judge, Ledger: tr.run.Ledger, Role: "judge"}
			}
			if err := tr.run.open(); err != nil {
				t.Fatal(err)
			}
			defer tr.run.close()
			current := mustParse(t, "---\nname: executor\ndescription: d\n---\n\nDo the task.\n")
			var cs []*candidate
			for i := range tt.n {
				cs = append(cs, &candidate{ID: string(rune('p' + i)), Elo: 1000, EloStart: 1000,
					Content: "---\nname: executor\ndescription: d\n---\n\nDo the task. Variant " + string(rune('A'+i)) + ".\n"})
			}
			batch := []mediator.Proposal{{ID: "x", TaskID: "a", NewContent: "Check outputs."}}
			matches, err := tr.run.judgeAll(context.Background(), "b001", batch, "fine", current, cs)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.n * (tt.n - 1); len(matches) != want {
				t.Errorf("%d matches, want %d", len(matches), want)
			}
			equal := true
			for _, c := range cs {
				equal = equal && math.Abs(c.Elo-1000) < 1e-9
			}
			if equal != tt.equal {
				var elos []float64
				for _, c := range cs {
					elos = append(elos, c.Elo)
				}
				t.Errorf("ratings %v: all equal %v, want %v", elos, equal, tt.equal)
			}
		})
	}
}

func mustParse(t *testing.T, text string) *skills.Skill {
	t.Helper()
	s, err := skills.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestEloUpdate(t *testing.T) {
	tests := []struct {
		name          string
		ra, rb, sa, k float64
		wantA, wantB  float64
	}{
		{"a win between equals moves half of K", 1000, 1000, 1, 32, 1016, 984},
		{"a draw between equals moves nothing", 1000, 1000, 0.5, 32, 1000, 1000},
		{"an expected win moves little", 1400, 1000, 1, 32, 1400 + 32*(1-1/(1+math.Pow(10, -1))), 1000 - 32*(1-1/(1+math.Pow(10, -1)))},
		{"an upset moves much", 1000, 1400, 1, 32, 1000 + 32*(1-1/(1+math.Pow(10, 1))), 1400 - 32*(1-1/(1+math.Pow(10, 1)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := eloUpdate(tt.ra, tt.rb, tt.sa, tt.k)
			if math.Abs(a-tt.wantA) > 1e-9 || math.Abs(b-tt.wantB) > 1e-9 {
				t.Errorf("eloUpdate = %v, %v; want %v, %v", a, b, tt.wantA, tt.wantB)
			}
		})
	}
}

// TestOneCandidateKeepsTheDataset runs the same offline run with the
// shipped [tournament] table (n_candidates = 1) and with none, as a
// configuration written before tournaments: the metrics and the history
// must be the same, and no judge is called.
func TestOneCandidateKeepsTheDataset(t *testing.T) {
	runs := map[string]func(*config.Config){
		"explicit": func(c *config.Config) {
			c.Tournament = config.Tournament{NCandidates: 1, ValidateTop: 1, EloK: 32, EloInitial: 1000}
		},
		"without": func(c *config.Config) { c.Tournament = config.Tournament{}; delete(c.Models, conditions.RoleJudge) },
	}
	got := map[string]string{}
	for name, tweak := range runs {
		tr := tournamentRun(t, 4, tweak)
		if name == "without" {
			delete(tr.run.Clients.byRole, conditions.RoleJudge)
		}
		tr.execute(t)
		if n := len(tr.rec.ByKind(mediator.KindJudge)) + len(tr.rec.ByKind(mediator.KindSkillVariant)); n != 0 {
			t.Errorf("%s: %d judge or variant calls with one candidate", name, n)
		}
		if _, err := os.Stat(filepath.Join(tr.run.Dir.Path, rundir.TournamentFile)); !os.IsNotExist(err) {
			t.Errorf("%s: %s exists (%v)", name, rundir.TournamentFile, err)
		}
		got[name] = datasetText(t, tr.run.Dir.Path)
	}
	a, b := strings.Split(got["explicit"], "\n"), strings.Split(got["without"], "\n")
	if len(a) != len(b) {
		t.Errorf("the datasets differ: %d lines with the table, %d without", len(a), len(b))
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			t.Errorf("the datasets differ at line %d:\nexplicit: %s\nwithout:  %s", i+1, a[i], b[i])
			break
		}
	}
	if !strings.Contains(got["without"], "executor/b00") {
		t.Error("the run adopted no skill update: the comparison covers no batch")
	}
}

// datasetText is a run's metric rows and history, with what names the
// directory or the time of day left out, one record a line, sorted: tasks
// run concurrently, so the order in which records were written is not
// part of the dataset.
func datasetText(t *testing.T, dir string) string {
	t.Helper()
	rows, err := rundir.ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, r := range rows {
		r.RunID = ""
		line, _ := json.Marshal(r)
		b.Write(line)
		b.WriteByte('\n')
	}
	for _, f := range []string{rundir.HistoryFile, rundir.RejectedFile, rundir.SkillUpdatesFile} {
		for _, m := range readJSONL[map[string]any](t, filepath.Join(dir, f)) {
			dropClock(m)
			line, _ := json.Marshal(m)
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	st, err := os.ReadFile(filepath.Join(dir, rundir.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(st, &state); err != nil {
		t.Fatal(err)
	}
	b.WriteString(strings.Join(slices.Sorted(maps.Keys(state)), ","))
	lines := strings.Split(b.String(), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// dropClock removes the wall-clock stamps of a record, at any depth.
func dropClock(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case map[string]any:
			dropClock(v)
		case []any:
			for _, e := range v {
				if em, ok := e.(map[string]any); ok {
					dropClock(em)
				}
			}
		}
		if k == "time" || k == "created" {
			delete(m, k)
		}
	}
}

// TestMetaReviewNoteReachesThePlanner checks that every
// meta_review_interval iterations the Reflector's note is recorded and the
// Planner reads it with its skill from the next iteration on.
func TestMetaReviewNoteReachesThePlanner(t *testing.T) {
	tr := tournamentRun(t, 3, func(c *config.Config) {
		c.Tournament = config.Tournament{NCandidates: 2, MetaReviewInterval: 2}
	})
	tr.execute(t)
	recs := readJSONL[metaReviewRecord](t, filepath.Join(tr.run.Dir.Path, rundir.MetaReviewsFile))
	if len(recs) != 1 || recs[0].Iteration != 2 || recs[0].Outcome != "noted" || recs[0].Note == "" {
		t.Fatalf("meta-reviews %+v, want one note after iteration 2", recs)
	}
	if n := len(tr.rec.ByCaller("coevo/meta_review/i0002")); n != 1 {
		t.Errorf("%d meta-review calls charged to coevo/meta_review/i0002, want 1", n)
	}
	before, after := tr.planPrompt(t, "a", 2), tr.planPrompt(t, "a", 3)
	if strings.Contains(before, "Meta-review") || !strings.Contains(after, "Meta-review") || !strings.Contains(after, firstLineOf(recs[0].Note)) {
		t.Errorf("the note reaches the plan of iteration 2: %v, of iteration 3: %v", strings.Contains(before, "Meta-review"), strings.Contains(after, "Meta-review"))
	}
}

func firstLineOf(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// TestTournamentResumes stops a run after two iterations, leaves a
// tournament line the checkpoint does not count (an iteration cut short),
// and resumes it: the line is cut back, and the pool saved in state.json
// competes in the tournaments after the resume.
func TestTournamentResumes(t *testing.T) {
	tweak := func(c *config.Config) { c.Tournament = config.Tournament{NCandidates: 3, ValidateTop: 1} }
	tr := tournamentRun(t, 2, tweak)
	tr.execute(t)
	path := filepath.Join(tr.run.Dir.Path, rundir.TournamentFile)
	before := readJSONL[tournamentRecord](t, path)
	st, err := LoadState(tr.run.Dir.Path)
	if err != nil || st.Tournament == nil || st.Tournament.Lines != len(before) || len(before) == 0 {
		t.Fatalf("checkpoint %+v (%v) does not count the %d tournaments", st.Tournament, err, len(before))
	}
	if len(st.Tournament.Pool[""]) == 0 {
		t.Fatal("no pool in the checkpoint")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"batch_id":"torn"}` + "\n")
	f.Close()
	d, err := rundir.Open(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	again := buildTestRun(tr.run.Config, d, conditions.StaticMediator, conditions.Policy{Executor: true}, []string{"a", "b", "c", "d"}, 5)
	again.execute(t)
	after := readJSONL[tournamentRecord](t, path)
	pooled := false
	for i, r := range after {
		if r.BatchID == "torn" {
			t.Errorf("line %d: the line the checkpoint did not count survived the resume", i+1)
		}
		if i >= len(before) {
			for _, c := range r.Candidates {
				pooled = pooled || c.Pooled && c.BatchID <= before[len(before)-1].BatchID
			}
		}
	}
	if len(after) <= len(before) || !pooled {
		t.Errorf("%d tournaments before the resume, %d after; a candidate pooled before it competed after it: %v", len(before), len(after), pooled)
	}
}
