package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/gate"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
)

// Provenance records one committed skill change and the evidence behind it.
type Provenance struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	// Student is the student whose own executor skill changed; empty for
	// the lab's skills.
	Student     string              `json:"student,omitempty"`
	Flow        string              `json:"flow"` // advisor_gate | reflection
	Iteration   int                 `json:"iteration"`
	BatchID     string              `json:"batch_id,omitempty"`
	ProposalIDs []string            `json:"proposal_ids,omitempty"`
	EntryIDs    []string            `json:"entry_ids,omitempty"`
	Rewards     map[string]*float64 `json:"rewards,omitempty"`
	PairIDs     [][2]string         `json:"pair_ids,omitempty"`
	PairSeed    int64               `json:"pair_seed,omitempty"`
	Advice      string              `json:"advice,omitempty"`
	Rule        string              `json:"rule,omitempty"`
	Numbers     map[string]float64  `json:"numbers,omitempty"`
	OldHash     string              `json:"old_hash"`
	NewHash     string              `json:"new_hash"`
	OldSnapshot string              `json:"old_snapshot"`
	NewSnapshot string              `json:"new_snapshot"`
	Evidence    string              `json:"evidence,omitempty"`
	Time        time.Time           `json:"time"`
}

// rejection is one line of history/rejected_proposals.jsonl.
type rejection struct {
	Type    string `json:"type"` // batch | candidate
	BatchID string `json:"batch_id"`
	// Student is the student whose own executor skill the batch was for.
	Student   string              `json:"student,omitempty"`
	Iteration int                 `json:"iteration"`
	Reason    string              `json:"reason"`
	Advice    string              `json:"advice,omitempty"`
	Proposals []mediator.Proposal `json:"proposals"`
	Candidate string              `json:"candidate,omitempty"`
	Decision  *gate.Decision      `json:"decision,omitempty"`
	Evidence  string              `json:"evidence,omitempty"`
	Time      time.Time           `json:"time"`
	// judged marks a rejection that is a verdict on the proposals (the
	// Advisor's or the gate's), not a failure to decide: their outcome
	// becomes rejectedOutcome.
	judged bool
}

// rejectedOutcome is the outcome of a proposal whose batch the Advisor or
// the gate rejected: the edit was judged no better than the skill it would
// have changed, the lowest reward a trial can have.
const rejectedOutcome = 0.0

// reflectionRecord is one line of history/reflections.jsonl: every
// reflection attempt, whatever its outcome.
type reflectionRecord struct {
	Role       string      `json:"role"`
	Iteration  int         `json:"iteration"`
	Outcome    string      `json:"outcome"`
	Pairs      [][2]string `json:"pairs"`
	PairSeed   int64       `json:"pair_seed"`
	Similarity float64     `json:"similarity"`
	// ChangedWords is how many words the rewrite deleted plus inserted.
	ChangedWords int       `json:"changed_words"`
	Reasoning    string    `json:"reasoning,omitempty"`
	Provenance   string    `json:"provenance,omitempty"`
	Time         time.Time `json:"time"`
}

// bufferProposals adds an iteration's proposals for one executor skill to
// that skill's buffer, in task order.
func (r *Run) bufferProposals(l skillLine, proposals []mediator.Proposal) {
	if !r.Spec.Policy.Executor {
		return
	}
	sort.Slice(proposals, func(a, b int) bool { return proposals[a].TaskID < proposals[b].TaskID })
	buf, _ := r.bufferFor(l)
	*buf = append(*buf, proposals...)
}

// evolve runs the co-evolution steps due at the end of an iteration, once
// its proposals are buffered, and returns the skill updates it committed.
func (r *Run) evolve(ctx context.Context, it int) ([]rundir.SkillUpdate, error) {
	var updates []rundir.SkillUpdate
	exp := r.Config.Experiment
	if r.Spec.Policy.Executor {
		// The lab's skill first, then each student's own, in roster order.
		for _, l := range append([]skillLine{r.labLine()}, r.lines...) {
			if buf, _ := r.bufferFor(l); len(*buf) < exp.AdvisorBufferMax {
				continue
			}
			u, err := r.reviewBatch(ctx, it, l)
			if err != nil {
				return updates, err
			}
			updates = append(updates, u...)
		}
	}
	if err := r.metaReview(ctx, it); err != nil {
		return updates, err
	}
	if exp.CoevoInterval > 0 && it%exp.CoevoInterval == 0 {
		for _, role := range []conditions.Role{conditions.RolePlanner, conditions.RoleMediator} {
			if !r.Spec.Policy.Allows(role) {
				continue
			}
			if role == conditions.RoleMediator && r.Spec.Condition != conditions.LearnedMediator {
				continue // the design rules already refuse this; never evolve a fixed protocol
			}
			u, err := r.reflect(ctx, it, role)
			if err != nil {
				return updates, err
			}
			updates = append(updates, u...)
		}
	}
	return updates, nil
}

