package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
)

// taskRun is one task's work in one iteration: plan, trial, delayed
// rewards, feedback for the next iteration, and an executor-skill proposal.
// Each step reports whether the task's work goes on; a step that ends it
// has already filled the outcome.
type taskRun struct {
	r       *Run
	it      int
	task    *benchmarks.Task
	in      *iterationInput
	trialID string
	student string
	// entryTask keys the trial's history entries and its files (trace,
	// report, job directory): its task, and its student when several
	// students attempt the task in one iteration.
	entryTask string
	row       rundir.MetricRow
	// tap collects what this task's work is charged, for its row.
	tap *llm.Tap
	out taskOutcome
	// prior is the prior context the plan was written from, titled, as the
	// Reflector sees it beside the plan.
	prior string
}

func (r *Run) runTask(ctx context.Context, it int, slot trialSlot, perTask int, in *iterationInput) taskOutcome {
	task := r.Tasks[slot.task]
	t := &taskRun{r: r, it: it, task: task, in: in, trialID: slotTrialID(it, task.ID, slot.student.ID, perTask), student: slot.student.ID}
	t.entryTask = task.ID
	if _, ok := in.own[slot.student.ID]; ok {
		t.out.ownSkill = slot.student.ID
	}
	if perTask > 1 {
		t.entryTask = rundir.StudentTrialKey(task.ID, slot.student.ID)
	}
	t.row = r.baseRow(it, task.ID, t.trialID, slot.student, in.hashes)
	t.row.HumanNotes = int32(len(in.notes))
	t.tap = r.trialTap(t.trialID)
	defer t.tap.Close()

	plan, ok := t.plan(ctx)
	if !ok {
		return t.out
	}
	trace, ok := t.trial(ctx, plan)
	if !ok || !t.settle(plan, trace) {
		return t.out
	}
	feedback, ok := t.feedback(ctx, plan, trace)
	if !ok || !t.propose(ctx, feedback, trace) {
		return t.out
	}
	t.end(nil)
	return t.out
}

// abort ends the task's work on an error that leaves no metric row; the
// step that calls it then reports that the task goes no further.
func (t *taskRun) abort(err error) {
	t.out.err = err
}

// end ends the task's work with its metric row, and err (nil for none).
func (t *taskRun) end(err error) {
	t.out.err = err
	t.out.row = t.r.finishRow(t.row, t.tap.Take())
}

func (t *taskRun) lab() bool { return ModelDriven(t.r.AgentKind) }

// plan is step 1: the Planner writes the plan from the prior context the
// condition allows. Agents other than the lab get no plan.
func (t *taskRun) plan(ctx context.Context) (string, bool) {
	exp := t.r.Config.Experiment
	allowed := t.r.visible(conditions.ConsumerPlannerPlan)
	header, prior := t.in.book.priorContext(allowed, t.task.ID, exp.SharedNotes, exp.PlannerContextMaxChars)
	if t.row.PlannerContextChars != nil {
		t.row.PlannerContextChars = new(int32(len(prior)))
	}
	if !t.lab() {
		return "", true
	}
	if prior != "" && t.r.sourceShown() {
		t.prior = header + ":\n" + prior
	}
	in := mediator.PlanInput{TaskID: t.task.ID, Iteration: t.it, PriorContext: prior, PriorContextHeader: header}
	in.Instruction = shown(allowed, conditions.EvidenceInstruction, t.task.Instruction)
	in.ExecutorSkill = shown(allowed, conditions.EvidenceExecutorSkill, t.in.skillText[conditions.RoleExecutor])
	in.PlannerSkill = shown(allowed, conditions.EvidencePlannerSkill, t.in.skillText[conditions.RolePlanner])
	if allowed.Has(conditions.EvidenceHumanNotes) {
		in.Notes = t.in.notes
	}
	plan, fellBack, err := t.r.plannerFor(rundir.PlannerCaller(t.trialID)).Plan(ctx, in)
	if err != nil {
		t.planFailed(ctx, err)
		return "", false
	}
	if fellBack {
		t.row.Fallbacks++
	}
	return plan, true
}

