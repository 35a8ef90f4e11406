package mediator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/prompt"
)

// Judge compares two executor-skill candidates of a tournament on the
// evidence the batch they were drafted from carries. It holds no mutable
// state.
type Judge struct {
	Client *llm.Client
	// Caller is the ledger path calls are charged to.
	Caller string
	Seed   int64
}

// KindJudge is the kind of the judge's call: which of two candidates is better.
const KindJudge llm.Kind = "judge"

const schemaJudge = "judgement"

// Positions a judge may name.
const (
	JudgeFirst  = "first"
	JudgeSecond = "second"
)

// JudgeAnswer is the judge's verdict on one ordered pair.
type JudgeAnswer struct {
	// Winner is "first" or "second": the candidate shown first or second.
	Winner    string `json:"winner"`
	Reasoning string `json:"reasoning"`
}

func judgeSchema() map[string]any {
	return objectSchema(map[string]any{
		"winner":    map[string]any{"type": "string", "enum": []string{JudgeFirst, JudgeSecond}},
		"reasoning": str("why the winner is the better executor skill, in two or three sentences"),
	})
}

// Validate checks the verdict names a position and says why.
func (a JudgeAnswer) Validate() error {
	if a.Winner != JudgeFirst && a.Winner != JudgeSecond {
		return fmt.Errorf("winner %q is neither %q nor %q", a.Winner, JudgeFirst, JudgeSecond)
	}
	if strings.TrimSpace(a.Reasoning) == "" {
		return errors.New("judgement has no reasoning")
	}
	return nil
}

// JudgeCandidate is one side of a comparison: a candidate's id (never shown
// to the model, so a name cannot sway it) and its SKILL.md.
type JudgeCandidate struct {
	ID      string
	Content string
}

// JudgeInput is what one comparison shows: the skill in use, the batch the
// candidates answer, the recent rejections, and the two candidates in the
// order given.
type JudgeInput struct {
	BatchID      string
	CurrentSkill string
	Proposals    []Proposal
	Advice       string
	Rejections   []string
	First        JudgeCandidate
	Second       JudgeCandidate
}

// Verdict is the result of one ordered comparison.
type Verdict struct {
	// Winner is JudgeFirst or JudgeSecond; empty when the answer was
	// unusable twice, which counts as a draw.
	Winner    string
	Reasoning string
	FellBack  bool
}

const judgeHeader = `You are the judge of a research lab of LLM agents. Several candidate rewrites of the Executor's skill, the
instructions the Executor follows on every task, were drafted from one batch of proposed edits. You are shown
the current skill, the batch (each proposal with the feedback it came from and the outcome of its trial),
recent rejected batches, and two candidates. Decide which candidate would make the Executor succeed on more
tasks: general, concrete guidance the evidence supports beats length, novelty or polish. The order in which the
candidates are shown means nothing. Answer with one JSON object with the fields winner ("first" or "second")
and reasoning.`

// maxJudgeRejectionChars caps one rejection summary in a judge's prompt.
const maxJudgeRejectionChars = 600

// maxJudgeRejections is how many recent rejections a judge sees.
const maxJudgeRejections = 5

// Compare asks which of in.First and in.Second is the better candidate.
// Unusable output twice is a draw (empty Winner, FellBack set); model and
// budget errors are returned.
func (j *Judge) Compare(ctx context.Context, in JudgeInput) (Verdict, error) {
	if in.First.ID == in.Second.ID {
		return Verdict{}, fmt.Errorf("judge batch %s: candidate %s cannot be compared with itself", in.BatchID, in.First.ID)
	}
	var b prompt.Builder
	b.Section("Current executor skill", prompt.Fence(prompt.Cap(in.CurrentSkill, maxSkillChars)))
	b.Section("Your answer", "Say which candidate, first or second, is the better executor skill, and why.")
	b.Text(fmt.Sprintf("\n# Batch %s (%d proposals)\n", in.BatchID, len(in.Proposals)))
	for i, pr := range in.Proposals {
		b.Section(fmt.Sprintf("Proposal %d of %d", i+1, len(in.Proposals)), renderProposal(pr))
	}
	if a := strings.TrimSpace(in.Advice); a != "" {
		b.Section("Advisor's feedback", prompt.Cap(a, maxProposalChars))
	}
	if r := prompt.Bullets(in.Rejections, maxJudgeRejections, maxJudgeRejectionChars, prompt.Compact); r != "" {
		b.Section("Recently rejected batches", r)
	}
	b.Section("First candidate", prompt.Fence(prompt.Cap(in.First.Content, maxSkillChars)))
	b.Section("Second candidate", prompt.Fence(prompt.Cap(in.Second.Content, maxSkillChars)))
	// The seed and the offline answer depend on the pair, not on its
	// order, so the offline judge has no position bias.
	lo, hi := in.First, in.Second
	if hi.ID < lo.ID {
		lo, hi = hi, lo
	}
	seed := prompt.Seed(j.Seed, string(KindJudge), in.BatchID, lo.ID, hi.ID)
	ans, fellBack, err := ask(ctx, j.Client, call[JudgeAnswer]{
		What:       fmt.Sprintf("judge %s against %s in batch %s", in.First.ID, in.Second.ID, in.BatchID),
		Kind:       KindJudge,
		Caller:     j.Caller,
		Seed:       seed,
		System:     judgeHeader,
		User:       b.String(),
		Schema:     judgeSchema(),
		SchemaName: schemaJudge,
		Fallback:   JudgeAnswer{},
		Offline:    func(int64) JudgeAnswer { return offlineJudge(seed, in.First, in.Second) },
	})
	if err != nil {
		return Verdict{}, err
	}
	if fellBack {
		return Verdict{Reasoning: "judge output invalid", FellBack: true}, nil
	}
	return Verdict{Winner: ans.Winner, Reasoning: strings.TrimSpace(ans.Reasoning)}, nil
}

// offlineJudge prefers, by a hash of the pair and each text, the same
// candidate in either order: it exercises the tournament without a
// position bias and is never evidence.
func offlineJudge(seed int64, first, second JudgeCandidate) JudgeAnswer {
	a := llm.OfflineHash(seed, "judge", first.Content)
	b := llm.OfflineHash(seed, "judge", second.Content)
	if a > b || a == b && first.ID < second.ID {
		return JudgeAnswer{Winner: JudgeFirst, Reasoning: "The first candidate states the batch's edits more generally and concretely."}
	}
	return JudgeAnswer{Winner: JudgeSecond, Reasoning: "The second candidate states the batch's edits more generally and concretely."}
}
