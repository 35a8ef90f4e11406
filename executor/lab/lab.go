package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/llm"
)

// Subagent kinds a hierarchical coordinator may dispatch.
const (
	SubagentExplore = "explore"
	SubagentPlan    = "plan"
	SubagentCode    = "code"
)

// Transcript files of the lab agent, relative to the job directory; the
// run directory's format names them.
const (
	TranscriptFile = rundir.TranscriptFile
	BackupFile     = rundir.CompactionBackupFile
)

// Agent names in the transcript's agent field.
const (
	AgentSingle      = "executor"
	AgentCoordinator = "coordinator"
)

// Lab events written to the transcript beside the loop's own events.
const (
	EventSetup          = "setup"           // workdir, task skills, warnings
	EventDispatch       = "dispatch"        // a subagent was started
	EventDispatchResult = "dispatch_result" // what it returned
	EventQuota          = "quota_refused"   // a dispatch past its quota
	EventSummary        = "summary"         // counters of the whole run
)

// Defaults for lab settings left at zero (a hand-built config.Lab).
const (
	DefaultMaxModelCalls    = 30
	DefaultSubagentMaxCalls = 15
)

// labOutputCap caps AgentResult.Output and each dispatch result.
const labOutputCap = 4 << 10

// Agent is the LLM Executor: a tool-calling agent working in the trial's
// sandbox, alone (single mode) or as a coordinator of explore, plan and code
// subagents (hierarchical mode). It keeps no per-trial state, so one value
// may run many trials, also concurrently.
type Agent struct {
	Lab config.Lab
	// Clients holds the model client of each role: conditions.RoleExecutor
	// (single agent, coordinator), RoleExplore, RolePlan and RoleCode.
	Clients map[conditions.Role]*llm.Client
	// ContextTokens is each role's context window; a role missing here is
	// never compacted.
	ContextTokens map[conditions.Role]int
	// MaxOutputTokens is each role's max_tokens, kept free in its window
	// when the transcript is compacted (missing: a fifth of the window).
	MaxOutputTokens map[conditions.Role]int
	// OfflineDiligence is the offline profile of the Executor's model
	// ([models.<key>] offline_diligence); nil: the player's default.
	OfflineDiligence *float64
}

// NewAgent returns a lab agent with the given settings and clients.
func NewAgent(lab config.Lab, clients map[conditions.Role]*llm.Client) *Agent {
	return &Agent{Lab: lab, Clients: clients}
}

// Name is "lab".
func (a *Agent) Name() string { return "lab" }

// Stats are the counters of one lab-agent run, written to the transcript
// as its last record.
type Stats struct {
	Mode        string `json:"mode"`
	Calls       int    `json:"calls"`
	Refused     int    `json:"refused"`
	BadArgs     int    `json:"bad_args"`
	Compactions int    `json:"compactions"`
	// Dispatches counts subagent runs by kind; QuotaRefused the dispatches
	// refused because their kind's quota was used up.
	Dispatches   map[string]int `json:"dispatches,omitempty"`
	QuotaRefused int            `json:"quota_refused,omitempty"`
	Submitted    bool           `json:"submitted"`
	Error        string         `json:"error,omitempty"`
}

// Setup is what the agent learned about its sandbox before starting.
type Setup struct {
	Mode     string      `json:"mode"`
	Workdir  string      `json:"workdir"`
	Skills   []TaskSkill `json:"skills,omitempty"`
	Warnings []string    `json:"warnings,omitempty"`
}

// TranscriptRecord is one line of agent/transcript.jsonl: a loop record
// (see llm.TranscriptRecord) tagged with the agent that wrote it, or a lab
// event. Agent is "executor" (single mode), "coordinator", or a subagent
// kind with Dispatch numbering its run (1, 2, ... in dispatch order).
type TranscriptRecord struct {
	Agent    string `json:"agent"`
	Dispatch int    `json:"dispatch,omitempty"`
	llm.TranscriptRecord
	// Task is a dispatch's task text (EventDispatch).
	Task  string `json:"task,omitempty"`
	Setup *Setup `json:"setup,omitempty"`
	Stats *Stats `json:"stats,omitempty"`
}