// reviewBatch has one executor skill's buffered proposals reviewed,
// drafted into a candidate and gated.
func (r *Run) reviewBatch(ctx context.Context, it int, l skillLine) (_ []rundir.SkillUpdate, err error) {
	buf, batches := r.bufferFor(l)
	batch := slices.Clone(*buf)
	batchID := l.batchID(*batches + 1)
	// The buffer is cleared once the batch is decided (adopted or
	// rejected). A budget stop on the way leaves it, and the batch number,
	// for the resumed run to review again.
	defer func() {
		if err == nil {
			*buf = nil
			*batches++
		}
	}()
	// An earlier attempt at this batch, cut short by a budget stop or an
	// interruption, may have left validation trials; none may mix with
	// this attempt's, whatever it decides.
	if err := os.RemoveAll(r.Dir.Join(rundir.ValidationBatchDir(batchID))); err != nil {
		return nil, fmt.Errorf("clear validation evidence of batch %s: %w", batchID, err)
	}
	for i := range batch {
		// What the Advisor is told of a proposal's task since: the next
		// trial's reward and the later ones. A proposal's own outcome comes
		// only with its batch's decision (see History).
		batch[i].DelayedReward, batch[i].LaterRewards = nil, nil
		for _, tr := range r.history.RewardsAfter(batch[i].TaskID, batch[i].Student, batch[i].Iteration) {
			batch[i].LaterRewards = append(batch[i].LaterRewards, mediator.TrialReward{Iteration: tr.Iteration, Reward: tr.Reward})
		}
		if len(batch[i].LaterRewards) > 0 {
			batch[i].DelayedReward = new(batch[i].LaterRewards[0].Reward)
		}
	}
	current, err := l.store.Read(conditions.RoleExecutor)
	if err != nil {
		return nil, err
	}
	if r.Config.Tournament.Active() {
		return r.tournament(ctx, it, l, batchID, batch, current)
	}
	draft, advice, err := r.draftCandidate(ctx, it, l, batchID, batch, current)
	if err != nil || draft == "" {
		return nil, err
	}
	return r.gateCandidate(ctx, it, l, batchID, batch, current, draft, advice)
}

// draftCandidate asks the Advisor to review the batch and, when it
// approves, the Planner to draft the new executor skill. A batch the
// Advisor rejects, or a draft that is unusable, is recorded as rejected and
// returns no draft.
func (r *Run) draftCandidate(ctx context.Context, it int, l skillLine, batchID string, batch []mediator.Proposal, current *skills.Skill) (draft, advice string, err error) {
	advice, approved, err := r.review(ctx, it, l, batchID, batch, current)
	if err != nil || !approved {
		return "", "", err
	}
	pl := *r.planner
	pl.Caller = rundir.DraftCaller(batchID).String()
	draft, fellBack, err := pl.Draft(ctx, string(current.Content), r.proposalsFor(conditions.ConsumerPlannerDraft, batch), advice)
	if err != nil {
		if r.stopsRun(ctx, err) {
			return "", "", fmt.Errorf("draft executor skill for batch %s: %w", batchID, err)
		}
		return "", "", r.reject(rejection{Type: "candidate", BatchID: batchID, Student: l.student, Iteration: it,
			Reason: "the Planner's model failed while drafting: " + err.Error(), Advice: advice, Proposals: batch})
	}
	if fellBack || strings.TrimSpace(draft) == strings.TrimSpace(string(current.Content)) {
		return "", "", r.reject(rejection{Type: "candidate", BatchID: batchID, Student: l.student, Iteration: it,
			Reason: "the Planner produced no usable draft", Advice: advice, Proposals: batch, Candidate: draft})
	}
	if _, err := skills.Parse([]byte(draft)); err != nil {
		return "", "", r.reject(rejection{Type: "candidate", BatchID: batchID, Student: l.student, Iteration: it,
			Reason: "the draft is not a valid skill: " + err.Error(), Advice: advice, Proposals: batch, Candidate: draft})
	}
	return draft, advice, nil
}

