package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// DiligenceAdvice is executor.DiligenceAdvice, which the offline Planner
// below still needs; package llm cannot import executor.
//
// Deprecated: use executor.DiligenceAdvice.
const DiligenceAdvice = "- Before you submit, create every output file the instruction names, even if your answer is incomplete."

// ExecutorAdviceLines is executor.ExecutorAdviceLines, for the offline
// Planner below.
//
// Deprecated: use executor.ExecutorAdviceLines.
func ExecutorAdviceLines() []string {
	return []string{
		DiligenceAdvice,
		"- List the working directory and read the input files the instruction mentions before changing anything.",
		"- Run the program or script you wrote at least once and read its output before you submit.",
		"- Match the output format the instruction asks for exactly: file names, paths, separators and trailing newlines.",
		"- When a command fails, read its error message and fix the cause instead of repeating the command.",
		"- Keep each command short and give long-running commands an explicit timeout.",
	}
}

// Offline answers calls deterministically, without network or key. It does
// not know what any call is for: the code that makes a call attaches the
// Player that answers it (Client.WithPlayer), so each agent owns its offline
// behaviour and no request carries inputs meant only for this provider.
// Offline answers exercise the machinery and are never evidence.
type Offline struct {
	seed   int64
	player Player
}

// A Player answers one call in place of a model, deterministically from the
// provider's seed and the request. It must return a message of the shape the
// call asks for (a JSON object for a schema, tool calls for a tool turn).
type Player func(seed int64, req Request) (Message, error)

// NewOffline returns an offline provider.
func NewOffline(seed int64) *Offline { return &Offline{seed: seed} }

// WithPlayer returns a copy of c whose offline provider answers through p. A
// client backed by a real model is returned unchanged, so callers attach
// their player on every call without asking which provider they have.
func (c *Client) WithPlayer(p Player) *Client {
	if c == nil {
		return nil
	}
	o, ok := c.Provider.(*Offline)
	if !ok {
		return c
	}
	cp := *c
	cp.Provider = &Offline{seed: o.seed, player: p}
	return &cp
}

// Offline reports true.
func (o *Offline) Offline() bool { return true }