// planFailed records a trial that could not start because the Planner's
// model failed: a spent budget stops the run, any other failure costs only
// this trial.
func (t *taskRun) planFailed(ctx context.Context, err error) {
	fatal := t.r.stopsRun(ctx, err)
	t.row.Status = executor.StatusAgentError
	if fatal {
		t.out.err = fmt.Errorf("plan task %s: %w", t.task.ID, err)
		t.row.Status = executor.StatusBudgetExhausted
	}
	if werr := t.recordPlanFailure(err); werr != nil {
		t.abort(werr)
		return
	}
	// No trial runs, so this attempt's outcome cannot reward the entries
	// the earlier ones left pending: they are dropped.
	if _, serr := t.r.history.Settle(t.task.ID, t.student, t.it, t.trialID, nil, false, t.row.Status); serr != nil {
		t.abort(serr)
		return
	}
	if !fatal {
		t.r.emit(Event{Kind: EventTrialDone, Iteration: t.it, Task: t.task.ID, Status: string(t.row.Status), Message: orZero(t.row.Cause)})
	}
	t.out.row = t.r.finishRow(t.row, t.tap.Take())
}

// trial is step 2: the Executor works in a fresh sandbox and the verifier
// scores it. A job directory left by an attempt a crash cut short is
// cleared first, so its files never mix with this attempt's.
func (t *taskRun) trial(ctx context.Context, plan string) (*executor.Trace, bool) {
	jobDir := t.r.Dir.Join(rundir.JobDir(t.entryTask, t.it))
	if err := os.RemoveAll(jobDir); err != nil {
		t.abort(fmt.Errorf("clear job directory %s: %w", jobDir, err))
		return nil, false
	}
	trace := runOnTurn(ctx, t.r.Trials, executor.TrialSpec{
		Task: t.task, Agent: t.r.NewAgent(t.student), Plan: plan, ExecutorSkill: t.in.skillText[conditions.RoleExecutor],
		JobDir: jobDir,
		RunID:  t.r.labelRun(), Row: t.r.Spec.Name, Iteration: t.it, TrialID: t.trialID,
		Seed: trialSeed(t.r.Spec.Seed, t.trialID), Caller: rundir.ExecutorCaller(t.student, t.trialID).String(),
	}, func() (ended func()) {
		t.r.emit(Event{Kind: EventTrialStart, Iteration: t.it, Task: t.task.ID})
		return func() { t.r.emit(Event{Kind: EventTrialEnd, Iteration: t.it, Task: t.task.ID}) }
	})
	if ctx.Err() != nil {
		t.abort(ctx.Err())
		return nil, false
	}
	fillTraceColumns(&t.row, trace)
	for _, w := range trace.Warnings {
		t.out.warnings = append(t.out.warnings, t.task.ID+": "+w)
	}
	if err := durable.WriteJSON(t.r.Dir.Join(rundir.TracePath(t.entryTask, t.it)), trace); err != nil {
		t.abort(err)
		return nil, false
	}
	// Spent is spent, even if the process dies before the checkpoint.
	if err := t.r.saveSpend(); err != nil {
		t.abort(err)
		return nil, false
	}
	t.r.emit(Event{Kind: EventTrialDone, Iteration: t.it, Task: t.task.ID, Status: string(trace.Status), Reward: trace.Reward,
		Warnings: trace.Warnings, Message: trace.Cause})
	return trace, true
}

