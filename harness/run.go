package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
)

// TrialRunner runs one trial and always returns its trace.
type TrialRunner interface {
	Run(ctx context.Context, spec executor.TrialSpec) *executor.Trace
}

// AgentFactory returns the agent for one trial of a student (e.g. "student-1").
type AgentFactory func(student string) executor.Agent

// Run is one row: one condition, one skill-update policy, one lab and one
// seed over the tasks and iterations, writing into its run directory.
type Run struct {
	Spec       RowSpec
	Config     *config.Config
	Tasks      []*benchmarks.Task
	Iterations int
	AgentKind  string
	Offline    bool
	MatrixID   string
	Dir        *rundir.Dir
	// Concurrency bounds the tasks of an iteration that run at once.
	Concurrency int
	// ForceResume continues even when the configuration changed.
	ForceResume bool
	// ValidationPool holds the tasks candidates are validated on (the
	// validation split, else [validation] pool).
	ValidationPool []*benchmarks.Task
	// ValidateSplit, when set, is the validation split: candidates are
	// validated on it and nowhere else.
	ValidateSplit []*benchmarks.Task
	// HeldOut are tasks only evaluation touches: after the last iteration,
	// the initial and final skills are scored on each EvalTrials times.
	HeldOut    []*benchmarks.Task
	EvalTrials int

	Trials   TrialRunner
	NewAgent AgentFactory
	Clients  *Clients
	// Calls, when set, is the call log the clients record to; a record it
	// failed to write fails the next checkpoint.
	Calls  *CallLog
	Ledger *llm.Ledger
	// Meta is how the run was started, recorded with a forced resume's
	// configuration.
	Meta config.RunMeta
	// spendMu serializes the spend's saves: the journal record after every
	// trial, and the checkpoint that folds the journal into state.json.
	spendMu sync.Mutex
	// MatrixLedger, for a row of a matrix, is the matrix-wide ledger Ledger
	// charges; its wall clock is saved with the row's state.
	MatrixLedger *llm.Ledger
	// Events receives progress, one event at a time; it may be nil.
	Events func(Event)
	// eventsMu serialises Events: trials run side by side.
	eventsMu sync.Mutex
	// Barrier, when set, is the diffusion barrier of a network experiment,
	// called after each iteration's evolution steps (see BarrierFunc).
	Barrier BarrierFunc
	// BarrierInterval is how many iterations lie between two calls of
	// Barrier; 0 means every iteration.
	BarrierInterval int

	st          *State
	history     *rundir.History
	rejected    *durable.Log
	updates     *durable.Log
	reflections *durable.Log
	// tourLog and metaLog are history/tournament.jsonl and
	// history/meta_reviews.jsonl, opened on first use (tournament.go).
	tourLog, metaLog *durable.Log
	// spend is the spend journal; spendTap collects the charges it has
	// not recorded yet (see spend.go).
	spend    *durable.Log
	spendTap *llm.Tap
	store    *skills.Store
	// lines are the own executor skills of the lab's students that hold
	// one, in roster order.
	lines     []skillLine
	planner   *mediator.Planner
	mediator  *mediator.Mediator
	advisor   *mediator.Advisor
	reflector *mediator.Reflector
	mu        sync.Mutex
}

// EventKind says what happened in an Event.
type EventKind string

// The events a run reports, in the order they happen.
const (
	EventIterationStart EventKind = "iteration_start"
	EventTrialStart     EventKind = "trial_start"
	// EventTrialEnd says a started trial left its place (its sandbox work
	// is over); EventTrialDone follows once its records are written.
	// Between a Start and its End the trial counts against -j.
	EventTrialEnd            EventKind = "trial_end"
	EventTrialDone           EventKind = "trial_done"
	EventValidationTrialDone EventKind = "validation_trial_done"
	EventSkillUpdate         EventKind = "skill_update"
	EventIterationDone       EventKind = "iteration_done"
	EventEvaluationStart     EventKind = "evaluation_start"
	EventEvaluationTrialDone EventKind = "evaluation_trial_done"
	EventRunDone             EventKind = "run_done"
	// EventLeftoversRemoved says, on a resume, what earlier processes of
	// the run left running and was removed before any trial started.
	EventLeftoversRemoved EventKind = "leftovers_removed"
	// EventRowHeld says a matrix row is skipped because another process
	// holds it (Message says which).
	EventRowHeld EventKind = "row_held"
	// EventStateRebuilt says, on a resume, that a row's state.json was
	// unreadable or missing and was rebuilt from its other records
	// (Message says so in full).
	EventStateRebuilt EventKind = "state_rebuilt"
)