// BackupRecord is one line of agent/compaction-backup.jsonl: a message
// compaction dropped from an agent's transcript.
type BackupRecord struct {
	Agent    string `json:"agent"`
	Dispatch int    `json:"dispatch,omitempty"`
	llm.Message
}

// settings returns the lab with zero values replaced by defaults.
func (a *Agent) settings() config.Lab {
	l := a.Lab
	if l.ExecutorMode == "" {
		l.ExecutorMode = config.ModeSingle
	}
	if l.MaxModelCalls <= 0 {
		l.MaxModelCalls = DefaultMaxModelCalls
	}
	if l.SubagentMaxCalls <= 0 {
		l.SubagentMaxCalls = DefaultSubagentMaxCalls
	}
	if l.CommandTimeout.Duration <= 0 {
		l.CommandTimeout.Duration = DefaultCommandTimeout
	}
	if l.OutputCapBytes <= 0 {
		l.OutputCapBytes = DefaultToolOutputCap
	}
	l.ConcludeMargin = clampMargin(l.ConcludeMargin, l.MaxModelCalls)
	return l
}

// clampMargin keeps the conclude margin below the call cap, so the agent
// gets at least one call before it is told to conclude.
func clampMargin(margin, calls int) int {
	return max(min(margin, calls-1), 0)
}

func (a *Agent) client(role conditions.Role) (*llm.Client, error) {
	c := a.Clients[role]
	if c == nil {
		return nil, fmt.Errorf("no model client for role %q: configure [models.%s]", role, role)
	}
	return c, nil
}

// Run works on the task in in.Sandbox until the agent submits, reaches its
// call cap, or fails. An error wrapping llm.ErrBudgetExhausted means the budget
// stopped it; any other error (a model that keeps failing, a transcript
// that cannot be written) is an agent error. The result is filled in on
// every path, with the usage spent so far.
func (a *Agent) Run(ctx context.Context, in executor.AgentInput) (executor.AgentResult, error) {
	if in.Task == nil || in.Sandbox == nil {
		return executor.AgentResult{}, errors.New("lab agent: no task or sandbox")
	}
	lab := a.settings()
	roles := []conditions.Role{conditions.RoleExecutor}
	switch lab.ExecutorMode {
	case config.ModeSingle:
	case config.ModeHierarchical:
		if lab.CodeQuota < 1 {
			return executor.AgentResult{}, fmt.Errorf("lab agent: code_quota is %d; hierarchical mode needs at least 1, since only the code subagent can change the container", lab.CodeQuota)
		}
		roles = append(roles, conditions.RoleExplore, conditions.RolePlan, conditions.RoleCode)
	default:
		return executor.AgentResult{}, fmt.Errorf("lab agent: unknown executor_mode %q; use %q or %q",
			lab.ExecutorMode, config.ModeSingle, config.ModeHierarchical)
	}
	for _, role := range roles {
		if _, err := a.client(role); err != nil {
			return executor.AgentResult{}, fmt.Errorf("lab agent: %w", err)
		}
	}

	r := &labRun{agent: a, lab: lab, in: in, dispatches: map[string]int{}}
	r.caller = in.Caller
	if r.caller == "" {
		r.caller = string(conditions.RoleExecutor)
	}
	var res executor.AgentResult
	if in.JobDir != "" {
		if err := r.openTranscript(); err != nil {
			return res, fmt.Errorf("lab agent: %w", err)
		}
		res.TranscriptPath = TranscriptFile
	}
	defer r.close()

	err := r.setup(ctx)
	if err == nil {
		var lr llm.LoopResult
		if lab.ExecutorMode == config.ModeHierarchical {
			lr, err = r.coordinate(ctx)
		} else {
			lr, err = r.single(ctx)
		}
		res.Submitted = lr.Submitted
		res.Output = cutUTF8(strings.TrimSpace(SubmittedSummary(lr.Final)), labOutputCap)
	}
	res.Usage = r.usage
	stats := r.stats(res.Submitted, err)
	if werr := r.event(TranscriptRecord{Agent: r.topName(),
		TranscriptRecord: llm.TranscriptRecord{Event: EventSummary, Call: r.calls}, Stats: &stats}); werr != nil && err == nil {
		err = werr
	}
	if cerr := r.close(); cerr != nil && err == nil {
		err = cerr
	}
	if werr := r.writeTrajectories(); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return res, fmt.Errorf("lab agent (%s) on task %s: %w", lab.ExecutorMode, in.Task.ID, err)
	}
	return res, nil
}