// Complete answers req. The same request and seed always give the same
// response.
func (o *Offline) Complete(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	var msg Message
	finish := "stop"
	if o.player != nil {
		m, err := o.player(o.seed, req)
		if err != nil {
			return Response{}, fmt.Errorf("offline answer for %s: %w", req.Caller, err)
		}
		msg = m
		if msg.Role == "" {
			msg.Role = RoleAssistant
		}
		if len(msg.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	} else {
		v, err := o.structured(req)
		if err != nil {
			return Response{}, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return Response{}, fmt.Errorf("offline %s answer: %w", req.Kind, err)
		}
		msg = Message{Role: RoleAssistant, Content: string(b)}
	}
	u := Usage{
		InputTokens:  int64(EstimateTokens(req.Messages)),
		OutputTokens: int64(estimateTokens(msg)),
		CostKnown:    true,
		Calls:        1,
	}
	return Response{Message: msg, Usage: u, FinishReason: finish, Model: "offline", Attempts: 1}, nil
}

func (o *Offline) structured(req Request) (any, error) {
	in := req.Inputs
	switch req.Kind {
	case KindPlan:
		return o.plan(req), nil
	case KindReport:
		return o.report(req), nil
	case KindProposal:
		return o.proposal(req), nil
	case KindAdvice:
		approve := hashOf(o.seed, "advice", in[InputBatchID])%3 != 0
		if approve {
			return AdviceAnswer{Approve: true, Feedback: "The batch makes concrete, general edits that do not contradict the skill; approved."}, nil
		}
		return AdviceAnswer{Approve: false, Feedback: "The batch is too close to what the skill already says to be worth a change; rejected."}, nil
	case KindSkillDraft:
		return DraftAnswer{Content: o.draft(req)}, nil
	case KindReflection:
		return o.reflection(req), nil
	case KindCompaction, KindTraceSummary:
		return SummaryAnswer{Summary: digest(o.sourceText(req))}, nil
	case "":
		return nil, fmt.Errorf("offline provider: request has no kind and no tools; set Request.Kind")
	default:
		return nil, fmt.Errorf("offline provider cannot answer calls of kind %q", req.Kind)
	}
}

// OutputsFirstStep is executor.OutputsFirstStep, for the offline Planner
// below.
//
// Deprecated: use executor.OutputsFirstStep.
const OutputsFirstStep = "0. An earlier attempt left an output missing: create every output file the instruction names first, then fill it in."

// missingOutput finds, in prior context, evidence that an output was missing.
var missingOutput = regexp.MustCompile(`(?i)(\bexists\b|does not exist|no such file|not found)`)

func (o *Offline) plan(req Request) PlanAnswer {
	task := req.Inputs[InputTaskID]
	if task == "" {
		task = "this task"
	}
	goal := truncate(oneLine(firstLine(req.Inputs[InputInstruction])), 160)
	var b strings.Builder
	fmt.Fprintf(&b, "Plan for %s:\n", task)
	if missingOutput.MatchString(req.Inputs["prior_context"]) {
		b.WriteString(OutputsFirstStep + "\n")
	}
	if goal != "" {
		fmt.Fprintf(&b, "1. Reread the goal: %s\n", goal)
	} else {
		b.WriteString("1. Reread the instruction and note every file it names.\n")
	}
	b.WriteString("2. List the working directory and read the input files the instruction mentions.\n")
	b.WriteString("3. Do the work and write each output file at the exact path the instruction gives.\n")
	b.WriteString("4. Check the outputs exist and look right, then submit.")
	return PlanAnswer{Plan: b.String()}
}

func (o *Offline) report(req Request) ReportAnswer {
	h := hashOf(o.seed, append([]string{"report"}, canonicalInputs(req.Inputs)...)...)
	if h%4 == 0 {
		return ReportAnswer{
			Withheld:  true,
			Reasoning: "The trace holds nothing the Planner could act on beyond what it already knows; withholding.",
		}
	}
	summary := oneLine(req.Inputs[InputTraceSummary])
	if summary == "" {
		summary = "the trace gave no summary"
	}
	levels := []string{LevelTrace, LevelReflection, LevelPattern}
	level := levels[(h/4)%3]
	task := req.Inputs[InputTaskID]
	if task == "" {
		task = "the task"
	}
	content := fmt.Sprintf("On %s: %s. Next time, make sure every output the instruction names exists before submitting.",
		task, truncate(summary, 400))
	return ReportAnswer{
		AbstractionLevel: level,
		Content:          content,
		Reasoning:        "Summarised the trace at the " + level + " level for the Planner.",
	}
}

func (o *Offline) proposal(req Request) ProposalAnswer {
	skill := req.Inputs[InputSkill]
	var missing []string
	for _, line := range ExecutorAdviceLines() {
		if !strings.Contains(skill, line) {
			missing = append(missing, line)
		}
	}
	if len(missing) == 0 {
		return ProposalAnswer{Reasoning: "Every piece of advice I would give is already in the skill."}
	}
	pick := missing[hashOf(o.seed, append([]string{"proposal"}, canonicalInputs(req.Inputs)...)...)%uint64(len(missing))]
	return ProposalAnswer{
		Propose:    true,
		NewContent: pick,
		Reasoning:  "The traces suggest the executor would score higher with this advice, which the skill lacks.",
	}
}

func (o *Offline) draft(req Request) string {
	skill := ensureFrontMatter(req.Inputs[InputSkill], req.Inputs)
	var add []string
	for _, line := range strings.Split(req.Inputs[InputProposals], "\n") {
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

func (o *Offline) reflection(req Request) ReflectionAnswer {
	pairs := strings.TrimSpace(req.Inputs[InputPairs])
	if pairs == "" {
		return ReflectionAnswer{NoChange: true, Reasoning: "No contrastive pairs to learn from."}
	}
	var lessons []string
	n := 0
	for _, line := range strings.Split(pairs, "\n") {
		line = oneLine(line)
		if line == "" {
			continue
		}
		n++
		if len(lessons) < 3 {
			lessons = append(lessons, "- Compare with this contrast before acting: "+truncate(line, 160))
		}
	}
	section := "## Lessons\n\n" + strings.Join(lessons, "\n") + "\n"
	skill := ensureFrontMatter(req.Inputs[InputSkill], req.Inputs)
	return ReflectionAnswer{
		Content:   replaceSection(skill, "## Lessons", section),
		Reasoning: fmt.Sprintf("Derived %d lessons from %d lines of contrastive pairs.", len(lessons), n),
	}
}

// sourceText is what a summary call summarises: Inputs["text"], else every
// non-system message.
func (o *Offline) sourceText(req Request) string {
	if t := req.Inputs[InputText]; t != "" {
		return t
	}
	var parts []string
	for _, m := range req.Messages {
		if m.Role != RoleSystem && m.Content != "" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// digest is a deterministic, bounded summary: the text itself when short,
// else its beginning and end around a note of what was cut.
func digest(text string) string {
	t := oneLine(text)
	if t == "" {
		return "Nothing to summarise."
	}
	if len(t) <= 600 {
		return t
	}
	head := t[:runeStart(t, 400)]
	tail := t[runeStart(t, len(t)-150):]
	return fmt.Sprintf("%s [... %d characters omitted ...] %s", head, len(t)-len(head)-len(tail), tail)
}

// ensureFrontMatter returns skill unchanged when it has front matter, else
// with a minimal one, so a draft is always a SKILL.md.
func ensureFrontMatter(skill string, in map[string]string) string {
	if _, _, ok := splitFrontMatter(skill); ok && CheckSkillText(skill) == nil {
		return skill
	}
	name := in[InputRole]
	if name == "" {
		name = "executor"
	}
	body := strings.TrimSpace(skill)
	if body == "" {
		body = "# " + name + "\n\nGuidance for the " + name + "."
	}
	return "---\nname: " + name + "\ndescription: Guidance for the " + name + ", kept by the harness.\n---\n\n" + body + "\n"
}

// replaceSection replaces the Markdown section that starts with heading (up
// to the next heading of the same level) with section, or appends section.
func replaceSection(doc, heading, section string) string {
	lines := strings.Split(doc, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == heading {
			start = i
			break
		}
	}
	if start < 0 {
		return strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "## ") || strings.HasPrefix(lines[i], "# ") {
			end = i
			break
		}
	}
	before := strings.TrimRight(strings.Join(lines[:start], "\n"), "\n")
	after := strings.Join(lines[end:], "\n")
	out := before + "\n\n" + section
	if strings.TrimSpace(after) != "" {
		out += "\n" + after
	}
	return out
}

func canonicalInputs(in map[string]string) []string {
	keys := slices.Sorted(maps.Keys(in))
	out := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		out = append(out, k, in[k])
	}
	return out
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			return strings.TrimLeft(t, "# ")
		}
	}
	return ""
}

// JSONAnswer is a Player's answer to a structured call: v as a JSON object.
func JSONAnswer(v any) (Message, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Message{}, fmt.Errorf("encode offline answer: %w", err)
	}
	return Message{Role: RoleAssistant, Content: string(b)}, nil
}