// Event is a progress notification.
type Event struct {
	Row       string
	Kind      EventKind
	Iteration int
	Task      string
	Status    string
	Reward    *float64
	Message   string
	// Warnings are a trial's trace warnings (settings its sandbox could
	// not honour).
	Warnings []string
	// Spend is what the whole run or matrix has spent when the event fires.
	Spend llm.Usage
}

// Result sums up a finished (or stopped) run.
type Result struct {
	Status      rundir.Status // completed | interrupted | budget_exhausted | failed
	Iterations  int
	Trials      int
	EnvFailures int
	Scored      int
	Err         error
}

// ErrInterrupted reports a run stopped by a signal with its state saved.
var ErrInterrupted = errors.New("interrupted")

func (r *Run) emit(e Event) {
	if r.Events != nil {
		e.Row = r.Spec.Name
		r.eventsMu.Lock()
		defer r.eventsMu.Unlock()
		r.Events(e)
	}
}

// Iterate runs (or resumes) the row to its end, one iteration after another.
func (r *Run) Iterate(ctx context.Context) (res Result) {
	if res, done := r.alreadyCompleted(); done {
		return res
	}
	if err := r.open(); err != nil {
		// A refused resume leaves the directory exactly as it was.
		if !leavesStatus(err) {
			r.finish(rundir.StatusFailed, err)
		}
		return Result{Status: rundir.StatusFailed, Err: err}
	}
	defer r.close()
	res.Status = rundir.StatusCompleted
	// A resumed run reports the iterations done so far, not only this
	// invocation's.
	res.Iterations = r.st.CompletedIteration
	for it := r.st.CompletedIteration + 1; it <= r.Iterations; it++ {
		if err := ctx.Err(); err != nil {
			res.Status, res.Err = rundir.StatusInterrupted, ErrInterrupted
			break
		}
		if err := r.Ledger.Check(); err != nil {
			res.Status, res.Err = rundir.StatusBudgetExhausted, err
			break
		}
		counts, err := r.iteration(ctx, it)
		res.Trials += counts.trials
		res.EnvFailures += counts.envFailures
		res.Scored += counts.scored
		res.Iterations = r.st.CompletedIteration
		if err != nil {
			res.Status, res.Err = stopped(ctx, err)
			break
		}
	}
	if res.Status == rundir.StatusCompleted {
		if err := r.evaluate(ctx); err != nil {
			res.Status, res.Err = stopped(ctx, err)
		}
	}
	if res.Status != rundir.StatusCompleted {
		// The stopped iteration is not checkpointed, but what it spent was spent.
		if err := r.saveSpend(); err != nil {
			res.Err = errors.Join(res.Err, err)
		}
	}
	r.finish(res.Status, res.Err)
	r.emit(Event{Kind: EventRunDone, Status: string(res.Status)})
	return res
}

// stopped is the status and error of a run stopped by err.
func stopped(ctx context.Context, err error) (rundir.Status, error) {
	switch {
	case ctx.Err() != nil:
		return rundir.StatusInterrupted, ErrInterrupted
	case errors.Is(err, llm.ErrBudgetExhausted):
		return rundir.StatusBudgetExhausted, err
	}
	if ns := (*NeighbourStoppedError)(nil); errors.As(err, &ns) && ns.Status == rundir.StatusBudgetExhausted {
		return rundir.StatusBudgetExhausted, err
	}
	return rundir.StatusFailed, err
}

