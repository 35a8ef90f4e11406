package mediator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/prompt"
)

// Proposal is one buffered executor-skill edit proposed by the Planner:
// replace OldContent with NewContent (append it when OldContent is empty).
type Proposal struct {
	ID     string `json:"id"`
	TaskID string `json:"task_id"`
	// Student is who attempted the trial the proposal came from; its
	// delayed reward comes from that student's later trials of the task.
	Student   string   `json:"student,omitempty"`
	Iteration int      `json:"iteration"`
	EntryIDs  []string `json:"entry_ids,omitempty"`
	// OldContent is the exact text replaced; empty means NewContent is appended.
	OldContent string `json:"old_content"`
	NewContent string `json:"new_content"`
	Reasoning  string `json:"reasoning"`
	// DelayedReward is the reward of the task's next iteration, nil while pending.
	DelayedReward *float64 `json:"delayed_reward"`
	// Digest is the feedback the Planner proposed from, exactly as it was
	// given: the Mediator's report, or the trace summary under full_traces.
	// DigestKind names which (a conditions.ProposalFeedback value).
	Digest     string `json:"digest,omitempty"`
	DigestKind string `json:"digest_kind,omitempty"`
	// LaterRewards are the rewards of the proposing task's trials after the
	// proposal, oldest first, as of the Advisor's review; DelayedReward is
	// normally the first of them.
	LaterRewards []TrialReward `json:"later_rewards,omitempty"`
	// Outcome is the verifier's verdict on the trial the proposal was made
	// after: often the only outcome known when a batch is reviewed, since a
	// batch may fill before the task is tried again.
	Outcome Outcome `json:"outcome,omitzero"`
	// From is, for an item routed from another student, that student, and
	// FromTrial its trial; Routed is how it came (FormNote, FormProposal
	// or FormPooled) and RouteReason why. Empty for a student's own.
	From        string `json:"from,omitempty"`
	FromTrial   string `json:"from_trial,omitempty"`
	Routed      string `json:"routed,omitempty"`
	RouteReason string `json:"route_reason,omitempty"`
}

// routeText says where a routed proposal came from, for a prompt; "" for
// a student's own.
func (pr Proposal) routeText() string {
	if pr.From == "" {
		return ""
	}
	var how string
	switch pr.Routed {
	case FormNote:
		how = "a note the Mediator distilled from it"
	case FormProposal:
		how = "its proposal, forwarded by the Mediator"
	default:
		how = "its proposal, shared with every student"
	}
	s := fmt.Sprintf("from student %s (trial %s): %s\n", pr.From, pr.FromTrial, how)
	if pr.RouteReason != "" {
		s += "why it was routed: " + prompt.OneLine(pr.RouteReason) + "\n"
	}
	return s
}

// TrialReward is the reward of one usable trial of a task.
type TrialReward struct {
	Iteration int     `json:"iteration"`
	Reward    float64 `json:"reward"`
}

// Advisor reviews batches of executor-skill proposals.
type Advisor struct {
	Client *llm.Client
	// Caller is the ledger path calls are charged to.
	Caller string
	Seed   int64
}

// Advice is the Advisor's verdict on a batch.
type Advice struct {
	Approve  bool
	Feedback string
	// FellBack is set when the model's output was unusable twice and the
	// batch was rejected for that reason.
	FellBack bool
}

// FeedbackInvalidOutput is the feedback of a batch rejected because the
// Advisor's output could not be used.
const FeedbackInvalidOutput = "advisor output invalid"

const advisorHeader = `You are the Advisor of a research lab of LLM agents. The Planner has proposed a batch of edits to the
Executor's skill, the instructions the Executor follows on every task. Review the batch as a whole against
the current skill: approve it when the edits, taken together, are general, concrete and consistent with the
skill and the evidence; reject it otherwise. For each proposal you see the feedback it was proposed from
(the Mediator's report or a trace summary of the trial), the outcome of that trial, and the scores of the later
attempts at its task, or that there are none yet (a batch is often reviewed before its tasks are tried again).
An edit drawn from feedback that does not support it, or one whose task did no better afterwards, deserves
doubt. Your feedback guides
the Planner, who drafts one update from an approved batch. Answer with one JSON object with the fields
approve (true or false) and feedback.`

// Review asks the Advisor to approve or reject a batch of proposals
// against the current executor skill. Unusable output twice rejects the
// batch with feedback FeedbackInvalidOutput and FellBack set.
func (a *Advisor) Review(ctx context.Context, batchID, currentSkill string, batch []Proposal) (Advice, error) {
	if len(batch) == 0 {
		return Advice{}, fmt.Errorf("advisor review of batch %s: the batch has no proposals; review only a non-empty buffer", batchID)
	}
	skill := prompt.Cap(currentSkill, maxSkillChars)
	// Stable-first: the skill and the fixed request, then this batch.
	var p prompt.Builder
	p.Section("Current executor skill", prompt.Fence(skill))
	p.Section("Your answer", "Approve or reject the whole batch below, and say why in feedback. On approval, say which "+
		"edits the update should keep and how to phrase them; on rejection, what was wrong.")
	p.Text(fmt.Sprintf("\n# Review of batch %s (%d proposals)\n", batchID, len(batch)))
	for i, pr := range batch {
		p.Section(fmt.Sprintf("Proposal %d of %d", i+1, len(batch)), renderProposal(pr))
	}
	ans, fellBack, err := ask(ctx, a.Client, call[AdviceAnswer]{
		What:       "advisor review of batch " + batchID,
		Kind:       KindAdvice,
		Caller:     a.Caller,
		Seed:       prompt.Seed(a.Seed, string(KindAdvice), batchID),
		System:     advisorHeader,
		User:       p.String(),
		Schema:     adviceSchema(),
		SchemaName: schemaAdvice,
		Fallback:   AdviceAnswer{Approve: false, Feedback: FeedbackInvalidOutput},
		Offline:    func(seed int64) AdviceAnswer { return offlineAdvice(seed, batchID) },
	})
	if err != nil {
		return Advice{}, err
	}
	return Advice{Approve: ans.Approve, Feedback: strings.TrimSpace(ans.Feedback), FellBack: fellBack}, nil
}