// labRun is the state of one Run.
type labRun struct {
	agent  *Agent
	lab    config.Lab
	in     executor.AgentInput
	caller string
	tools  *ContainerTools

	transcript *durable.Log
	backup     *durable.Log

	usage       executor.Usage
	calls       int
	refused     int
	badArgs     int
	compactions int

	dispatches   map[string]int
	seq          int
	quotaRefused int
	// fatal is a subagent failure that must end the whole run; cancel stops
	// the coordinator's loop with it.
	fatal  error
	cancel context.CancelCauseFunc
}

func (r *labRun) topName() string {
	if r.lab.ExecutorMode == config.ModeHierarchical {
		return AgentCoordinator
	}
	return AgentSingle
}

func (r *labRun) stats(submitted bool, err error) Stats {
	s := Stats{
		Mode: r.lab.ExecutorMode, Calls: r.calls, Refused: r.refused, BadArgs: r.badArgs,
		Compactions: r.compactions, QuotaRefused: r.quotaRefused, Submitted: submitted,
	}
	if len(r.dispatches) > 0 {
		s.Dispatches = r.dispatches
	}
	if err != nil {
		s.Error = err.Error()
	}
	return s
}

// setup looks around the sandbox and builds the container tools.
func (r *labRun) setup(ctx context.Context) error {
	task := r.in.Task
	var dirs []string
	if d := task.Config.Environment.SkillsDir; strings.HasPrefix(d, "/") {
		dirs = append(dirs, d)
	}
	// Every folder the task's image holds skills in (its skills_dir and
	// each place its Dockerfile copies a skills folder to), then the lab's.
	for _, d := range slices.Concat(task.SkillDirs, r.lab.TaskSkillDirs) {
		if strings.HasPrefix(d, "/") && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	env, err := DiscoverEnvironment(ctx, r.in.Sandbox, task.Config.Environment.Workdir, task.Config.Agent.User, dirs)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// The tools report their own failures to the model; a sandbox that
		// is really gone ends the trial through the verifier.
		env.Warnings = append(env.Warnings, err.Error())
	}
	r.tools = &ContainerTools{
		Sandbox:        r.in.Sandbox,
		Workdir:        env.Workdir,
		User:           task.Config.Agent.User,
		CommandTimeout: r.lab.CommandTimeout.Duration,
		OutputCap:      r.lab.OutputCapBytes,
		Skills:         env.Skills,
	}
	return r.event(TranscriptRecord{Agent: r.topName(), TranscriptRecord: llm.TranscriptRecord{Event: EventSetup},
		Setup: &Setup{Mode: r.lab.ExecutorMode, Workdir: env.Workdir, Skills: env.Skills, Warnings: env.Warnings}})
}

// player is the offline stand-in for an agent's model (see OfflinePlayer).
// A client backed by a real model ignores it.
func (r *labRun) player(instruction string, withPlan bool) llm.Player {
	return OfflinePlayer(r.offlineTrial(instruction, withPlan))
}

// offlineTrial is what the offline player is told of an agent: the same
// texts its prompts are rendered from.
func (r *labRun) offlineTrial(instruction string, withPlan bool) OfflineTrial {
	t := OfflineTrial{
		TaskID:      r.in.Task.ID,
		Instruction: instruction,
		Workdir:     r.tools.workdir(),
		Seed:        r.in.Seed,
		Skill:       r.in.ExecutorSkill,
		Diligence:   r.agent.OfflineDiligence,
	}
	if withPlan {
		t.Plan = r.in.Plan
	}
	return t
}

