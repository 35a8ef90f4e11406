package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
	"github.com/mediated-coevo/harness/skills"
)

// checkpoint is a frozen set of skills: those a row held after an iteration
// (iteration 0: the skills it started with).
type checkpoint struct {
	iteration int
	hashes    map[conditions.Role]string
	text      map[conditions.Role]string
	// own are the own executor skills of the students holding one, as
	// they stood at the checkpoint; at the initial one, the lab's copy.
	own map[string]*skills.Skill
}

// forStudent is the checkpoint as a student's trial sees it: its own
// executor skill in place of the lab's, when it holds one.
func (cp checkpoint) forStudent(student string) checkpoint {
	s, ok := cp.own[student]
	if !ok {
		return cp
	}
	cp.hashes, cp.text = cloneMap(cp.hashes), cloneMap(cp.text)
	cp.hashes[conditions.RoleExecutor], cp.text[conditions.RoleExecutor] = s.Hash, string(s.Content)
	return cp
}

// evaluate scores the row's initial and final skills on the held-out tasks,
// EvalTrials trials each, once its iterations are done. Nothing evolves
// here and no trial feeds another: each plans from the instruction and the
// frozen skills alone, so the estimate is of the skills, on tasks the row
// never saw. A checkpoint whose part is on disk is done; an interrupted
// evaluation redoes only the checkpoint it was in.
func (r *Run) evaluate(ctx context.Context) error {
	if len(r.HeldOut) == 0 || r.EvalTrials < 1 {
		return nil
	}
	cps, err := r.checkpoints()
	if err != nil {
		return fmt.Errorf("evaluate on held-out tasks: %w", err)
	}
	for _, cp := range cps {
		part := filepath.Join(r.Dir.MetricsDir(), rundir.EvalPartName(cp.iteration))
		if _, err := os.Stat(part); err == nil {
			continue
		}
		r.emit(Event{Kind: EventEvaluationStart, Iteration: cp.iteration})
		rows, err := r.evalCheckpoint(ctx, cp)
		if err != nil {
			return err
		}
		if err := rundir.WriteEvalPart(r.Dir.MetricsDir(), cp.iteration, rows); err != nil {
			return fmt.Errorf("write the evaluation of checkpoint %d: %w", cp.iteration, err)
		}
		if err := r.saveSpend(); err != nil {
			return err
		}
	}
	return nil
}

// checkpoints are the initial skills (those the first iteration ran with,
// from its metric rows) and the final ones (the last checkpoint's), read
// back from the run's snapshots.
func (r *Run) checkpoints() ([]checkpoint, error) {
	first, err := rundir.ReadMetricsFile(filepath.Join(r.Dir.MetricsDir(), rundir.MetricsPartName(1)))
	if err != nil {
		return nil, fmt.Errorf("read the skills of iteration 1 (the initial checkpoint): %w", err)
	}
	if len(first) == 0 {
		return nil, errors.New("iteration 1 has no metric rows, so the initial skills are unknown")
	}
	initial := map[conditions.Role]string{conditions.RoleExecutor: first[0].ExecutorSkillHash,
		conditions.RolePlanner: first[0].PlannerSkillHash, conditions.RoleMediator: first[0].MediatorSkillHash}
	var out []checkpoint
	for _, cp := range []checkpoint{{iteration: 0, hashes: initial}, {iteration: r.st.CompletedIteration, hashes: r.st.SkillHashes}} {
		cp.text = map[conditions.Role]string{}
		for _, role := range conditions.SkillRoles() {
			content, err := skills.Restore(r.Dir.Join(rundir.SnapshotsDir), role, cp.hashes[role])
			if err != nil {
				return nil, fmt.Errorf("restore the %s skill of checkpoint %d: %w", role, cp.iteration, err)
			}
			cp.text[role] = string(content)
		}
		own, err := r.ownAtCheckpoint(cp)
		if err != nil {
			return nil, err
		}
		cp.own = own
		out = append(out, cp)
	}
	return out, nil
}

// evalCheckpoint runs every held-out task EvalTrials times with cp's
// skills, at most Concurrency trials at once, and returns their rows in
// task and trial order. Any error (an interruption, a spent budget, a
// failed write) stops the checkpoint; its part is then not written.
func (r *Run) evalCheckpoint(ctx context.Context, cp checkpoint) ([]rundir.MetricRow, error) {
	type job struct {
		task *benchmarks.Task
		k    int
	}
	var jobs []job
	for _, task := range r.HeldOut {
		for k := 1; k <= r.EvalTrials; k++ {
			jobs = append(jobs, job{task, k})
		}
	}
	rows := make([]rundir.MetricRow, len(jobs))
	errs := make([]error, len(jobs))
	r.boundedParallel(ctx, len(jobs), func(i int) { rows[i], errs[i] = r.evalTrial(ctx, cp, jobs[i].task, jobs[i].k) },
		func(i int, err error) { errs[i] = err })
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("evaluate checkpoint %d: %w", cp.iteration, err)
	}
	return rows, nil
}

