package harness

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/harness/gate"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
)

// A tournament ([tournament] n_candidates > 1) replaces the one draft of an
// approved batch: the Planner drafts several candidates with named
// operators, a judge compares every new pairing in both orders, Elo ratings
// rank them, and only the best validate_top go to the gate. Candidates not
// validated stay in the line's pool with their ratings and compete again
// after the next approved batch.

// The records of history/tournament.jsonl (rundir owns the format).
type (
	candidate        = rundir.TournamentCandidate
	match            = rundir.TournamentMatch
	tournamentRecord = rundir.TournamentRecord
)

// tournament runs an approved batch's candidates through the tournament
// and the gate.
func (r *Run) tournament(ctx context.Context, it int, l skillLine, batchID string, batch []mediator.Proposal, current *skills.Skill) ([]rundir.SkillUpdate, error) {
	advice, approved, err := r.review(ctx, it, l, batchID, batch, current)
	if err != nil || !approved {
		return nil, err
	}
	tc := r.Config.Tournament
	rec := tournamentRecord{BatchID: batchID, Student: l.student, Iteration: it, ValidateTop: tc.Top(), EloK: tc.K(), EloInitial: tc.Initial()}
	fresh, err := r.drawCandidates(ctx, l, batchID, batch, current, advice)
	if err != nil {
		return nil, err
	}
	var entrants []*candidate
	for _, c := range fresh {
		if c.Dropped == "" {
			entrants = append(entrants, c)
		}
	}
	if len(entrants) == 0 {
		rec.Candidates = derefAll(fresh)
		if err := r.recordTournament(rec); err != nil {
			return nil, err
		}
		return nil, r.reject(rejection{Type: "candidate", BatchID: batchID, Student: l.student, Iteration: it,
			Reason: "the Planner produced no usable candidate", Advice: advice, Proposals: batch})
	}
	entrants = append(r.pooled(l), entrants...)
	if rec.Matches, err = r.judgeAll(ctx, batchID, batch, advice, current, entrants); err != nil {
		return nil, err
	}
	rankCandidates(entrants)
	top := entrants[:min(tc.Top(), len(entrants))]
	decisions, err := r.validateTop(ctx, l, batchID, batch, current, top)
	if err != nil {
		return nil, err
	}
	r.keepPool(l, entrants[len(top):])
	updates, err := r.settleTournament(it, l, batchID, batch, current, advice, top, decisions)
	if err != nil {
		return nil, err
	}
	rec.Candidates = derefAll(append(entrants, droppedOnly(fresh)...))
	rec.TrialsSpent, rec.TrialsSaved = trialsSaved(top, len(entrants))
	return updates, r.recordTournament(rec)
}