type iterationCounts struct{ trials, envFailures, scored int }

// taskOutcome is what one task contributed to an iteration.
type taskOutcome struct {
	row      rundir.MetricRow
	proposal *mediator.Proposal
	// ownSkill names the student whose own skill the proposal is for;
	// empty for the lab's skill.
	ownSkill string
	// evidence is what routing between students may pass on of the trial;
	// nil when it gave no feedback.
	evidence *studentEvidence
	// warnings are the trial's trace warnings, as "task: message".
	warnings []string
	err      error
}

func (r *Run) iteration(ctx context.Context, it int) (iterationCounts, error) {
	r.emit(Event{Kind: EventIterationStart, Iteration: it})
	in, err := r.iterationInput(it)
	if err != nil {
		return iterationCounts{}, err
	}
	done := gatherOutcomes(r.runTasks(ctx, it, in))
	if ctx.Err() != nil {
		return done.counts, ctx.Err()
	}
	if done.err != nil {
		// A budget stop leaves the iteration unfinished, like an
		// interruption: nothing of it is checkpointed, and a resume with a
		// larger budget runs it again whole, so the dataset has no holes
		// and its co-evolution step is not skipped.
		return done.counts, done.err
	}
	if err := r.closeIteration(ctx, it, done); err != nil {
		return done.counts, err
	}
	r.emit(Event{Kind: EventIterationDone, Iteration: it})
	return done.counts, nil
}

// iterationInput is what every task of an iteration starts from.
type iterationInput struct {
	notes     []string
	hashes    map[conditions.Role]string
	skillText map[conditions.Role]string
	// own are the own executor skills of the students holding one.
	own map[string]*skills.Skill
	// book is the feedback as it was when the iteration began: concurrent
	// tasks never see each other's fresh results.
	book feedbackBook
}

func (r *Run) iterationInput(it int) (iterationInput, error) {
	notes, err := r.pickUpNotes(it)
	if err != nil {
		return iterationInput{}, err
	}
	hashes, err := r.store.Hashes()
	if err != nil {
		return iterationInput{}, fmt.Errorf("read skills: %w", err)
	}
	skillText := map[conditions.Role]string{}
	for _, role := range conditions.SkillRoles() {
		s, err := r.store.Read(role)
		if err != nil {
			return iterationInput{}, fmt.Errorf("read %s skill: %w", role, err)
		}
		skillText[role] = string(s.Content)
	}
	// The Planner reads the latest meta-review note with its skill.
	skillText[conditions.RolePlanner] = mediator.WithMetaReview(skillText[conditions.RolePlanner], r.metaNote())
	own, err := r.ownSkillTexts()
	if err != nil {
		return iterationInput{}, err
	}
	r.mu.Lock()
	book := r.st.Feedback.clone()
	r.mu.Unlock()
	return iterationInput{notes: notes, hashes: hashes, skillText: skillText, own: own, book: book}, nil
}

// runTasks runs one trial per task, at most Concurrency at once, and
// returns the outcomes in task order.
func (r *Run) runTasks(ctx context.Context, it int, in iterationInput) []taskOutcome {
	lab, _ := r.Config.Lab(r.Spec.Lab)
	slots := assignTrials(lab.Roster(), lab.Assign(), it, len(r.Tasks))
	perTask := trialsPerTask(lab)
	outcomes := make([]taskOutcome, len(slots))
	r.boundedParallel(ctx, len(slots), func(i int) { outcomes[i] = r.runTask(ctx, it, slots[i], perTask, in.forStudent(slots[i].student.ID)) },
		func(i int, err error) { outcomes[i].err = err })
	return outcomes
}

// boundedParallel calls work(i) for every i below n, at most Concurrency
// at once, and waits for all of them; an i that gets no turn before ctx
// ends is passed to skipped with ctx's error instead.
func (r *Run) boundedParallel(ctx context.Context, n int, work func(i int), skipped func(i int, err error)) {
	sem := make(chan struct{}, max(1, r.Concurrency))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				skipped(i, ctx.Err())
				return
			}
			defer func() { <-sem }()
			work(i)
		}()
	}
	wg.Wait()
}