// review asks the Advisor to review the batch. A batch the Advisor
// rejects, or whose review failed, is recorded as rejected and is not
// approved.
func (r *Run) review(ctx context.Context, it int, l skillLine, batchID string, batch []mediator.Proposal, current *skills.Skill) (advice string, approved bool, err error) {
	adv := *r.advisor
	adv.Caller = rundir.AdvisorCaller(batchID).String()
	review, err := adv.Review(ctx, batchID, string(current.Content), r.proposalsFor(conditions.ConsumerAdvisor, batch))
	if err != nil {
		if r.stopsRun(ctx, err) {
			return "", false, fmt.Errorf("advisor review of batch %s: %w", batchID, err)
		}
		return "", false, r.reject(rejection{Type: "batch", BatchID: batchID, Student: l.student, Iteration: it,
			Reason: "the Advisor's model failed: " + err.Error(), Proposals: batch})
	}
	if !review.Approve {
		return "", false, r.reject(rejection{Type: "batch", BatchID: batchID, Student: l.student, Iteration: it,
			Reason: "the Advisor rejected the batch", Advice: review.Feedback, Proposals: batch, judged: true})
	}
	r.addCritique(fmt.Sprintf("batch %s (iteration %d): the Advisor approved; advice: %s", batchID, it, capText(review.Feedback, 300)))
	return review.Feedback, true, nil
}

// gateCandidate validates a drafted executor skill against the current one
// and adopts it only when the gate accepts it.
func (r *Run) gateCandidate(ctx context.Context, it int, l skillLine, batchID string, batch []mediator.Proposal, current *skills.Skill,
	draft, advice string) ([]rundir.SkillUpdate, error) {
	evidenceDir := rundir.ValidationBatchDir(batchID)
	decision, err := r.validate(ctx, l, batchID, batchID, batch, string(current.Content), draft, filepath.Join(r.Dir.Path, evidenceDir))
	if err != nil {
		return nil, err
	}
	return r.settle(it, l, batchID, batch, current, draft, advice, decision, evidenceDir)
}

// settle adopts a validated candidate the gate accepted, or records it as
// rejected.
func (r *Run) settle(it int, l skillLine, batchID string, batch []mediator.Proposal, current *skills.Skill,
	draft, advice string, decision gate.Decision, evidenceDir string) ([]rundir.SkillUpdate, error) {
	if !decision.Accept {
		return nil, r.reject(rejection{Type: "candidate", BatchID: batchID, Student: l.student, Iteration: it,
			Reason: "validation rejected the candidate: " + decision.Reason, Advice: advice,
			Proposals: batch, Candidate: draft, Decision: &decision, Evidence: evidenceDir, judged: true})
	}
	prov := Provenance{ID: l.provenanceRole() + "/" + batchID, Role: string(conditions.RoleExecutor), Student: l.student, Flow: "advisor_gate", Iteration: it,
		BatchID: batchID, Advice: advice, Rule: decision.Rule, Numbers: decision.Numbers,
		Evidence: evidenceDir, Rewards: map[string]*float64{}}
	for _, p := range batch {
		prov.ProposalIDs = append(prov.ProposalIDs, p.ID)
		prov.EntryIDs = append(prov.EntryIDs, p.EntryIDs...)
		prov.Rewards[p.ID] = p.DelayedReward
	}
	u, err := r.adopt(it, l, conditions.RoleExecutor, current, []byte(draft), prov)
	if err != nil {
		return nil, err
	}
	// An adopted proposal's outcome is what followed: the next trial of its
	// task, which runs with the adopted skill, settles it.
	for _, p := range batch {
		if err := r.history.Pend(p.TaskID, l.student, []string{p.ID}); err != nil {
			return nil, fmt.Errorf("credit the proposals of batch %s: %w", batchID, err)
		}
	}
	r.emit(Event{Kind: EventSkillUpdate, Iteration: it, Message: l.provenanceRole() + " skill updated by batch " + batchID})
	return []rundir.SkillUpdate{u}, nil
}

