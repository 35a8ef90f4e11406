package mediator

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/prompt"
)

// The offline Planner writes the cues the offline Executor responds to, so
// that feedback and skill edits change offline rewards end to end.

// missingOutput finds, in prior context, evidence that an output was missing.
var missingOutput = regexp.MustCompile(`(?i)(\bexists\b|does not exist|no such file|not found)`)

// offlinePlan puts executor.OutputsFirstStep first when the prior context reports
// a missing output. Its draft tag and its way of checking the result are
// drawn from the call's seed, so that, as with a model, calls with different
// seeds give different plans and calls with the same seed the same one.
func offlinePlan(seed int64, taskID, instruction, prior string) PlanAnswer {
	task := taskID
	if task == "" {
		task = "this task"
	}
	goal := llm.Truncate(prompt.OneLine(firstLine(instruction)), 160)
	var b strings.Builder
	draw := llm.OfflineHash(seed, "plan", taskID)
	fmt.Fprintf(&b, "Plan for %s (draft %04x):\n", task, draw>>48)
	if missingOutput.MatchString(prior) {
		b.WriteString(executor.OutputsFirstStep + "\n")
	}
	if goal != "" {
		fmt.Fprintf(&b, "1. Reread the goal: %s\n", goal)
	} else {
		b.WriteString("1. Reread the instruction and note every file it names.\n")
	}
	b.WriteString("2. List the working directory and read the input files the instruction mentions.\n")
	b.WriteString("3. Do the work and write each output file at the exact path the instruction gives.\n")
	check := offlineChecks[draw%uint64(len(offlineChecks))]
	fmt.Fprintf(&b, "4. %s, then submit.", check)
	return PlanAnswer{Plan: b.String()}
}

// offlineChecks are the ways an offline plan checks the result before
// submitting.
var offlineChecks = []string{
	"Check the outputs exist and look right",
	"Reopen each output file and compare it with what the instruction asks for",
	"List the outputs with their sizes and read the first lines of each",
	"Rerun the last command and confirm the outputs did not change",
	"Check each output's path, name and format against the instruction",
	"Read every output back in full and fix anything that looks wrong",
	"Confirm no output is empty and every one sits at the exact path named",
	"Walk through the instruction line by line and tick off each output",
}

// proposalSeen is what a proposal prompt was rendered from.
type proposalSeen struct {
	taskID, iteration, instruction, skill, plannerSkill string
	feedback, feedbackKind, rejections                  string
}

// offline proposes one piece of executor.ExecutorAdviceLines the skill lacks,
// picked by a hash of everything the Planner was shown.
func (s proposalSeen) offline(seed int64) ProposalAnswer {
	var missing []string
	for _, line := range executor.ExecutorAdviceLines() {
		if !strings.Contains(s.skill, line) {
			missing = append(missing, line)
		}
	}
	if len(missing) == 0 {
		return ProposalAnswer{Reasoning: "Every piece of advice I would give is already in the skill."}
	}
	// Feedback that names a missing output (a failed "... exists" test, say)
	// asks for the advice that fixes exactly that, as a real Planner would.
	if missing[0] == executor.DiligenceAdvice && missingOutput.MatchString(s.feedback) {
		return ProposalAnswer{Propose: true, NewContent: executor.DiligenceAdvice,
			Reasoning: "The feedback shows an output file was missing; the skill should say to create every output first."}
	}
	// Named parts in key order, as offline answers have always been hashed.
	h := llm.OfflineHash(seed, "proposal",
		"feedback", s.feedback,
		"feedback_kind", s.feedbackKind,
		"instruction", s.instruction,
		"iteration", s.iteration,
		"planner_skill", s.plannerSkill,
		"recent_rejections", s.rejections,
		"skill", s.skill,
		"task_id", s.taskID)
	return ProposalAnswer{
		Propose:    true,
		NewContent: missing[h%uint64(len(missing))],
		Reasoning:  "The traces suggest the executor would score higher with this advice, which the skill lacks.",
	}
}

// offlineDraft appends the approved lines (proposals, one per line) the
// skill does not have yet.
func offlineDraft(skill, proposals string) string {
	skill = ensureFrontMatter(skill, "")
	var add []string
	for _, line := range strings.Split(proposals, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if strings.TrimSpace(line) == "" || strings.Contains(skill, line) || slices.Contains(add, line) {
			continue
		}
		add = append(add, line)
	}
	if len(add) == 0 {
		return skill
	}
	return strings.TrimRight(skill, "\n") + "\n" + strings.Join(add, "\n") + "\n"
}