// iterationOutcome is what an iteration's tasks produced together.
type iterationOutcome struct {
	counts    iterationCounts
	rows      []rundir.MetricRow
	proposals []mediator.Proposal
	// ownProposals are the proposals for students' own skills, by student.
	ownProposals map[string][]mediator.Proposal
	// evidence is every student's evidence of the iteration, for routing.
	evidence []studentEvidence
	warnings []string
	// err is the error that keeps the iteration from being checkpointed. A
	// budget stop and any other error both do; another error wins, as it is
	// what needs fixing.
	err error
}

func gatherOutcomes(outcomes []taskOutcome) iterationOutcome {
	var done iterationOutcome
	var budgetErr, otherErr error
	for _, o := range outcomes {
		done.warnings = append(done.warnings, o.warnings...)
		switch {
		case o.err == nil:
		case !errors.Is(o.err, llm.ErrBudgetExhausted):
			if otherErr == nil {
				otherErr = o.err
			}
		case budgetErr == nil:
			budgetErr = o.err
		}
		if o.row.TaskID == "" {
			continue
		}
		done.counts.trials++
		if o.row.EnvFailure {
			done.counts.envFailures++
		}
		if o.row.Reward != nil {
			done.counts.scored++
		}
		done.rows = append(done.rows, o.row)
		if o.evidence != nil {
			ev := *o.evidence
			ev.proposal = o.proposal
			done.evidence = append(done.evidence, ev)
		}
		switch {
		case o.proposal == nil:
		case o.ownSkill != "":
			if done.ownProposals == nil {
				done.ownProposals = map[string][]mediator.Proposal{}
			}
			done.ownProposals[o.ownSkill] = append(done.ownProposals[o.ownSkill], *o.proposal)
		default:
			done.proposals = append(done.proposals, *o.proposal)
		}
	}
	done.err = cmp.Or(otherErr, budgetErr)
	return done
}

// closeIteration runs co-evolution after the iteration's trials, in task
// order, so its decisions do not depend on which trial finished first; then
// it writes the iteration's metric rows and checkpoints.
func (r *Run) closeIteration(ctx context.Context, it int, done iterationOutcome) error {
	coevo := r.Ledger.Tap(func(caller string) bool {
		c, err := rundir.ParseCaller(caller)
		return err == nil && c.Coevo()
	})
	defer coevo.Close()
	if err := r.route(ctx, it, &done); err != nil {
		return err
	}
	r.bufferProposals(r.labLine(), done.proposals)
	for _, l := range r.lines {
		r.bufferProposals(l, done.ownProposals[l.student])
	}
	updates, err := r.evolve(ctx, it)
	if err == nil {
		err = r.diffuse(ctx, it)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	rows := done.rows
	sort.Slice(rows, func(a, b int) bool {
		return rows[a].TaskID < rows[b].TaskID || (rows[a].TaskID == rows[b].TaskID && rows[a].Student < rows[b].Student)
	})
	spreadCoevo(rows, coevoUsage(coevo.Take()))
	if err := r.recordUpdates(it, updates); err != nil {
		return err
	}
	if err := rundir.WriteMetricsPart(r.Dir.MetricsDir(), it, rows); err != nil {
		return err
	}
	r.mu.Lock()
	for _, row := range rows {
		r.st.Counts[row.Status]++
	}
	for _, w := range done.warnings {
		r.st.Warnings[w]++
	}
	r.mu.Unlock()
	return r.checkpoint(it)
}

// trialSeed derives a trial's seed from the run seed and the trial id, so
// scheduling order never changes what a trial sees.
func trialSeed(seed int64, id string) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, id)
	return int64(h.Sum64() &^ (1 << 63))
}

// stopsRun reports whether an error must stop the run: a spent budget or a
// cancellation. Any other model failure, retries exhausted, only costs the
// work it was part of.
func (r *Run) stopsRun(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, llm.ErrBudgetExhausted)
}