func (r *Run) reject(rej rejection) error {
	rej.Time = time.Now().UTC()
	if err := r.rejected.Append(rej); err != nil {
		return err
	}
	if rej.judged {
		ids := make([]string, 0, len(rej.Proposals))
		for _, p := range rej.Proposals {
			ids = append(ids, p.ID)
		}
		if err := r.history.Credit(ids, rejectedOutcome); err != nil {
			return fmt.Errorf("credit the proposals of rejected batch %s: %w", rej.BatchID, err)
		}
	}
	summary := fmt.Sprintf("batch %s (iteration %d): %s", rej.BatchID, rej.Iteration, rej.Reason)
	if rej.Advice != "" {
		summary += "; advice: " + capText(rej.Advice, 300)
	}
	r.addCritique(summary)
	r.mu.Lock()
	r.st.RecentRejections = append(r.st.RecentRejections, summary)
	if n := r.Config.Experiment.RecentRejectionsShown; n > 0 && len(r.st.RecentRejections) > n {
		r.st.RecentRejections = r.st.RecentRejections[len(r.st.RecentRejections)-n:]
	}
	r.mu.Unlock()
	return nil
}

// validationTasks picks the tasks a candidate is validated on, never the
// tasks its proposals came from while others are left: a candidate judged
// on the tasks that suggested it is judged on the luck that suggested it.
// With a validation split (ValidateSplit), every candidate is validated on
// the split, never on the tasks the learning curve is reported on: tasks
// compatible with the batch's (same category or overlapping tags) first,
// then the rest, up to [validation] pool_size per batch. Otherwise, with a
// configured pool, compatible pool tasks that contributed nothing; without
// one (or with none compatible), the row's own tasks that contributed
// nothing, compatible ones first. Only when every task contributed are the
// batch's tasks used. source says which was used, and the decision records
// it.
func (r *Run) validationTasks(batchID string, batch []mediator.Proposal) (tasks []*benchmarks.Task, source string) {
	contributing := map[string]bool{}
	for _, p := range batch {
		contributing[p.TaskID] = true
	}
	byID := map[string]*benchmarks.Task{}
	for _, t := range r.Tasks {
		byID[t.ID] = t
	}
	isCompatible := func(cand *benchmarks.Task) bool {
		for id := range contributing {
			if c := byID[id]; c != nil && compatible(c, cand, r.Config.Validation.MinTagOverlap) {
				return true
			}
		}
		return false
	}
	if len(r.ValidateSplit) > 0 {
		return r.drawValidation(batchID, r.ValidateSplit, isCompatible), "validation split"
	}
	if len(r.ValidationPool) > 0 {
		var picked []*benchmarks.Task
		for _, cand := range r.ValidationPool {
			if !contributing[cand.ID] && isCompatible(cand) {
				picked = append(picked, cand)
			}
		}
		picked = r.sample(batchID, picked, r.Config.Validation.PoolSize)
		sort.Slice(picked, func(a, b int) bool { return picked[a].ID < picked[b].ID })
		if len(picked) > 0 {
			return picked, "held-out pool"
		}
	}
	var apart []*benchmarks.Task
	for _, t := range r.Tasks {
		if !contributing[t.ID] {
			apart = append(apart, t)
		}
	}
	if len(apart) > 0 {
		return r.drawValidation(batchID, apart, isCompatible), "row tasks apart from the batch's"
	}
	var out []*benchmarks.Task
	for id := range contributing {
		if t := byID[id]; t != nil {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out, "batch tasks (every task of the row contributed a proposal)"
}

// drawValidation draws up to [validation] pool_size of candidates for a
// batch: those compatible with its tasks first, then the rest, sorted by id.
func (r *Run) drawValidation(batchID string, candidates []*benchmarks.Task, isCompatible func(*benchmarks.Task) bool) []*benchmarks.Task {
	var first, rest []*benchmarks.Task
	for _, cand := range candidates {
		if isCompatible(cand) {
			first = append(first, cand)
		} else {
			rest = append(rest, cand)
		}
	}
	picked := r.sample(batchID, first, r.Config.Validation.PoolSize)
	picked = append(picked, r.sample(batchID+"/rest", rest, r.Config.Validation.PoolSize-len(picked))...)
	sort.Slice(picked, func(a, b int) bool { return picked[a].ID < picked[b].ID })
	return picked
}

// sample draws at most n of tasks (all when n <= 0 and tasks are fewer).
// Each batch draws its own sample, so successive candidates are not all
// judged on the same few tasks; the draw is recorded with the decision and
// reproducible from the run's seed.
func (r *Run) sample(key string, tasks []*benchmarks.Task, n int) []*benchmarks.Task {
	out := slices.Clone(tasks)
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	if r.Config.Validation.PoolSize <= 0 {
		return out
	}
	if n <= 0 {
		return nil
	}
	if len(out) > n {
		rng := newRand(uint64(trialSeed(r.Spec.Seed, "pool/"+key)))
		rng.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
		out = out[:n]
	}
	return out
}

func compatible(a, b *benchmarks.Task, minOverlap int) bool {
	if a.Category() != "" && a.Category() == b.Category() {
		return true
	}
	// Distinct tags: a tag listed twice is still one shared interest.
	tags := a.Tags()
	slices.Sort(tags)
	overlap := 0
	for _, t := range slices.Compact(tags) {
		if slices.Contains(b.Tags(), t) {
			overlap++
		}
	}
	return minOverlap > 0 && overlap >= minOverlap
}

// validate runs the current and the candidate executor skill on the
// validation tasks with paired seeds, as the gate asks, and decides. The
// tasks and seeds follow the batch; key names the trials (the batch, or a
// tournament candidate validated beside others of its batch).
func (r *Run) validate(ctx context.Context, l skillLine, batchID, key string, batch []mediator.Proposal, current, candidate, dir string) (gate.Decision, error) {
	vc := r.Config.Validation
	cfg := gateConfig(vc, uint64(trialSeed(r.Spec.Seed, "gate/"+batchID)))
	tasks, source := r.validationTasks(batchID, batch)
	byID := map[string]*benchmarks.Task{}
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		byID[t.ID], ids[i] = t, t.ID
	}
	if !vc.Enabled {
		d := gate.Decision{Accept: true, Rule: "disabled", Reason: "validation is disabled in [validation]", Final: true}
		return d, durable.WriteJSON(filepath.Join(dir, rundir.DecisionFile), map[string]any{"decision": d, "tasks": ids, "task_source": source})
	}
	session := gate.NewSession(cfg, ids)
	var trials []gate.Trial
	for {
		reqs := session.Next()
		if len(reqs) == 0 {
			break
		}
		results := make([]gate.Trial, len(reqs))
		sem := make(chan struct{}, max(1, r.Concurrency))
		var wg sync.WaitGroup
		for i, req := range reqs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				skill := current
				if req.Arm == gate.Candidate {
					skill = candidate
				}
				arm := string(req.Arm)
				trialID := rundir.ValidationTrialID(key, arm, req.Task, req.Index)
				// Paired seeds: both arms of one (task, index) share the seed.
				seed := trialSeed(r.Spec.Seed, fmt.Sprintf("%s/%s/%d", batchID, req.Task, req.Index))
				tr := r.Trials.Run(ctx, executor.TrialSpec{
					Task: byID[req.Task], Agent: r.validator(l), ExecutorSkill: skill,
					JobDir: filepath.Join(dir, rundir.ValidationTrialDir(arm, req.Task, req.Index)),
					RunID:  r.labelRun(), Row: r.Spec.Name, TrialID: trialID, Seed: seed,
					Caller: rundir.ValidationCaller(trialID).String(),
				})
				r.emit(Event{Kind: EventValidationTrialDone, Task: req.Task, Status: string(tr.Status), Reward: tr.Reward,
					Message: "batch " + batchID + ", " + arm})
				results[i] = gateTrial(req, tr)
			}()
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return gate.Decision{}, err
		}
		// Validation trials are paid for too, whatever happens next.
		if err := r.saveSpend(); err != nil {
			return gate.Decision{}, err
		}
		if err := r.Ledger.Check(); err != nil {
			return gate.Decision{}, err
		}
		for _, t := range results {
			if err := session.Record(t); err != nil {
				return gate.Decision{}, fmt.Errorf("record validation trial of batch %s: %w", batchID, err)
			}
			trials = append(trials, t)
		}
	}
	d := session.Decision()
	// The error rates at the size validated on, so a reader sees how far to
	// trust the decision (a table lookup at the defaults, else seconds).
	if rates, err := gate.ErrorRatesFor(cfg, len(ids)); err == nil {
		d.ErrorRates = &rates
	}
	err := durable.WriteJSON(filepath.Join(dir, rundir.DecisionFile), map[string]any{
		"batch_id": batchID, "tasks": ids, "task_source": source, "config": cfg, "decision": d, "trials": trials,
		"trials_spent": session.TrialsSpent(),
	})
	return d, err
}

