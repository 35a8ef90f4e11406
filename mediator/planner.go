package mediator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/prompt"
	"github.com/mediated-coevo/harness/skills"
)

// Planner is the lab's PI: it writes the plan for each trial, proposes
// executor-skill edits from feedback, and drafts one executor-skill update
// from an approved batch of proposals. It holds no mutable state, so
// concurrent tasks may share one.
type Planner struct {
	Client *llm.Client
	// Caller is the ledger path calls are charged to.
	Caller string
	Seed   int64
	// MaxContextChars caps the prior context shown when planning; <= 0 means no cap.
	MaxContextChars int
}

// Kinds of the Planner's calls.
const (
	KindPlan       llm.Kind = "plan"        // the plan for a trial
	KindProposal   llm.Kind = "proposal"    // an executor-skill edit proposal
	KindSkillDraft llm.Kind = "skill_draft" // one update drafted from an approved batch
)

// Schema names of the Planner's answers.
const (
	schemaPlan     = "plan"
	schemaProposal = "proposal"
	schemaDraft    = "skill_draft"
)

// PlanAnswer is the Planner's plan for one trial.
type PlanAnswer struct {
	Plan string `json:"plan"`
}

func planSchema() map[string]any {
	return objectSchema(map[string]any{"plan": str("the plan, a short numbered list of steps")})
}

// Validate checks the plan is not empty.
func (a PlanAnswer) Validate() error {
	if strings.TrimSpace(a.Plan) == "" {
		return errors.New("plan is empty")
	}
	return nil
}

// ProposalAnswer is the Planner's proposed edit to the executor skill:
// replace OldContent with NewContent, or append NewContent when OldContent
// is empty.
type ProposalAnswer struct {
	Propose    bool   `json:"propose"`
	OldContent string `json:"old_content"`
	NewContent string `json:"new_content"`
	Reasoning  string `json:"reasoning"`
}

func proposalSchema() map[string]any {
	return objectSchema(map[string]any{
		"propose":     boolean(),
		"old_content": str("exact text of the skill to replace; empty to append"),
		"new_content": str("the new text"),
		"reasoning":   str("why this edit helps"),
	})
}

// Validate checks a proposal changes something.
func (a ProposalAnswer) Validate() error {
	if !a.Propose {
		return nil
	}
	if strings.TrimSpace(a.NewContent) == "" {
		return errors.New("proposal has no new_content")
	}
	if a.NewContent == a.OldContent {
		return errors.New("proposal's new_content equals its old_content")
	}
	return nil
}

// DraftAnswer is a full SKILL.md the Planner drafted from approved proposals.
type DraftAnswer struct {
	Content string `json:"content"`
}

func draftSchema() map[string]any {
	return objectSchema(map[string]any{"content": str("the complete SKILL.md, front matter included")})
}

// Validate checks the draft is a SKILL.md with front matter and a body.
func (a DraftAnswer) Validate() error { return checkSkillText(a.Content) }

// PlanInput is what the Planner sees when it plans one trial.
type PlanInput struct {
	TaskID    string
	Iteration int
	// Instruction is the task's instruction.md.
	Instruction   string
	ExecutorSkill string
	// PlannerSkill is the Planner's own meta-skill, the base of its system prompt.
	PlannerSkill string
	// PriorContext is what the condition lets the Planner know of earlier
	// attempts; empty leaves the section out of the prompt altogether.
	PriorContext string
	// PriorContextHeader titles the prior context (e.g. that it is a
	// Mediator report, or cross-task feedback); empty means "Prior context".
	PriorContextHeader string
	// Notes are human notes left for the run.
	Notes []string
	// Trial, when positive, makes this the plan of held-out evaluation
	// trial Trial: the prompt names no iteration and the seed comes from the
	// task and the trial alone, so every checkpoint sends the same request
	// but for its skills, and each trial of a checkpoint draws its own plan.
	Trial int
}

// ProposalInput is what the Planner sees when it proposes an edit.
type ProposalInput struct {
	TaskID        string
	Iteration     int
	Instruction   string
	ExecutorSkill string
	PlannerSkill  string
	// Feedback is the proposal feedback the condition gives; empty means
	// none, and then no proposal is asked for.
	Feedback string
	// FeedbackKind is a conditions.ProposalFeedback value (trace_summary,
	// mediator_report).
	FeedbackKind string
	// RecentRejections summarise recently rejected batches, as negative evidence.
	RecentRejections []string
	// Outcome is the verifier's verdict on the attempt the feedback is
	// about; unknown leaves the section out.
	Outcome Outcome
}