// settle is step 3: the plan is recorded, then the trial's reward settles
// it (a plan is credited with the trial it planned) along with the entries
// left pending by this task's earlier work (the report that informed this
// plan, the proposals adopted since). An unusable trace ends the task's
// work here.
func (t *taskRun) settle(plan string, trace *executor.Trace) bool {
	if t.lab() {
		if err := t.r.history.Add(rundir.Entry{ID: t.entryID(rundir.EntryPlan), Role: string(conditions.RolePlanner),
			Kind: rundir.EntryPlan, TaskID: t.task.ID, Iteration: t.it, Content: plan, Source: t.prior, Trial: trialOutcome(trace),
			SkillHash: t.in.hashes[conditions.RolePlanner], TrialID: t.trialID}); err != nil {
			t.abort(err)
			return false
		}
	}
	if _, err := t.r.history.Settle(t.task.ID, t.student, t.it, t.trialID, trace.Reward, trace.Usable(), trace.Status); err != nil {
		t.abort(err)
		return false
	}
	if trace.Usable() {
		return true
	}
	var err error
	if trace.Status == executor.StatusBudgetExhausted {
		err = llm.ErrBudgetExhausted
	}
	t.end(err)
	return false
}

// feedback is step 4: what the next iteration may learn from this trial,
// a trace summary or a Mediator report, as the condition says.
// Both are cut from one evidence object through the visibility contract.
func (t *taskRun) feedback(ctx context.Context, plan string, trace *executor.Trace) (string, bool) {
	ev := &trialEvidence{trace: trace, plan: plan, maxChars: t.r.Config.Experiment.TaskOutputMaxChars, verifier: t.r.Config.Experiment.Verifier(),
		transcript: func() string { return t.condensedTranscript(trace) }}
	switch t.r.Spec.Condition.PlannerContext() {
	case conditions.ContextTraceSummaries:
		// A summary is shown to the Planner when it plans and proposes, and
		// to the compactor that shortens it: it carries only what all of
		// them may see.
		allowed := t.r.visible(conditions.ConsumerPlannerPlan) & t.r.visible(conditions.ConsumerCompactor)
		return t.summary(ctx, ev.digest(allowed))
	case conditions.ContextMediatorReport:
		return t.report(ctx, ev.digest(t.r.visible(conditions.ConsumerMediator)))
	}
	return "", true
}

func (t *taskRun) summary(ctx context.Context, digest mediator.TraceDigest) (string, bool) {
	summary, fellBack, err := t.r.summarise(ctx, t.task.ID, t.it, digest)
	if err != nil {
		if t.r.stopsRun(ctx, err) {
			t.end(err)
			return "", false
		}
		summary, fellBack = capText(traceSummaryText(digest), summaryCompactAbove), true
	}
	if fellBack {
		t.row.Fallbacks++
	}
	t.r.mu.Lock()
	t.r.st.Feedback.addTrace(traceNote{TaskID: t.task.ID, Iteration: t.it, Summary: summary}, t.r.Config.Experiment.FullTracesWindow)
	t.r.mu.Unlock()
	return summary, true
}

func (t *taskRun) report(ctx context.Context, digest mediator.TraceDigest) (string, bool) {
	med := *t.r.mediator
	med.Caller = rundir.MediatorCaller(t.trialID).String()
	rep, err := med.Report(ctx, t.in.skillText[conditions.RoleMediator], digest)
	if err != nil {
		if t.r.stopsRun(ctx, err) {
			t.end(fmt.Errorf("mediate task %s: %w", t.task.ID, err))
			return "", false
		}
		// A Mediator whose model failed for good reports nothing this time.
		rep = mediator.Report{Withheld: true, Reason: "mediator call failed: " + err.Error(), FellBack: true}
	}
	if rep.FellBack {
		t.row.Fallbacks++
	}
	withheld := rep.Withheld
	t.row.ReportWithheld = &withheld
	id := t.entryID(rundir.EntryReport)
	rel := rundir.ReportPath(t.entryTask, t.it)
	hash := t.in.hashes[conditions.RoleMediator]
	if err := durable.WriteJSON(filepath.Join(t.r.Dir.Path, rel), map[string]any{
		"entry_id": id, "task_id": t.task.ID, "iteration": t.it, "trial_id": t.trialID,
		"withheld": rep.Withheld, "reason": rep.Reason, "abstraction_level": rep.AbstractionLevel,
		"content": rep.Content, "protocol_hash": hash,
	}); err != nil {
		t.abort(err)
		return "", false
	}
	if err := t.r.history.Add(rundir.Entry{ID: id, Role: string(conditions.RoleMediator), Kind: rundir.EntryReport,
		TaskID: t.task.ID, Iteration: t.it, Content: rep.Content, Path: rel, Withheld: rep.Withheld,
		SkillHash: hash, TrialID: t.trialID, Trial: digestOutcome(digest)}); err != nil {
		t.abort(err)
		return "", false
	}
	if rep.Withheld {
		return "", true
	}
	t.r.mu.Lock()
	t.r.st.Feedback.Reports[t.task.ID] = reportNote{TaskID: t.task.ID, Iteration: t.it, EntryID: id, Content: rep.Content}
	t.r.mu.Unlock()
	return rep.Content, true
}