// gateConfig is the gate's configuration from [validation].
func gateConfig(vc config.Validation, seed uint64) gate.Config {
	return gate.Config{Rule: vc.Rule, TrialsPerTask: vc.TrialsPerTask, MaxTrialsPerTask: vc.MaxTrials,
		Margin: vc.Margin, Threshold: vc.Threshold, Tolerance: vc.Tolerance, EarlyStop: vc.EarlyStop,
		RequireAllUsable: vc.RequireUsable, Seed: seed}
}

// gateTrial turns a validation trial into the gate's evidence. A scored
// trial keeps its reward. A trial the agent itself failed (an agent error
// not caused by the model API) is a failure, reward 0, on either arm alike:
// dropping it would favour a skill that makes the agent break over one that
// makes it fail honestly. Every other outcome (environment or verifier
// failure, model API failure, budget stop, cancellation) says nothing about
// the skill and is unusable. An agent that stops without submitting or runs
// out of turns is scored by the verifier like any other.
func gateTrial(req gate.TrialRequest, tr *executor.Trace) gate.Trial {
	out := gate.Trial{Task: req.Task, Arm: req.Arm, Index: req.Index}
	if tr == nil {
		return out
	}
	out.Status = string(tr.Status)
	switch {
	case tr.Usable():
		v := *tr.Reward
		out.Reward = &v
	case tr.AgentFault():
		zero := 0.0
		out.Reward = &zero
	}
	return out
}