// renderProposal shows one proposal with its evidence: the rewards of its
// task since, the edit, and the feedback it was proposed from.
func renderProposal(pr Proposal) string {
	var b strings.Builder
	fmt.Fprintf(&b, "id: %s\ntask: %s\niteration: %d\n", pr.ID, pr.TaskID, pr.Iteration)
	b.WriteString(pr.routeText())
	if pr.Outcome.Known() {
		fmt.Fprintf(&b, "outcome of iteration %d: %s\n", pr.Iteration, pr.Outcome.Text())
	}
	b.WriteString(pr.laterText())
	b.WriteString(pr.EditText(maxProposalChars))
	if strings.TrimSpace(pr.Digest) != "" {
		what := "feedback"
		if pr.DigestKind != "" {
			what += " (" + pr.DigestKind + ")"
		}
		fmt.Fprintf(&b, "\n%s it was proposed from:\n%s", what, prompt.Fence(prompt.Cap(pr.Digest, maxDigestChars)))
	}
	return b.String()
}

// laterText says what is known of the task's attempts after the proposal:
// the delayed reward and the rewards since, or plainly that there are none
// yet.
func (pr Proposal) laterText() string {
	if pr.DelayedReward == nil && len(pr.LaterRewards) == 0 {
		return fmt.Sprintf("later attempts at task %s: none yet\n", pr.TaskID)
	}
	delayed := "none (the next attempt gave no usable score)"
	if pr.DelayedReward != nil {
		delayed = prompt.RewardText(pr.DelayedReward)
	}
	return fmt.Sprintf("delayed reward (the next attempt at the task): %s\nrewards of task %s since: %s\n",
		delayed, pr.TaskID, laterRewardsText(pr.LaterRewards))
}

// laterRewardsText lists the most recent maxLaterRewards rewards, oldest
// first, each with its iteration, and says how many older ones it left out.
func laterRewardsText(rs []TrialReward) string {
	if len(rs) == 0 {
		return "none yet"
	}
	var parts []string
	if n := len(rs) - maxLaterRewards; n > 0 {
		parts = append(parts, fmt.Sprintf("(%d earlier not shown)", n))
		rs = rs[n:]
	}
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("iteration %d: %.3f", r.Iteration, r.Reward))
	}
	return strings.Join(parts, ", ")
}

// EditText shows the edit a proposal makes, for a prompt: "edit: append" or
// the fenced text it replaces, then the fenced new content and the
// reasoning on one line, each capped at max characters. The Advisor and the
// Planner both show proposals this way.
func (pr Proposal) EditText(max int) string {
	var b strings.Builder
	if strings.TrimSpace(pr.OldContent) == "" {
		b.WriteString("edit: append\n")
	} else {
		fmt.Fprintf(&b, "replaces:\n%s\n", prompt.Fence(prompt.Cap(pr.OldContent, max)))
	}
	fmt.Fprintf(&b, "new content:\n%s\n", prompt.Fence(prompt.Cap(pr.NewContent, max)))
	fmt.Fprintf(&b, "reasoning: %s", prompt.Cap(prompt.OneLine(pr.Reasoning), max))
	return b.String()
}

// KindAdvice is the kind of the Advisor's call: approve or reject a batch.
const KindAdvice llm.Kind = "advice"

const schemaAdvice = "advice"

// AdviceAnswer is the Advisor's verdict on a batch of proposals.
type AdviceAnswer struct {
	Approve  bool   `json:"approve"`
	Feedback string `json:"feedback"`
}

func adviceSchema() map[string]any {
	return objectSchema(map[string]any{
		"approve":  boolean(),
		"feedback": str("what is good or wrong with the batch"),
	})
}

// Validate checks the verdict carries feedback.
func (a AdviceAnswer) Validate() error {
	if strings.TrimSpace(a.Feedback) == "" {
		return errors.New("advice has no feedback")
	}
	return nil
}

// offlineAdvice approves about two batches in three, by a hash of the batch id.
func offlineAdvice(seed int64, batchID string) AdviceAnswer {
	if llm.OfflineHash(seed, "advice", batchID)%3 != 0 {
		return AdviceAnswer{Approve: true, Feedback: "The batch makes concrete, general edits that do not contradict the skill; approved."}
	}
	return AdviceAnswer{Approve: false, Feedback: "The batch is too close to what the skill already says to be worth a change; rejected."}
}