func (r *labRun) single(ctx context.Context) (llm.LoopResult, error) {
	specs, err := r.tools.Specs(r.containerTools(ToolRunCommand, ToolReadFile, ToolWriteFile, ToolListDir, ToolReadSkill)...)
	if err != nil {
		return llm.LoopResult{}, err
	}
	specs = append(specs, SubmitTool("what you did, what you checked, and anything left undone"))
	loop := r.loop(AgentSingle, 0, conditions.RoleExecutor, r.caller, specs, r.lab.MaxModelCalls, r.lab.ConcludeMargin)
	loop.Client = loop.Client.WithPlayer(r.player(r.in.Task.Instruction, true))
	loop.Seed = r.in.Seed
	system := SystemPrompt(singleIdentity(r.tools.workdir(), r.lab.MaxModelCalls, specNames(specs), r.in.Plan != ""),
		r.in.ExecutorSkill, SkillIndex(r.tools.Skills), r.in.Plan)
	return r.runLoop(ctx, loop, system, r.in.Task.Instruction)
}

func (r *labRun) coordinate(ctx context.Context) (llm.LoopResult, error) {
	specs, err := r.tools.Specs(r.containerTools(ReadOnlyTools...)...)
	if err != nil {
		return llm.LoopResult{}, err
	}
	specs = append([]llm.ToolSpec{{Tool: dispatchTool(r.lab), Run: r.dispatch}}, specs...)
	specs = append(specs, SubmitTool("what was done, what was checked, and anything left undone"))
	loop := r.loop(AgentCoordinator, 0, conditions.RoleExecutor, r.caller+"/"+AgentCoordinator, specs, r.lab.MaxModelCalls, r.lab.ConcludeMargin)
	loop.Client = loop.Client.WithPlayer(r.player(r.in.Task.Instruction, true))
	loop.Seed = r.in.Seed
	system := SystemPrompt(coordinatorIdentity(r.tools.workdir(), r.lab, specNames(specs), r.in.Plan != ""),
		r.in.ExecutorSkill, SkillIndex(r.tools.Skills), r.in.Plan)

	// A failing subagent ends the run: its dispatch cancels the
	// coordinator's context with the failure as the cause.
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.cancel = cancel
	res, err := r.runLoop(cctx, loop, system, r.in.Task.Instruction)
	if r.fatal != nil && ctx.Err() == nil {
		err = r.fatal
	}
	return res, err
}

// loop builds a loop with the run's transcript writers.
func (r *labRun) loop(agent string, dispatch int, role conditions.Role, caller string, specs []llm.ToolSpec, calls, margin int) llm.Loop {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Tool.Name
	}
	client, _ := r.agent.client(role) // checked in Run
	l := llm.Loop{
		Client:          client,
		Caller:          caller,
		Kind:            llm.KindAgentStep,
		Tools:           specs,
		Allowed:         names,
		Terminal:        ToolSubmit,
		MaxCalls:        calls,
		ConcludeMargin:  margin,
		ContextTokens:   r.agent.ContextTokens[role],
		MaxOutputTokens: r.agent.MaxOutputTokens[role],
	}
	if r.transcript != nil {
		l.Transcript = &recordWriter{run: r, agent: agent, dispatch: dispatch}
		l.Backup = &recordWriter{run: r, agent: agent, dispatch: dispatch, backup: true}
	}
	return l
}

// runLoop runs one loop and adds its counters to the run's.
func (r *labRun) runLoop(ctx context.Context, l llm.Loop, system, user string) (llm.LoopResult, error) {
	res, err := l.Run(ctx, system, user)
	r.usage.InputTokens += res.Usage.InputTokens
	r.usage.OutputTokens += res.Usage.OutputTokens
	r.usage.CostUSD += res.Usage.CostUSD
	r.usage.ModelCalls += res.Calls
	r.calls += res.Calls
	r.refused += res.Refused
	r.badArgs += res.BadArgs
	r.usage.MalformedToolCalls += res.BadArgs
	r.compactions += res.Compactions
	return res, err
}