// plannerFor is the Planner charging its calls to caller.
func (r *Run) plannerFor(caller rundir.Caller) *mediator.Planner {
	p := *r.planner
	p.Caller = caller.String()
	return &p
}

func (r *Run) entryID(it int, task, kind string) string {
	return fmt.Sprintf("%s/i%04d/%s/%s", r.Spec.Name, it, task, kind)
}

func (r *Run) baseRow(it int, task, trialID string, student config.LabStudent, hashes map[conditions.Role]string) rundir.MetricRow {
	row := rundir.MetricRow{
		RunID: r.runID(), MatrixID: rundir.Nullable(r.MatrixID), Row: r.Spec.Name, BaselinePreset: rundir.Nullable(r.Spec.Preset),
		Condition: string(r.Spec.Condition), SkillUpdatePolicy: r.Spec.Policy.String(), Lab: r.Spec.Lab,
		Agent: r.AgentKind, Seed: r.Spec.Seed, Offline: r.Offline, Iteration: int32(it), TaskID: task,
		TrialID: trialID, Student: student.ID, Phase: rundir.PhaseTrain, VerifierFeedback: string(r.Config.Experiment.Verifier()),
		ExecutorSkillHash: hashes[conditions.RoleExecutor], PlannerSkillHash: hashes[conditions.RolePlanner],
		MediatorSkillHash: hashes[conditions.RoleMediator],
		PlannerModel:      r.modelID(conditions.RolePlanner), ExecutorModel: r.modelID(conditions.RoleExecutor),
		MediatorModel: r.modelID(conditions.RoleMediator), CompactorModel: r.modelID(conditions.RoleCompactor),
		AdvisorModel: r.modelID(conditions.RoleAdvisor), ReflectorModel: r.modelID(conditions.RoleReflector),
	}
	if ModelDriven(r.AgentKind) {
		row.PlannerContextChars = new(int32(0))
		// The student's model did the Executor's work.
		if m, err := r.Config.ModelByKey(student.ModelKey); err == nil {
			name := m.RecordedName(conditions.Role(student.ModelKey))
			row.StudentModel = new(name)
			row.ExecutorModel = new(name)
		}
	}
	return row
}

// runID is the run id of the metric rows, unique across matrices.
func (r *Run) runID() string { return rundir.RunID(r.MatrixID, r.Dir.ID) }

// modelID is the model a role is configured with, or nil when it has none
// or takes no part in this row, so the column never names a model that did
// no work.
func (r *Run) modelID(role conditions.Role) *string {
	if !r.roleWorks(role) {
		return nil
	}
	m, err := r.Config.Model(role)
	if err != nil {
		return nil
	}
	return rundir.Nullable(m.RecordedName(role))
}

// roleWorks reports whether a model role can be called in this row: the
// Planner and Executor serve the lab agent only, the Mediator runs under
// its conditions, the compactor shortens trace summaries, the Advisor
// reviews executor proposals and the Reflector revises planner or learned
// mediator skills.
func (r *Run) roleWorks(role conditions.Role) bool {
	p := r.Spec.Policy
	switch role {
	case conditions.RolePlanner, conditions.RoleExecutor:
		return ModelDriven(r.AgentKind)
	case conditions.RoleMediator:
		return r.Spec.Condition.MediatorRuns()
	case conditions.RoleCompactor:
		return r.Spec.Condition.PlannerContext() == conditions.ContextTraceSummaries
	case conditions.RoleAdvisor:
		return p.Executor
	case conditions.RoleReflector:
		return p.Planner || p.Mediator && r.Spec.Condition == conditions.LearnedMediator
	}
	return true
}