// Caps on the task and history text a Planner prompt carries.
const (
	plannerMaxInstructionChars = 12000
	plannerMaxSkillChars       = 40000 // skills cap at 32 KiB; this only guards against garbage
	plannerMaxFeedbackChars    = 8000
	plannerMaxNoteChars        = 2000
	plannerMaxNotes            = 20
	plannerMaxRejectionChars   = 600
	plannerMaxRejections       = 10
	plannerMaxProposalChars    = 2000
	plannerMaxAdviceChars      = 4000
	// plannerMaxPlanChars caps the plan handed to the Executor.
	plannerMaxPlanChars = 8000
)

// FallbackPlan is the plan used when the Planner's output is unusable twice.
const FallbackPlan = `1. Reread the instruction and list every file, command and output it names.
2. Inspect the working directory and the input files, then do the work step by step, checking each result.
3. Check that every required output exists at the exact path and in the exact format asked for, then submit.`

// The Planner's system prompts share plannerRole and the Planner's skill as
// a prefix; what each kind of call asks comes after them (prompt.System).
const (
	plannerRole       = `You are the Planner (the PI) of a research lab of LLM agents. Your own skill follows; follow it.`
	plannerPlanHeader = `Now write a plan. The Executor will attempt the task in a container, guided by its executor skill and
by your plan; the task instruction reaches it unchanged next to your plan. Write a short, concrete,
ordered plan. Answer with one JSON object with the field plan.`
	plannerProposalHeader = `Now, after an attempt at a task, you may propose one edit to the Executor's skill, the instructions the
Executor follows on every task, based on the feedback given. Propose only an edit that would help on many
tasks; otherwise set propose to false. An edit replaces old_content (copied exactly from the skill) with
new_content, or appends new_content when old_content is empty. Answer with one JSON object with the
fields propose (true or false), old_content, new_content and reasoning.`
	plannerDraftHeader = `You are the Planner (the PI) of a research lab of LLM agents. The Advisor approved a batch of proposed
edits to the Executor's skill. Draft one update: the complete new SKILL.md that merges the approved edits
as the Advisor's feedback suggests, removes duplicates and keeps the rest of the skill intact. Keep the
YAML front matter (same name, a description) between --- lines at the very top.
Answer with one JSON object with the field content.`
)

// Plan writes the plan for one trial. Unusable output twice gives
// FallbackPlan with fellBack set; model and budget errors are returned.
func (p *Planner) Plan(ctx context.Context, in PlanInput) (plan string, fellBack bool, err error) {
	instruction := prompt.Cap(in.Instruction, plannerMaxInstructionChars)
	skill := prompt.Cap(in.ExecutorSkill, plannerMaxSkillChars)
	prior := prompt.Cap(strings.TrimSpace(in.PriorContext), p.MaxContextChars)
	// Stable-first, so consecutive plans share a long prefix: the executor
	// skill, then the task, then what this call alone knows; the request
	// comes last, after everything it refers to.
	var b prompt.Builder
	b.Section("Executor skill", prompt.Fence(skill))
	b.Section("Task instruction", instruction)
	if prior != "" {
		header := strings.TrimSpace(in.PriorContextHeader)
		if header == "" {
			header = "Prior context"
		}
		b.Section(header, prior)
	}
	notes := recentNotes(in.Notes)
	if notes != "" {
		b.Section("Notes from the researchers", notes)
	}
	b.Section("Your answer", "Write the plan for the Executor on the task above: numbered steps, the exact "+
		"deliverables, the main risks and how to verify the result before submitting.")

	seed := in.seed(p.Seed)
	ans, fellBack, err := ask(ctx, p.Client, call[PlanAnswer]{
		What:       fmt.Sprintf("plan task %s %s", in.TaskID, in.occasion()),
		Kind:       KindPlan,
		Caller:     p.Caller,
		Seed:       seed,
		System:     prompt.System(plannerRole, in.PlannerSkill, plannerPlanHeader),
		User:       b.String(),
		Schema:     planSchema(),
		SchemaName: schemaPlan,
		Fallback:   PlanAnswer{Plan: FallbackPlan},
		Offline:    func(int64) PlanAnswer { return offlinePlan(seed, in.TaskID, instruction, prior) },
	})
	if err != nil {
		return "", false, err
	}
	return prompt.Cap(strings.TrimSpace(ans.Plan), plannerMaxPlanChars), fellBack, nil
}