// adopt writes a new skill version atomically, snapshots the old and the new
// one, and records the provenance.
func (r *Run) adopt(it int, l skillLine, role conditions.Role, old *skills.Skill, content []byte, prov Provenance) (rundir.SkillUpdate, error) {
	if !r.Spec.Policy.Allows(role) {
		return rundir.SkillUpdate{}, fmt.Errorf("refusing to change the %s skill: policy %s does not allow it", role, r.Spec.Policy)
	}
	snaps := filepath.Join(r.Dir.Path, l.snaps)
	oldPath, err := skills.Snapshot(snaps, role, old)
	if err != nil {
		return rundir.SkillUpdate{}, err
	}
	parsed, err := skills.Parse(content)
	if err != nil {
		return rundir.SkillUpdate{}, fmt.Errorf("new %s skill is invalid: %w", role, err)
	}
	newPath, err := skills.Snapshot(snaps, role, parsed)
	if err != nil {
		return rundir.SkillUpdate{}, err
	}
	written, err := l.store.Write(role, content)
	if err != nil {
		return rundir.SkillUpdate{}, err
	}
	prov.OldHash, prov.NewHash = old.Hash, written.Hash
	prov.OldSnapshot, _ = filepath.Rel(r.Dir.Path, oldPath)
	prov.NewSnapshot, _ = filepath.Rel(r.Dir.Path, newPath)
	prov.Time = time.Now().UTC()
	if err := r.updates.Append(prov); err != nil {
		return rundir.SkillUpdate{}, err
	}
	return rundir.SkillUpdate{Role: l.roleOf(role), ProvenanceID: prov.ID, OldHash: old.Hash, NewHash: written.Hash}, nil
}