// drawCandidates drafts n_candidates candidates, cycling through the
// operators: refine is the ordinary draft; combine merges the current skill
// with the best pooled candidate (else this batch's refinement); simplify
// shortens the refinement; explore rewrites freely. A draft that is
// unusable, invalid, the current skill or a copy of an earlier candidate is
// kept with the reason it was dropped.
func (r *Run) drawCandidates(ctx context.Context, l skillLine, batchID string, batch []mediator.Proposal, current *skills.Skill, advice string) ([]*candidate, error) {
	proposals := r.proposalsFor(conditions.ConsumerPlannerDraft, batch)
	var out []*candidate
	var refined *candidate
	for i := range r.Config.Tournament.Candidates() {
		op := mediator.Operators()[i%len(mediator.Operators())]
		c := &candidate{ID: fmt.Sprintf("%sc%d", batchID, i+1), BatchID: batchID, Operator: string(op),
			Parents: []string{"skill:" + short(current.Hash)}, EloStart: r.Config.Tournament.Initial(), Elo: r.Config.Tournament.Initial()}
		// The first draft is charged as a batch's only draft is; the
		// others name their candidate.
		pl := *r.planner
		pl.Caller = rundir.DraftCaller(batchID).String()
		if i > 0 {
			pl.Caller = rundir.CandidateCaller(batchID, fmt.Sprintf("c%d", i+1)).String()
		}
		var partner *candidate
		if op != mediator.OperatorRefine {
			partner = r.partner(l, op, refined)
		}
		text, fellBack, err := draftWith(ctx, &pl, op, i+1, batchID, current, proposals, advice, partner)
		switch {
		case err != nil && r.stopsRun(ctx, err):
			return nil, fmt.Errorf("draft candidate %s: %w", c.ID, err)
		case err != nil:
			c.Dropped = "the Planner's model failed while drafting: " + err.Error()
		default:
			c.Content, c.Dropped = text, dropReason(text, fellBack, current, out)
		}
		if partner != nil {
			c.Parents = append(c.Parents, partner.ID)
		}
		if c.Dropped == "" {
			if s, err := skills.Parse([]byte(text)); err == nil {
				c.Hash = s.Hash
			}
			if op == mediator.OperatorRefine && refined == nil {
				refined = c
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// draftWith drafts one candidate with op: refine is the Planner's ordinary
// draft, the others a variant, from partner when there is one.
func draftWith(ctx context.Context, pl *mediator.Planner, op mediator.Operator, index int, batchID string, current *skills.Skill,
	proposals []mediator.Proposal, advice string, partner *candidate) (string, bool, error) {
	if op == mediator.OperatorRefine {
		return pl.Draft(ctx, string(current.Content), proposals, advice)
	}
	in := mediator.VariantInput{Operator: op, BatchID: batchID, CurrentSkill: string(current.Content), Proposals: proposals,
		Advice: advice, Index: index}
	if partner != nil {
		in.Partner = partner.Content
	}
	return pl.Vary(ctx, in)
}

// partner is the other candidate an operator works from: combine merges
// with the best-rated pooled candidate, else this batch's refinement;
// simplify shortens the refinement; explore needs none.
func (r *Run) partner(l skillLine, op mediator.Operator, refined *candidate) *candidate {
	switch op {
	case mediator.OperatorCombine:
		if pool := r.pooled(l); len(pool) > 0 {
			rankCandidates(pool)
			return pool[0]
		}
		return refined
	case mediator.OperatorSimplify:
		return refined
	}
	return nil
}

// dropReason says why a draft cannot compete, or "" when it can.
func dropReason(text string, fellBack bool, current *skills.Skill, earlier []*candidate) string {
	switch {
	case fellBack || strings.TrimSpace(text) == strings.TrimSpace(string(current.Content)):
		return "the Planner produced no usable draft"
	}
	if _, err := skills.Parse([]byte(text)); err != nil {
		return "the draft is not a valid skill: " + err.Error()
	}
	for _, e := range earlier {
		if e.Dropped == "" && strings.TrimSpace(e.Content) == strings.TrimSpace(text) {
			return "the same text as candidate " + e.ID
		}
	}
	return ""
}

// judgeAll has the judge compare every pairing of the entrants that holds
// a new candidate, in both orders, and updates their ratings once per
// pairing from the two verdicts together: a judge that always names the
// same position then moves no rating between equally rated candidates.
func (r *Run) judgeAll(ctx context.Context, batchID string, batch []mediator.Proposal, advice string, current *skills.Skill, entrants []*candidate) ([]match, error) {
	j := mediator.Judge{Client: r.Clients.Get(conditions.RoleJudge), Caller: rundir.JudgeCaller(batchID).String(), Seed: r.Spec.Seed}
	if j.Client == nil {
		return nil, fmt.Errorf("judge batch %s: no [models.judge] in the configuration; add one to run a tournament", batchID)
	}
	in := mediator.JudgeInput{BatchID: batchID, CurrentSkill: string(current.Content), Proposals: r.proposalsFor(conditions.ConsumerJudge, batch)}
	if r.visible(conditions.ConsumerJudge).Has(conditions.EvidenceRejections) {
		r.mu.Lock()
		in.Rejections = slices.Clone(r.st.RecentRejections)
		r.mu.Unlock()
	}
	if r.visible(conditions.ConsumerJudge).Has(conditions.EvidenceAdvice) {
		in.Advice = advice
	}
	var matches []match
	for a := range entrants {
		for b := a + 1; b < len(entrants); b++ {
			x, y := entrants[a], entrants[b]
			if x.Pooled && y.Pooled {
				continue // judged when they were new
			}
			score := 0.0 // x's wins, a draw counting half
			for _, order := range [][2]*candidate{{x, y}, {y, x}} {
				m, err := r.judgeOnce(ctx, j, in, order[0], order[1])
				if err != nil {
					return nil, err
				}
				score += winShare(m, x.ID)
				matches = append(matches, m)
			}
			x.Elo, y.Elo = eloUpdate(x.Elo, y.Elo, score/2, r.Config.Tournament.K())
		}
	}
	return matches, nil
}

// judgeOnce is one ordered comparison. A judge whose model keeps failing
// gives a draw, with the reason; a budget stop or cancellation ends the run.
func (r *Run) judgeOnce(ctx context.Context, j mediator.Judge, in mediator.JudgeInput, first, second *candidate) (match, error) {
	in.First = mediator.JudgeCandidate{ID: first.ID, Content: first.Content}
	in.Second = mediator.JudgeCandidate{ID: second.ID, Content: second.Content}
	v, err := j.Compare(ctx, in)
	m := match{First: first.ID, Second: second.ID}
	if err != nil {
		if r.stopsRun(ctx, err) {
			return match{}, fmt.Errorf("judge %s against %s: %w", first.ID, second.ID, err)
		}
		m.Reasoning, m.FellBack = "the judge's model failed: "+err.Error(), true
		return m, nil
	}
	m.Reasoning, m.FellBack = v.Reasoning, v.FellBack
	switch v.Winner {
	case mediator.JudgeFirst:
		m.Winner = first.ID
	case mediator.JudgeSecond:
		m.Winner = second.ID
	}
	if m.Winner != "" {
		r.addCritique(fmt.Sprintf("judge in batch %s: %s", in.BatchID, capText(v.Reasoning, 300)))
	}
	return m, nil
}

// winShare is id's score in one match: 1 for a win, 0.5 for a draw.
func winShare(m match, id string) float64 {
	switch m.Winner {
	case id:
		return 1
	case "":
		return 0.5
	}
	return 0
}

// eloUpdate moves two ratings after a match in which a scored sa (1 a
// win, 0.5 a draw, 0 a loss) against b: by k times a's score less its
// expected score 1 / (1 + 10^((rb - ra) / 400)).
func eloUpdate(ra, rb, sa, k float64) (float64, float64) {
	ea := 1 / (1 + math.Pow(10, (rb-ra)/400))
	d := k * (sa - ea)
	return ra + d, rb - d
}

// rankCandidates orders candidates by rating, best first (ties by id),
// and numbers their ranks.
func rankCandidates(cs []*candidate) {
	sort.SliceStable(cs, func(a, b int) bool {
		if cs[a].Elo != cs[b].Elo {
			return cs[a].Elo > cs[b].Elo
		}
		return cs[a].ID < cs[b].ID
	})
	for i, c := range cs {
		c.Rank = i + 1
	}
}

// validateTop runs the gate on each of the best-rated candidates against
// the current skill, on the batch's validation tasks and seeds, each in
// its own evidence directory (artifacts/validation/<candidate>).
func (r *Run) validateTop(ctx context.Context, l skillLine, batchID string, batch []mediator.Proposal, current *skills.Skill, top []*candidate) ([]gate.Decision, error) {
	var out []gate.Decision
	for _, c := range top {
		c.Evidence = rundir.ValidationBatchDir(c.ID)
		dir := r.Dir.Join(c.Evidence)
		// An earlier attempt, cut short, may have left trials here.
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("clear validation evidence of candidate %s: %w", c.ID, err)
		}
		d, err := r.validate(ctx, l, batchID, c.ID, batch, string(current.Content), c.Content, dir)
		if err != nil {
			return nil, err
		}
		c.Validated, c.Accepted = true, d.Accept
		if v, ok := d.Numbers["delta"]; ok && !math.IsNaN(v) {
			c.Gain = &v
		}
		c.TrialsSpent = int(d.Numbers["trials"])
		out = append(out, d)
	}
	return out, nil
}

// settleTournament adopts the accepted candidate with the largest gain
// (the best-rated among equal gains). With none accepted, the best-rated
// validated candidate is the batch's verdict; the others are recorded as
// rejected candidates without crediting the proposals again.
func (r *Run) settleTournament(it int, l skillLine, batchID string, batch []mediator.Proposal, current *skills.Skill, advice string,
	top []*candidate, decisions []gate.Decision) ([]rundir.SkillUpdate, error) {
	pick := 0
	for i, c := range top {
		if c.Accepted && (!top[pick].Accepted || orZero(c.Gain) > orZero(top[pick].Gain)) {
			pick = i
		}
	}
	for i, c := range top {
		if i == pick {
			continue
		}
		rej := rejection{Type: "candidate", BatchID: batchID, Student: l.student, Iteration: it, Advice: advice,
			Reason: "candidate " + c.ID + " was not adopted: " + notAdopted(c, decisions[i]), Proposals: batch,
			Candidate: c.Content, Decision: &decisions[i], Evidence: c.Evidence}
		if err := r.reject(rej); err != nil {
			return nil, err
		}
	}
	c := top[pick]
	updates, err := r.settle(it, l, batchID, batch, current, c.Content, advice, decisions[pick], c.Evidence)
	c.Adopted = err == nil && decisions[pick].Accept
	return updates, err
}

func notAdopted(c *candidate, d gate.Decision) string {
	if d.Accept {
		return "another accepted candidate of the batch gained more"
	}
	return "validation rejected the candidate: " + d.Reason
}

// trialsSaved is the validation trials a tournament spent, and an estimate
// of those it saved against validating every competitor.
func trialsSaved(top []*candidate, competitors int) (spent int, saved float64) {
	for _, c := range top {
		spent += c.TrialsSpent
	}
	if len(top) == 0 {
		return 0, 0
	}
	return spent, float64(competitors-len(top)) * float64(spent) / float64(len(top))
}

// pooled returns the line's pooled candidates, ready to compete: their
// ratings carried over.
func (r *Run) pooled(l skillLine) []*candidate {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st.Tournament == nil {
		return nil
	}
	var out []*candidate
	for _, p := range r.st.Tournament.Pool[l.student] {
		out = append(out, &candidate{ID: p.ID, BatchID: p.BatchID, Operator: p.Operator, Parents: slices.Clone(p.Parents),
			Pooled: true, EloStart: p.Elo, Elo: p.Elo, Content: p.Content})
	}
	return out
}

// keepPool replaces the line's pool with the competitors not validated,
// best first, at most n_candidates of them, so the pool stays bounded.
func (r *Run) keepPool(l skillLine, rest []*candidate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts := r.tournamentState()
	var pool []rundir.PooledCandidate
	for _, c := range rest {
		if len(pool) == r.Config.Tournament.Candidates() {
			break
		}
		pool = append(pool, rundir.PooledCandidate{ID: c.ID, BatchID: c.BatchID, Operator: c.Operator, Parents: c.Parents, Elo: c.Elo, Content: c.Content})
	}
	if ts.Pool == nil {
		ts.Pool = map[string][]rundir.PooledCandidate{}
	}
	ts.Pool[l.student] = pool
}

// tournamentState returns the checkpoint's tournament part, made on first
// use; the caller holds r.mu.
func (r *Run) tournamentState() *rundir.TournamentState {
	if r.st.Tournament == nil {
		r.st.Tournament = &rundir.TournamentState{}
	}
	return r.st.Tournament
}

// recordTournament appends the record to history/tournament.jsonl.
func (r *Run) recordTournament(rec tournamentRecord) error {
	rec.Time = time.Now().UTC()
	if err := r.tournaments().Append(rec); err != nil {
		return fmt.Errorf("record the tournament of batch %s: %w", rec.BatchID, err)
	}
	return nil
}

func derefAll(cs []*candidate) []candidate {
	out := make([]candidate, len(cs))
	for i, c := range cs {
		out[i] = *c
	}
	return out
}

func droppedOnly(cs []*candidate) []*candidate {
	var out []*candidate
	for _, c := range cs {
		if c.Dropped != "" {
			out = append(out, c)
		}
	}
	return out
}

// tournaments is the tournament log, opened on first use so that a run
// without tournaments writes no such file.
func (r *Run) tournaments() *lazyLog { return r.lazy(&r.tourLog, rundir.TournamentFile) }

// metaReviews is the meta-review log, opened on first use.
func (r *Run) metaReviews() *lazyLog { return r.lazy(&r.metaLog, rundir.MetaReviewsFile) }

// lazyLog appends to a log opened on its first append.
type lazyLog struct {
	log  **durable.Log
	path string
}

func (r *Run) lazy(log **durable.Log, rel string) *lazyLog {
	return &lazyLog{log: log, path: filepath.Join(r.Dir.Path, rel)}
}

// Append opens the log when it is not open yet, then appends v.
func (l *lazyLog) Append(v any) error {
	if *l.log == nil {
		lg, err := durable.OpenLog(l.path)
		if err != nil {
			return err
		}
		*l.log = lg
	}
	return (*l.log).Append(v)
}

// countTournamentLines records in the checkpoint how many lines the
// tournament and meta-review logs hold; a log not opened since the run
// started or resumed still holds what the checkpoint says. The caller
// holds r.mu.
func (r *Run) countTournamentLines() {
	if r.tourLog == nil && r.metaLog == nil {
		return
	}
	ts := r.tournamentState()
	if r.tourLog != nil {
		ts.Lines = r.tourLog.Count()
	}
	if r.metaLog != nil {
		ts.MetaReviewLines = r.metaLog.Count()
	}
}

// closeTournamentLogs closes the logs that were opened.
func (r *Run) closeTournamentLogs() {
	for _, l := range []*durable.Log{r.tourLog, r.metaLog} {
		if l != nil {
			l.Close()
		}
	}
}

// tournamentLines are the lines of the tournament and meta-review logs a
// checkpoint promises.
func tournamentLines(st *State) map[string]int {
	out := map[string]int{rundir.TournamentFile: 0, rundir.MetaReviewsFile: 0}
	if ts := st.Tournament; ts != nil {
		out[rundir.TournamentFile], out[rundir.MetaReviewsFile] = ts.Lines, ts.MetaReviewLines
	}
	return out
}