func dispatchTool(lab config.Lab) llm.Tool {
	return llm.Tool{
		Name: ToolDispatch,
		Description: fmt.Sprintf("Start a fresh subagent on a task and get back its final report. "+
			"explore investigates read-only (quota %d per trial), plan designs an approach read-only (quota %d), "+
			"code is the only one that runs commands and writes files (quota %d). The subagent sees only the task "+
			"text you give it, the executor skill and the list of task skills, so make the task self-contained.",
			lab.ExploreQuota, lab.PlanQuota, lab.CodeQuota),
		Parameters: objectParams(map[string]any{
			"agent": map[string]any{
				"type":        "string",
				"enum":        []string{SubagentExplore, SubagentPlan, SubagentCode},
				"description": "which subagent to start",
			},
			"task": stringParam("the complete, self-contained task for the subagent"),
		}, "agent", "task"),
	}
}

func (r *labRun) quota(kind string) int {
	switch kind {
	case SubagentExplore:
		return r.lab.ExploreQuota
	case SubagentPlan:
		return r.lab.PlanQuota
	default:
		return r.lab.CodeQuota
	}
}

// dispatch runs one subagent and returns only its final report.
func (r *labRun) dispatch(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Agent string `json:"agent"`
		Task  string `json:"task"`
	}
	if err := decodeArgs(ToolDispatch, args, &a); err != nil {
		return "", err
	}
	kind := strings.ToLower(strings.TrimSpace(a.Agent))
	switch kind {
	case SubagentExplore, SubagentPlan, SubagentCode:
	default:
		return "", fmt.Errorf("unknown agent %q; dispatch explore, plan or code", a.Agent)
	}
	if strings.TrimSpace(a.Task) == "" {
		return "", errors.New("task is empty; give the subagent a complete, self-contained task")
	}
	if q := r.quota(kind); r.dispatches[kind] >= q {
		r.quotaRefused++
		msg := fmt.Sprintf("dispatch refused: the %s quota of %d per trial is used up", kind, q)
		if q == 0 {
			msg = fmt.Sprintf("dispatch refused: this lab allows no %s dispatches (quota 0)", kind)
		}
		if err := r.event(TranscriptRecord{Agent: AgentCoordinator,
			TranscriptRecord: llm.TranscriptRecord{Event: EventQuota, Detail: msg}}); err != nil {
			return "", r.fail(err)
		}
		return "", errors.New(msg + "; continue with the other subagents or submit")
	}
	r.dispatches[kind]++
	r.seq++
	n := r.seq
	if err := r.event(TranscriptRecord{Agent: kind, Dispatch: n,
		TranscriptRecord: llm.TranscriptRecord{Event: EventDispatch, Detail: kind}, Task: a.Task}); err != nil {
		return "", r.fail(err)
	}
	res, err := r.subagent(ctx, kind, n, a.Task)
	if err != nil {
		return "", r.fail(fmt.Errorf("%s subagent (dispatch %d): %w", kind, n, err))
	}
	text := strings.TrimSpace(SubmittedSummary(res.Final))
	if text == "" {
		text = fmt.Sprintf("(the %s subagent returned no report)", kind)
	}
	text = cutUTF8(text, max(labOutputCap, r.lab.OutputCapBytes))
	if !res.Submitted {
		text += fmt.Sprintf("\n[the %s subagent stopped after %d model calls without submitting]", kind, res.Calls)
	}
	if err := r.event(TranscriptRecord{Agent: kind, Dispatch: n,
		TranscriptRecord: llm.TranscriptRecord{Event: EventDispatchResult, Call: res.Calls, Detail: text}}); err != nil {
		return "", r.fail(err)
	}
	return text, nil
}

// fail records a failure that must end the run and stops the coordinator.
func (r *labRun) fail(err error) error {
	if r.fatal == nil {
		r.fatal = err
	}
	if r.cancel != nil {
		r.cancel(err)
	}
	return err
}