func (r *Run) reflect(ctx context.Context, it int, role conditions.Role) ([]rundir.SkillUpdate, error) {
	pe, err := r.reflectionEntries(role)
	if err != nil {
		return nil, err
	}
	rc := r.Config.Reflection
	seed := trialSeed(r.Spec.Seed, fmt.Sprintf("pairs/%s/%d", role, it))
	pairs := mediator.FormPairs(pe, mediator.PairConfig{MaxPairs: rc.MaxPairs, BucketFraction: rc.BucketFraction,
		MinRewardGap: rc.MinRewardGap}, seed)
	current, err := r.store.Read(role)
	if err != nil {
		return nil, err
	}
	rf := *r.reflector
	rf.Caller = rundir.ReflectorCaller(role, it).String()
	out, err := rf.Reflect(ctx, role, string(current.Content), pairs)
	if err != nil {
		if r.stopsRun(ctx, err) {
			return nil, fmt.Errorf("reflect on the %s skill: %w", role, err)
		}
		out = mediator.Reflection{Outcome: "error", Reasoning: "the Reflector's model failed: " + err.Error()}
	}
	rec := reflectionRecord{Role: string(role), Iteration: it, Outcome: out.Outcome, PairSeed: seed,
		Similarity: out.Similarity, ChangedWords: out.ChangedWords, Reasoning: out.Reasoning, Time: time.Now().UTC()}
	for _, p := range pairs {
		rec.Pairs = append(rec.Pairs, [2]string{p.Better.ID, p.Worse.ID})
	}
	var updates []rundir.SkillUpdate
	if out.Changed {
		prov := Provenance{ID: fmt.Sprintf("%s/reflection-i%04d", role, it), Role: string(role), Flow: "reflection",
			Iteration: it, PairIDs: rec.Pairs, PairSeed: seed}
		u, err := r.adopt(it, r.labLine(), role, current, []byte(out.Content), prov)
		if err != nil {
			return nil, err
		}
		rec.Provenance = prov.ID
		updates = append(updates, u)
		r.emit(Event{Kind: EventSkillUpdate, Iteration: it, Message: string(role) + " skill updated by reflection"})
	}
	if err := r.reflections.Append(rec); err != nil {
		return nil, err
	}
	return updates, nil
}

// reflectionEntries are the role's history entries the Reflector may pair:
// plans and proposals with an outcome for the Planner, reports with one for
// the Mediator. FormPairs then pairs only entries of the same kind, so each
// pair compares two decisions of one kind by the outcome that kind is
// credited with (see rundir.History): a plan by its own trial, a report by
// the trial it informed, a proposal by what followed its batch's decision.
// A proposal still buffered has no outcome yet and does not join.
func (r *Run) reflectionEntries(role conditions.Role) ([]mediator.PairEntry, error) {
	kinds := map[conditions.Role][]string{
		conditions.RolePlanner:  {rundir.EntryPlan, rundir.EntryProposal},
		conditions.RoleMediator: {rundir.EntryReport},
	}[role]
	entries := r.history.Entries(func(e *rundir.Entry) bool {
		return e.Role == string(role) && e.Reward != nil && slices.Contains(kinds, e.Kind)
	})
	var pe []mediator.PairEntry
	for _, e := range entries {
		pe = append(pe, pairEntry(e))
	}
	return pe, nil
}

// pairEntry is a rewarded history entry as the Reflector sees it. A
// withheld report says so: withholding is itself a decision of the
// Mediator's protocol, and an empty text would hide it.
func pairEntry(e rundir.Entry) mediator.PairEntry {
	content := e.Content
	if e.Withheld {
		content = strings.TrimSpace(withheldNote + "\n" + content)
	}
	var reward float64
	if e.Reward != nil {
		reward = *e.Reward
	}
	pe := mediator.PairEntry{ID: e.ID, Role: e.Role, Kind: e.Kind, TaskID: e.TaskID, Iteration: e.Iteration, Content: content,
		Reward: reward, Source: e.Source}
	if t := e.Trial; t != nil {
		pe.Outcome = mediator.Outcome{Status: t.Status, Reward: t.Reward, TestsPassed: t.TestsPassed,
			TestsFailed: t.TestsFailed, TestsTotal: t.TestsTotal}
	}
	return pe
}

const withheldNote = "[withheld: the Mediator gave the Planner no report for this trial]"

// recordUpdates writes the skill updates committed in iteration it to the
// updates table, each once, before the iteration's metrics part: the part
// marks the iteration done, so a crash in between redoes the iteration and
// rewrites (or removes) this file too.
func (r *Run) recordUpdates(it int, updates []rundir.SkillUpdate) error {
	rows := make([]rundir.UpdateRow, 0, len(updates))
	for _, u := range updates {
		rows = append(rows, rundir.UpdateRow{RunID: r.runID(), MatrixID: rundir.Nullable(r.MatrixID), Row: r.Spec.Name,
			Seed: r.Spec.Seed, Iteration: int32(it), Role: u.Role, ProvenanceID: u.ProvenanceID,
			OldHash: u.OldHash, NewHash: u.NewHash})
	}
	if err := rundir.WriteUpdatesPart(r.Dir.MetricsDir(), it, rows); err != nil {
		return fmt.Errorf("record the skill updates of iteration %d: %w", it, err)
	}
	return nil
}

// orZero is *p, or the zero value for nil.
func orZero[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