// occasion names what the plan is for in the call's description: an
// iteration during training, a trial alone in a held-out evaluation. It never
// reaches the prompt, so an evaluation prompt is the same at every checkpoint.
func (in PlanInput) occasion() string {
	if in.Trial > 0 {
		return fmt.Sprintf("evaluation trial %d", in.Trial)
	}
	return fmt.Sprintf("iteration %d", in.Iteration)
}

// seed is the plan call's seed: an evaluation trial's depends on the task
// and the trial only, so it is the same at every checkpoint (common random
// numbers) and differs between the trials of one checkpoint.
func (in PlanInput) seed(base int64) int64 {
	if in.Trial > 0 {
		return prompt.Seed(base, string(KindPlan), in.TaskID, "evaluation", strconv.Itoa(in.Trial))
	}
	return prompt.Seed(base, string(KindPlan), in.TaskID, strconv.Itoa(in.Iteration))
}

// recentNotes lists the most recent human notes, at most plannerMaxNotes of
// them: the cap bounds the prompt, and it must never hide a new note.
func recentNotes(all []string) string {
	var notes []string
	for _, n := range all {
		if strings.TrimSpace(n) != "" {
			notes = append(notes, n)
		}
	}
	earlier := max(0, len(notes)-plannerMaxNotes)
	text := prompt.Bullets(notes[earlier:], plannerMaxNotes, plannerMaxNoteChars, prompt.Compact)
	if earlier > 0 {
		text = fmt.Sprintf("- (%d earlier notes not shown)\n", earlier) + text
	}
	return text
}

// Propose asks for an executor-skill edit from the feedback on the last
// attempt. Without feedback no call is made and nothing is proposed. A
// proposal whose old content is not in the skill, or whose result would
// not be a valid skill, counts as invalid: after one retry, nothing is
// proposed and fellBack is set.
func (p *Planner) Propose(ctx context.Context, in ProposalInput) (ans ProposalAnswer, fellBack bool, err error) {
	feedback := prompt.Cap(strings.TrimSpace(in.Feedback), plannerMaxFeedbackChars)
	if feedback == "" {
		return ProposalAnswer{}, false, nil
	}
	instruction := prompt.Cap(in.Instruction, plannerMaxInstructionChars)
	rejections := prompt.Bullets(in.RecentRejections, plannerMaxRejections, plannerMaxRejectionChars, prompt.Compact)
	var b prompt.Builder
	b.Section("Current executor skill", prompt.Fence(prompt.Cap(in.ExecutorSkill, plannerMaxSkillChars)))
	b.Section("Task instruction", instruction)
	if in.Outcome.Known() {
		b.Section("Outcome of the last attempt", in.Outcome.Text())
	}
	b.Section(plannerFeedbackTitle(in.FeedbackKind), feedback)
	if rejections != "" {
		b.Section("Recently rejected batches", rejections)
	}
	b.Section("Your answer", "Propose one edit to the executor skill, or set propose to false when the "+
		"feedback teaches nothing general. Copy old_content exactly from the skill, or leave it empty to append.")

	validate := func(a ProposalAnswer) error {
		if err := a.Validate(); err != nil || !a.Propose {
			return err
		}
		next, err := ApplyProposal(in.ExecutorSkill, a.OldContent, a.NewContent)
		if err != nil {
			return err
		}
		if _, err := skills.Parse([]byte(next)); err != nil {
			return fmt.Errorf("the edited skill would not be valid: %w", err)
		}
		return nil
	}
	iter := strconv.Itoa(in.Iteration)
	// The offline answer depends on everything the prompt was rendered from.
	seen := proposalSeen{
		taskID: in.TaskID, iteration: iter, instruction: instruction, skill: in.ExecutorSkill,
		plannerSkill: in.PlannerSkill, feedback: feedback, feedbackKind: in.FeedbackKind, rejections: rejections,
	}
	return ask(ctx, p.Client, call[ProposalAnswer]{
		What:       fmt.Sprintf("propose after task %s iteration %d", in.TaskID, in.Iteration),
		Kind:       KindProposal,
		Caller:     p.Caller,
		Seed:       prompt.Seed(p.Seed, string(KindProposal), in.TaskID, iter),
		System:     prompt.System(plannerRole, in.PlannerSkill, plannerProposalHeader),
		User:       b.String(),
		Schema:     proposalSchema(),
		SchemaName: schemaProposal,
		Validate:   validate,
		Fallback:   ProposalAnswer{Propose: false, Reasoning: "proposal output invalid"},
		Offline:    seen.offline,
	})
}