// subagent runs a fresh loop of one kind with its own allowlist: only code
// gets run_command and write_file.
func (r *labRun) subagent(ctx context.Context, kind string, n int, task string) (llm.LoopResult, error) {
	var role conditions.Role
	var names []string
	var what string
	switch kind {
	case SubagentExplore:
		role, names = conditions.RoleExplore, ReadOnlyTools
		what = "your findings: the facts the coordinator asked for, with paths"
	case SubagentPlan:
		role, names = conditions.RolePlan, ReadOnlyTools
		what = "your plan: concrete, numbered steps with the files and commands involved"
	default:
		role = conditions.RoleCode
		names = []string{ToolRunCommand, ToolReadFile, ToolWriteFile, ToolListDir, ToolReadSkill}
		what = "what you changed, how you checked it, and anything left undone"
	}
	specs, err := r.tools.Specs(r.containerTools(names...)...)
	if err != nil {
		return llm.LoopResult{}, err
	}
	specs = append(specs, SubmitTool(what))
	calls := r.lab.SubagentMaxCalls
	loop := r.loop(kind, n, role, r.caller+"/"+kind, specs, calls, clampMargin(r.lab.ConcludeMargin, calls))
	loop.Client = loop.Client.WithPlayer(r.player(task, false))
	loop.Seed = r.in.Seed + int64(n)
	system := SystemPrompt(subagentIdentity(kind, r.tools.workdir(), calls, specNames(specs)), r.in.ExecutorSkill, SkillIndex(r.tools.Skills), "")
	return r.runLoop(ctx, loop, system, task)
}

// ---- transcript files ----

func (r *labRun) openTranscript() error {
	l, err := durable.OpenLog(filepath.Join(r.in.JobDir, TranscriptFile))
	if err != nil {
		return fmt.Errorf("open transcript: %w", err)
	}
	r.transcript = l
	return nil
}

// event appends a lab event to the transcript.
func (r *labRun) event(rec TranscriptRecord) error {
	if r.transcript == nil {
		return nil
	}
	if err := r.transcript.Append(rec); err != nil {
		return fmt.Errorf("write transcript: %w", err)
	}
	return nil
}

func (r *labRun) appendBackup(rec BackupRecord) error {
	if r.backup == nil {
		l, err := durable.OpenLog(filepath.Join(r.in.JobDir, BackupFile))
		if err != nil {
			return fmt.Errorf("open compaction backup: %w", err)
		}
		r.backup = l
	}
	if err := r.backup.Append(rec); err != nil {
		return fmt.Errorf("write compaction backup: %w", err)
	}
	return nil
}

func (r *labRun) close() error {
	var errs []error
	for _, l := range []**durable.Log{&r.transcript, &r.backup} {
		if *l != nil {
			errs = append(errs, (*l).Close())
			*l = nil
		}
	}
	return errors.Join(errs...)
}

// recordWriter receives a loop's JSON lines and appends them to the run's
// files, tagged with the agent that wrote them.
type recordWriter struct {
	run      *labRun
	agent    string
	dispatch int
	backup   bool
	buf      []byte
}

func (w *recordWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := w.buf[:i]
		w.buf = w.buf[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := w.writeLine(line); err != nil {
			return 0, err
		}
	}
}

func (w *recordWriter) writeLine(line []byte) error {
	if w.backup {
		rec := BackupRecord{Agent: w.agent, Dispatch: w.dispatch}
		if err := json.Unmarshal(line, &rec.Message); err != nil {
			return fmt.Errorf("compaction backup of %s: %w", w.agent, err)
		}
		return w.run.appendBackup(rec)
	}
	rec := TranscriptRecord{Agent: w.agent, Dispatch: w.dispatch}
	if err := json.Unmarshal(line, &rec.TranscriptRecord); err != nil {
		return fmt.Errorf("transcript of %s: %w", w.agent, err)
	}
	return w.run.event(rec)
}