func fillTraceColumns(row *rundir.MetricRow, t *executor.Trace) {
	row.Status = t.Status
	row.EnvFailure = t.EnvFailure()
	if t.Usable() {
		v := *t.Reward
		row.Reward = &v
	}
	if t.Tests.Reported {
		row.TestsPassed, row.TestsFailed, row.TestsTotal = new(int32(t.Tests.Passed)), new(int32(t.Tests.Failed)), new(int32(t.Tests.Total))
	}
	row.TestsReported = t.Tests.Reported
	row.BuildMS = new(t.Timings.Build.Milliseconds())
	row.AgentMS = new(t.Timings.Agent.Milliseconds())
	row.VerifierMS = new(t.Timings.Verifier.Milliseconds())
	row.TrialMS = new(t.Timings.Total.Milliseconds())
	row.QueueMS = new(t.Timings.Queue.Milliseconds())
	if !t.StartedAt.IsZero() {
		row.TrialStartedAt = new(t.StartedAt.UTC())
	}
	if !t.FinishedAt.IsZero() {
		row.TrialFinishedAt = new(t.FinishedAt.UTC())
	}
	row.Warnings = append([]string{}, t.Warnings...)
	row.Cause = rundir.Nullable(t.Cause)
	row.MalformedToolCalls = int32(t.Usage.MalformedToolCalls)
}

// trialTap collects what the ledger is charged for one trial's work from
// now on: every per-trial caller path carries the trial id, so concurrent
// trials never share one. Reading it costs what the trial spent, however
// large the ledger has grown.
func (r *Run) trialTap(trialID string) *llm.Tap {
	return r.Ledger.Tap(func(caller string) bool { return ownsCaller(caller, trialID) })
}

// finishRow fills the token and cost columns from what a trial's tap
// collected, by caller.
func (r *Run) finishRow(row rundir.MetricRow, charges map[string]llm.Usage) rundir.MetricRow {
	for caller, d := range charges {
		if d.Calls == 0 && d.InputTokens == 0 && d.OutputTokens == 0 && d.CostUSD == 0 {
			continue
		}
		row.ModelCalls += int32(d.Calls)
		row.ModelFailures += int32(d.Failures)
		row.ModelRetries += int32(d.Retries)
		row.EstimatedTokens += d.EstimatedTokens
		row.CachedInputTokens += d.CachedInputTokens
		c, _ := rundir.ParseCaller(caller) // a path of no kind fills no role's columns
		switch c.Kind {
		case rundir.CallerPlanner:
			row.PlannerInputTokens += d.InputTokens
			row.PlannerOutputTokens += d.OutputTokens
			row.PlannerCostUSD += d.CostUSD
		case rundir.CallerExecutor:
			row.ExecutorInputTokens += d.InputTokens
			row.ExecutorOutputTokens += d.OutputTokens
			row.ExecutorCostUSD += d.CostUSD
		case rundir.CallerMediator:
			row.MediatorInputTokens += d.InputTokens
			row.MediatorOutputTokens += d.OutputTokens
			row.MediatorCostUSD += d.CostUSD
		case rundir.CallerCompactor:
			row.CompactorInputTokens += d.InputTokens
			row.CompactorOutputTokens += d.OutputTokens
			row.CompactorCostUSD += d.CostUSD
		}
	}
	return row
}

// ownsCaller reports whether a caller path belongs to a trial: it names
// the trial id.
func ownsCaller(caller, trialID string) bool {
	c, err := rundir.ParseCaller(caller)
	return err == nil && c.Trial == trialID
}

// traceSummaryText is the plain summary of a digest, used as is when short.
func traceSummaryText(d mediator.TraceDigest) string {
	var sb strings.Builder
	if d.Status == "" {
		// The contract let no outcome through; nothing of the trial is left.
		return ""
	}
	fmt.Fprintf(&sb, "status %s", d.Status)
	if d.Reward != nil {
		fmt.Fprintf(&sb, ", reward %.3g", *d.Reward)
	}
	if d.TestsTotal > 0 {
		fmt.Fprintf(&sb, ", tests %d/%d passed", d.TestsPassed, d.TestsTotal)
	}
	sb.WriteString("\n")
	if len(d.FailedTests) > 0 {
		fmt.Fprintf(&sb, "failed tests: %s\n", strings.Join(d.FailedTests, ", "))
	}
	if len(d.TestMessages) > 0 {
		fmt.Fprintf(&sb, "assertion messages:\n%s\n", strings.Join(d.TestMessages, "\n"))
	}
	if len(d.Errors) > 0 {
		fmt.Fprintf(&sb, "errors: %s\n", strings.Join(d.Errors, "; "))
	}
	if d.VerifierExcerpt != "" {
		fmt.Fprintf(&sb, "verifier output:\n%s\n", d.VerifierExcerpt)
	}
	if d.AgentExcerpt != "" {
		fmt.Fprintf(&sb, "agent output:\n%s\n", d.AgentExcerpt)
	}
	return strings.TrimSpace(sb.String())
}