// ApplyProposal applies an edit to a skill: with oldContent empty,
// newContent is appended on a line of its own; otherwise the first
// occurrence of oldContent is replaced by newContent. When oldContent is not
// found verbatim, it is tried without its surrounding blank space, since
// models often add or drop some.
func ApplyProposal(skill, oldContent, newContent string) (string, error) {
	if strings.TrimSpace(oldContent) == "" {
		if strings.TrimSpace(newContent) == "" {
			return "", errors.New("the proposal has neither old nor new content; give new_content to append")
		}
		base := strings.TrimRight(skill, "\n")
		if base != "" {
			base += "\n"
		}
		return base + strings.Trim(newContent, "\n") + "\n", nil
	}
	if strings.Contains(skill, oldContent) {
		return strings.Replace(skill, oldContent, newContent, 1), nil
	}
	if t := strings.TrimSpace(oldContent); strings.Contains(skill, t) {
		return strings.Replace(skill, t, strings.TrimSpace(newContent), 1), nil
	}
	return "", fmt.Errorf("old_content %q is not in the skill; copy the text to replace exactly, or leave old_content empty to append",
		prompt.Cap(strings.TrimSpace(oldContent), 80))
}

// Draft writes one executor-skill update from an approved batch and the
// Advisor's feedback. The draft must be a valid skill keeping the current
// name; unusable output twice returns currentSkill unchanged with fellBack
// set, so the caller sees no candidate.
func (p *Planner) Draft(ctx context.Context, currentSkill string, batch []Proposal, advice string) (content string, fellBack bool, err error) {
	if len(batch) == 0 {
		return "", false, errors.New("draft executor skill: the batch has no proposals; draft only from an approved, non-empty batch")
	}
	skill := prompt.Cap(currentSkill, plannerMaxSkillChars)
	advice = prompt.Cap(strings.TrimSpace(advice), plannerMaxAdviceChars)
	var b prompt.Builder
	b.Section("Current executor skill", prompt.Fence(skill))
	b.Section("Your answer", "The complete new SKILL.md, front matter included, in content.")
	b.Text(fmt.Sprintf("\n# Draft of the executor skill from %d approved proposals\n", len(batch)))
	news := make([]string, 0, len(batch))
	ids := make([]string, 0, len(batch))
	for i, pr := range batch {
		b.Section(fmt.Sprintf("Approved proposal %d of %d", i+1, len(batch)), plannerProposal(pr))
		news = append(news, strings.TrimSpace(prompt.Cap(pr.NewContent, plannerMaxProposalChars)))
		ids = append(ids, pr.ID)
	}
	b.Section("Advisor's feedback", advice)

	name := ""
	if s, err := skills.Parse([]byte(currentSkill)); err == nil {
		name = s.Name
	}
	validate := func(a DraftAnswer) error {
		s, err := skills.Parse([]byte(prompt.CleanSkill(a.Content)))
		if err != nil {
			return fmt.Errorf("the draft is not a valid SKILL.md: %w", err)
		}
		if name != "" && s.Name != name {
			return fmt.Errorf("the draft renames the skill from %q to %q; keep name: %s", name, s.Name, name)
		}
		return nil
	}
	ans, fellBack, err := ask(ctx, p.Client, call[DraftAnswer]{
		What:       "draft executor skill",
		Kind:       KindSkillDraft,
		Caller:     p.Caller,
		Seed:       prompt.Seed(p.Seed, append([]string{string(KindSkillDraft)}, ids...)...),
		System:     plannerDraftHeader,
		User:       b.String(),
		Schema:     draftSchema(),
		SchemaName: schemaDraft,
		Validate:   validate,
		Fallback:   DraftAnswer{Content: currentSkill},
		Offline:    func(int64) DraftAnswer { return DraftAnswer{Content: offlineDraft(skill, strings.Join(news, "\n"))} },
	})
	if err != nil {
		return "", false, err
	}
	if fellBack {
		return currentSkill, true, nil
	}
	return prompt.CleanSkill(ans.Content), false, nil
}

func plannerFeedbackTitle(kind string) string {
	switch kind {
	case "mediator_report":
		return "Feedback: the Mediator's report on the last attempt"
	case "trace_summary":
		return "Feedback: a summary of the last attempt's trace"
	case "":
		return "Feedback on the last attempt"
	default:
		return "Feedback on the last attempt (" + kind + ")"
	}
}

func plannerProposal(pr Proposal) string {
	return fmt.Sprintf("id: %s, task: %s, iteration: %d\n", pr.ID, pr.TaskID, pr.Iteration) + pr.routeText() + pr.laterText() +
		pr.EditText(plannerMaxProposalChars)
}