// evalTrial is one held-out trial: the Planner plans from the instruction
// and its frozen skill (what it may see when planning, less any feedback:
// there is none on a task the row never ran), the Executor works with the
// frozen executor skill, and the verifier scores it. Only the skills tell
// the checkpoints apart: neither prompt names the checkpoint, and trial k
// of a task has the same seed at every checkpoint (common random numbers)
// and a seed of its own among the checkpoint's k trials.
func (r *Run) evalTrial(ctx context.Context, cp checkpoint, task *benchmarks.Task, k int) (rundir.MetricRow, error) {
	trialID := rundir.EvalTrialID(cp.iteration, k, task.ID)
	// The k trials of a held-out task go round the students.
	lab, _ := r.Config.Lab(r.Spec.Lab)
	roster := lab.Roster()
	st := roster[(k-1)%len(roster)]
	student := st.ID
	cp = cp.forStudent(student)
	row := r.baseRow(cp.iteration, task.ID, trialID, st, cp.hashes)
	row.Phase, row.CheckpointIteration = rundir.PhaseEval, new(int32(cp.iteration))
	tap := r.trialTap(trialID)
	defer tap.Close()
	plan := ""
	if ModelDriven(r.AgentKind) {
		allowed := r.visible(conditions.ConsumerPlannerPlan)
		p, fellBack, err := r.plannerFor(rundir.PlannerCaller(trialID)).Plan(ctx, mediator.PlanInput{TaskID: task.ID, Trial: k,
			Instruction:   shown(allowed, conditions.EvidenceInstruction, task.Instruction),
			ExecutorSkill: shown(allowed, conditions.EvidenceExecutorSkill, cp.text[conditions.RoleExecutor]),
			PlannerSkill:  shown(allowed, conditions.EvidencePlannerSkill, cp.text[conditions.RolePlanner])})
		if err != nil {
			if r.stopsRun(ctx, err) {
				return row, fmt.Errorf("plan evaluation trial %s: %w", trialID, err)
			}
			// The Planner's model failed: blamed on the model, so the trial
			// counts for neither checkpoint (see rundir.AgentFault).
			row.Status = executor.StatusAgentError
			failed := &executor.Trace{}
			executor.SetCause(failed, executor.AgentCause(err), fmt.Errorf("planner: %w", err))
			row.Cause = rundir.Nullable(failed.Cause)
			return r.finishRow(row, tap.Take()), nil
		}
		if fellBack {
			row.Fallbacks++
		}
		plan = p
	}
	jobDir := r.Dir.Join(rundir.EvalJobDir(cp.iteration, k, task.ID))
	if err := os.RemoveAll(jobDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return row, fmt.Errorf("clear job directory %s: %w", jobDir, err)
	}
	trace := r.Trials.Run(ctx, executor.TrialSpec{Task: task, Agent: r.NewAgent(student), Plan: plan,
		ExecutorSkill: cp.text[conditions.RoleExecutor], JobDir: jobDir, RunID: r.labelRun(), Row: r.Spec.Name,
		Iteration: cp.iteration, TrialID: trialID, Seed: evalSeed(r.Spec.Seed, task.ID, k),
		Caller: rundir.ExecutorCaller(student, trialID).String()})
	if err := ctx.Err(); err != nil {
		return row, err
	}
	if trace.Status == executor.StatusBudgetExhausted {
		return row, fmt.Errorf("evaluation trial %s: %w", trialID, llm.ErrBudgetExhausted)
	}
	fillTraceColumns(&row, trace)
	if err := durable.WriteJSON(filepath.Join(jobDir, rundir.TraceFile), trace); err != nil {
		return row, err
	}
	r.emit(Event{Kind: EventEvaluationTrialDone, Iteration: cp.iteration, Task: task.ID, Status: string(trace.Status), Reward: trace.Reward})
	return r.finishRow(row, tap.Take()), nil
}

// evalSeed is the seed of evaluation trial k of a task: the same at every
// checkpoint, so a checkpoint's skills are compared on the same draws.
func evalSeed(seed int64, task string, k int) int64 {
	return trialSeed(seed, fmt.Sprintf("eval/%s/%d", task, k))
}