// summaryCompactAbove is the length past which a trace summary is compacted
// by the compactor model rather than kept verbatim.
const summaryCompactAbove = 1500

func (r *Run) summarise(ctx context.Context, taskID string, it int, d mediator.TraceDigest) (string, bool, error) {
	text := traceSummaryText(d)
	if len(text) <= summaryCompactAbove {
		return text, false, nil
	}
	c := mediator.Compactor{Client: r.Clients.Get(conditions.RoleCompactor), Caller: rundir.CompactorCaller(rundir.TrialID(it, taskID)).String()}
	seed := trialSeed(r.Spec.Seed, "summary/"+taskID+strconv.Itoa(it))
	return c.SummariseTrace(ctx, seed, text, capText(text, summaryCompactAbove))
}

func (r *Run) recentRejections() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.st.RecentRejections...)
}

// noteSettle is how long a note file must have been left alone before it
// is read: a file caught while still being written would be read partly,
// and a note is never read twice.
const noteSettle = 2 * time.Second

// pickUpNotes records human notes dropped into the run's notes/ directory
// since the last iteration and returns every note picked up so far. An
// empty or freshly modified file is left for a later iteration.
func (r *Run) pickUpNotes(it int) ([]string, error) {
	dir := r.Dir.Join(rundir.NotesDir)
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read notes: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if _, seen := r.st.NotesSeen[e.Name()]; seen {
			continue
		}
		info, err := e.Info()
		if os.IsNotExist(err) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("read note %s: %w", e.Name(), err)
		}
		if time.Since(info.ModTime()) < noteSettle {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read note %s: %w", e.Name(), err)
		}
		if strings.TrimSpace(string(data)) == "" {
			continue
		}
		text := capText(strings.TrimSpace(string(data)), r.Config.Experiment.TaskOutputMaxChars)
		id := fmt.Sprintf("%s/i%04d/note/%s", r.Spec.Name, it, e.Name())
		if err := r.history.Add(rundir.Entry{ID: id, Role: rundir.AuthorHuman, Kind: rundir.EntryNote, Iteration: it, Content: text,
			Path: rundir.NotePath(e.Name())}); err != nil {
			return nil, err
		}
		r.st.NotesSeen[e.Name()] = it
		r.st.Notes = append(r.st.Notes, text)
	}
	return append([]string(nil), r.st.Notes...), nil
}

// coevoUsage sums what co-evolution callers (advisor, drafts, validation
// trials, reflection) were charged, by caller.
func coevoUsage(charges map[string]llm.Usage) llm.Usage {
	var total llm.Usage
	for _, u := range charges {
		total.InputTokens += u.InputTokens
		total.OutputTokens += u.OutputTokens
		total.CostUSD += u.CostUSD
	}
	return total
}

// spreadCoevo splits an iteration's co-evolution spending evenly over its
// rows, the remainder of the token counts going to the first row, so that
// summing a column over the dataset gives the exact total.
func spreadCoevo(rows []rundir.MetricRow, u llm.Usage) {
	n := int64(len(rows))
	if n == 0 {
		return
	}
	for i := range rows {
		rows[i].CoevoInputTokens = u.InputTokens / n
		rows[i].CoevoOutputTokens = u.OutputTokens / n
		rows[i].CoevoCostUSD = u.CostUSD / float64(n)
	}
	rows[0].CoevoInputTokens += u.InputTokens % n
	rows[0].CoevoOutputTokens += u.OutputTokens % n
}