// propose is step 5: an executor-skill proposal, when the policy and the
// feedback allow one. It is buffered for the next Advisor batch.
func (t *taskRun) propose(ctx context.Context, feedback string, trace *executor.Trace) bool {
	allowed := t.r.visible(conditions.ConsumerPlannerProposal)
	if !t.r.Spec.Policy.Executor || feedback == "" || !t.lab() || allowed.Empty() {
		return true
	}
	t.out.evidence = &studentEvidence{student: t.student, trialID: t.trialID, taskID: t.task.ID, iteration: t.it,
		feedback: feedback, outcome: outcome(trace)}
	in := mediator.ProposalInput{TaskID: t.task.ID, Iteration: t.it, Feedback: feedback,
		FeedbackKind: string(t.r.Spec.Condition.ProposalFeedback())}
	in.Instruction = shown(allowed, conditions.EvidenceInstruction, t.task.Instruction)
	in.ExecutorSkill = shown(allowed, conditions.EvidenceExecutorSkill, t.in.skillText[conditions.RoleExecutor])
	in.PlannerSkill = shown(allowed, conditions.EvidencePlannerSkill, t.in.skillText[conditions.RolePlanner])
	if allowed.Has(conditions.EvidenceRejections) {
		in.RecentRejections = t.r.recentRejections()
	}
	if allowed.Has(conditions.EvidenceOutcome) {
		in.Outcome = outcome(trace)
	}
	ans, fellBack, err := t.r.plannerFor(rundir.ProposalCaller(t.trialID)).Propose(ctx, in)
	if err != nil {
		if t.r.stopsRun(ctx, err) {
			t.end(fmt.Errorf("propose for task %s: %w", t.task.ID, err))
			return false
		}
		ans, fellBack = mediator.ProposalAnswer{}, true
	}
	if fellBack {
		t.row.Fallbacks++
	}
	if !ans.Propose {
		return true
	}
	id := t.entryID(rundir.EntryProposal)
	if err := t.r.history.Add(rundir.Entry{ID: id, Role: string(conditions.RolePlanner), Kind: rundir.EntryProposal,
		TaskID: t.task.ID, Iteration: t.it, Content: ans.NewContent, Source: shownSource(t.r.sourceShown(), feedback), Trial: trialOutcome(trace),
		SkillHash: t.in.hashes[conditions.RolePlanner], TrialID: t.trialID}); err != nil {
		t.abort(err)
		return false
	}
	// The proposal came from this trial's plan and, under a mediator
	// condition, its report: name those entries that exist.
	var entryIDs []string
	for _, kind := range []string{rundir.EntryPlan, rundir.EntryReport} {
		eid := t.entryID(kind)
		if _, ok := t.r.history.Entry(eid); ok {
			entryIDs = append(entryIDs, eid)
		}
	}
	t.out.proposal = &mediator.Proposal{ID: id, TaskID: t.task.ID, Student: t.student, Iteration: t.it, EntryIDs: entryIDs,
		OldContent: ans.OldContent, NewContent: ans.NewContent, Reasoning: ans.Reasoning,
		Digest: feedback, DigestKind: string(t.r.Spec.Condition.ProposalFeedback()), Outcome: outcome(trace)}
	t.row.ProposalBuffered = true
	return true
}

// entryID names one of the trial's history entries.
func (t *taskRun) entryID(kind string) string { return t.r.entryID(t.it, t.entryTask, kind) }
