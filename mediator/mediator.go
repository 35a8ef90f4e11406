// Package mediator is the home of the lab's model-backed roles around the
// Executor: the Planner, which plans each trial, proposes executor-skill
// edits and drafts an update from an approved batch; the Mediator, which
// turns one execution trace into a report for the Planner (or withholds it);
// the Advisor, which reviews a batch of executor-skill proposals; the
// Reflector, which rewrites a meta-skill from contrastive pairs of history
// entries; and the Compactor's summary of a long trace.
//
// Each role sees only what it is meant to: the Mediator its trace and its
// own protocol, the Advisor the executor skill and the batch, the Reflector
// the meta-skill it rewrites and the pairs. Each role owns its answer type,
// the kind of its calls and its offline answers, which it derives from the
// same inputs as its prompt. Every call goes through one helper: answers
// are validated, a malformed answer is retried once and then replaced by a
// documented fallback, which is reported so callers can count it. Budget
// errors are never fallen back on: they are returned.
package mediator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/prompt"
)

// TraceDigest is what the Mediator may see of one execution trace. The run
// loop builds it from the trace; every text in it is capped again here.
type TraceDigest struct {
	TaskID    string
	Iteration int
	Status    string
	// Reward is nil when the verifier gave none.
	Reward                               *float64
	TestsPassed, TestsFailed, TestsTotal int
	FailedTests                          []string
	// TestMessages are the failed tests' assertion messages, as
	// "name: message"; shown only when verifier diagnostics are.
	TestMessages                  []string
	VerifierExcerpt, AgentExcerpt string
	Errors                        []string
	// Plan is the plan the Executor was given.
	Plan string
	// Transcript is the Executor's transcript condensed to the run's
	// budget: its tool calls, commands, exit codes, heads and tails of
	// output, errors. Empty when there is none or none is to be shown.
	Transcript string
	// Verifier is the verifier_feedback level the digest was cut at. A
	// section the level hides says so in the prompt, so an empty one is
	// never read as "nothing failed"; "" shows every section as it is.
	Verifier conditions.VerifierFeedback
}

// Mediator writes reports on traces for the Planner.
type Mediator struct {
	Client *llm.Client
	// Caller is the ledger path calls are charged to.
	Caller string
	// MaxChars caps a report's content in characters; <= 0 means no cap.
	MaxChars int
	// TranscriptChars caps the condensed transcript shown; <= 0 means
	// maxTranscriptChars.
	TranscriptChars int
	Seed            int64
}

// Report is the Mediator's output for one trace.
type Report struct {
	// Content is the report; it is never shown to the Planner when Withheld.
	Content  string
	Withheld bool
	// Reason is the Mediator's reasoning: why this report, or why it was withheld.
	Reason string
	// AbstractionLevel is LevelTrace, LevelReflection or LevelPattern
	// (possibly empty on a withheld report).
	AbstractionLevel string
	// FellBack is set when the model's output was unusable twice and the
	// report was withheld for that reason.
	FellBack bool
	// Chars is the length of Content in characters, after any cut.
	Chars int
	// Truncated is set when Content was cut to MaxChars.
	Truncated bool
}

// ReasonInvalidOutput is the reason of a report withheld because the
// Mediator's output could not be used.
const ReasonInvalidOutput = "mediator output invalid"

// The Mediator's system prompt: its role, then its protocol, then what a
// report is (prompt.System), all stable from call to call.
const (
	mediatorRole   = `You are the Mediator of a research lab of LLM agents. Your protocol follows; follow it.`
	mediatorHeader = `You read one execution trace of the Executor (reward, test results, excerpts of its output, errors,
the plan it followed, and a condensed transcript of the commands it ran and what they printed) and decide
what, if anything, the Planner should learn from it. You write one report for the Planner, or withhold it
with a reason. You never change the task, never talk to the Executor and never edit skills.
The experiment's setting may hide some of the verifier's evidence from you: a section marked "withheld by
the setting" was hidden, not empty, and never means that nothing failed.
Answer with one JSON object with the fields abstraction_level ("trace", "reflection" or "pattern"),
content (the report; empty when withheld), withheld (true or false) and reasoning.`
)

// Report asks the Mediator for a report on one trace under protocol, its
// own SKILL.md. The report is cut to MaxChars. Unusable output twice gives
// a withheld report with reason ReasonInvalidOutput and FellBack set.
func (m *Mediator) Report(ctx context.Context, protocol string, d TraceDigest) (Report, error) {
	trace := renderTrace(d)
	budget := "no fixed limit; keep it short"
	if m.MaxChars > 0 {
		budget = fmt.Sprintf("at most %d characters; anything longer is cut", m.MaxChars)
	}
	// Stable-first, so consecutive reports share a long prefix: the fixed
	// request, then this trace and its transcript.
	var p prompt.Builder
	p.Section("Your answer", "Report budget: "+budget+".\n"+
		"Decide whether the Planner should see a report on the trace below. If yes, write it at the lowest level of "+
		"abstraction that carries the lesson. If not, set withheld to true and give the reason in reasoning.")
	p.Text("\n")
	p.Text(trace)
	if t := strings.TrimSpace(d.Transcript); t != "" {
		p.Section("Transcript (condensed)", transcriptNote+"\n\n"+prompt.Cap(t, m.transcriptCap()))
	}

	iter := strconv.Itoa(d.Iteration)
	ans, fellBack, err := ask(ctx, m.Client, call[ReportAnswer]{
		What:       fmt.Sprintf("mediator report on task %s iteration %d", d.TaskID, d.Iteration),
		Kind:       KindReport,
		Caller:     m.Caller,
		Seed:       prompt.Seed(m.Seed, string(KindReport), d.TaskID, iter),
		System:     prompt.System(mediatorRole, protocol, mediatorHeader),
		User:       p.String(),
		Schema:     reportSchema(),
		SchemaName: schemaReport,
		Fallback:   ReportAnswer{Withheld: true, Reasoning: ReasonInvalidOutput},
		Offline:    func(seed int64) ReportAnswer { return offlineReport(seed, protocol, d.TaskID, iter, offlineTrace(d)) },
	})
	if err != nil {
		return Report{}, err
	}
	rep := Report{
		Withheld:         ans.Withheld,
		Reason:           strings.TrimSpace(ans.Reasoning),
		AbstractionLevel: ans.AbstractionLevel,
		FellBack:         fellBack,
	}
	rep.Content, rep.Truncated = prompt.Clip(strings.TrimSpace(ans.Content), m.MaxChars)
	rep.Chars = utf8.RuneCountInString(rep.Content)
	return rep, nil
}

// transcriptNote tells the Mediator how to read the condensed transcript.
const transcriptNote = "Every tool call of the Executor in order, numbered, by agent (a subagent as kind#dispatch), " +
	"with exit codes and the heads and tails of output. The first error and the last steps are whole; " +
	"other steps may be shortened to one line or omitted, and cut text is marked."

func (m *Mediator) transcriptCap() int {
	if m.TranscriptChars > 0 {
		return m.TranscriptChars
	}
	return maxTranscriptChars
}

// renderTrace is the trace part of the Mediator's prompt, also what the
// offline Mediator reports on. The transcript is not part of it, so offline
// answers do not depend on what a sandbox printed.
func renderTrace(d TraceDigest) string {
	var p prompt.Builder
	p.Line("# Trace of task %s, iteration %d", d.TaskID, d.Iteration)

	var outcome strings.Builder
	fmt.Fprintf(&outcome, "status: %s\n", d.Status)
	if d.Reward != nil {
		fmt.Fprintf(&outcome, "reward: %s\n", prompt.RewardText(d.Reward))
	} else {
		outcome.WriteString("reward: none (the verifier gave no reward)\n")
	}
	if d.TestsTotal > 0 {
		fmt.Fprintf(&outcome, "tests: %d passed, %d failed, %d total", d.TestsPassed, d.TestsFailed, d.TestsTotal)
	} else {
		outcome.WriteString("tests: no per-test results")
	}
	p.Section("Outcome", outcome.String())
	p.Section("Failed tests", d.shown(conditions.EvidenceTestNames,
		prompt.Bullets(d.FailedTests, maxFailedTests, maxErrorChars, prompt.AsGiven)))
	p.Section("Assertion messages", d.shown(conditions.EvidenceDiagnostics,
		prompt.Bullets(d.TestMessages, maxFailedTests, maxErrorChars, prompt.AsGiven)))
	errs := prompt.Bullets(d.Errors, maxErrors, maxErrorChars, prompt.AsGiven)
	if d.hides(conditions.EvidenceDiagnostics) {
		errs = strings.TrimSpace(errs + "\n(errors the verifier reported are " + d.withheld() + ")")
	}
	p.Section("Errors", errs)
	p.Section("Plan the Executor was given", prompt.Cap(d.Plan, maxExcerptChars))
	p.Section("Verifier output (excerpt)", d.shown(conditions.EvidenceDiagnostics, prompt.Cap(d.VerifierExcerpt, maxExcerptChars)))
	p.Section("Executor output (excerpt)", prompt.Cap(d.AgentExcerpt, maxExcerptChars))
	return p.String()
}

// hides reports whether the digest's verifier level withholds e.
func (d TraceDigest) hides(e conditions.Evidence) bool {
	return d.Verifier != "" && !d.Verifier.Shows(e)
}

// shown is body, or the note that the setting withholds it.
func (d TraceDigest) shown(e conditions.Evidence, body string) string {
	if d.hides(e) {
		return "(" + d.withheld() + ")"
	}
	return body
}

// withheld names the setting that hides a section, so the model can tell
// a hidden section from an empty one.
func (d TraceDigest) withheld() string {
	return fmt.Sprintf("withheld by the setting verifier_feedback = %q", string(d.Verifier))
}

// offlineTrace is the trace the offline Mediator reports on: the trial's
// evidence without the notes on what the setting withholds, so offline
// answers depend on what a trial showed, not on how hidden sections are
// labelled.
func offlineTrace(d TraceDigest) string {
	d.Verifier = ""
	return renderTrace(d)
}

// KindReport is the kind of the Mediator's call: report or withhold.
const KindReport llm.Kind = "report"

// Report abstraction levels.
const (
	LevelTrace      = "trace"
	LevelReflection = "reflection"
	LevelPattern    = "pattern"
)

const schemaReport = "report"

// ReportAnswer is the Mediator's report on one trace, or its decision to
// withhold one.
type ReportAnswer struct {
	// AbstractionLevel is LevelTrace, LevelReflection or LevelPattern.
	AbstractionLevel string `json:"abstraction_level"`
	Content          string `json:"content"`
	Withheld         bool   `json:"withheld"`
	Reasoning        string `json:"reasoning"`
}

func reportSchema() map[string]any {
	return objectSchema(map[string]any{
		// "" is only for a withheld report, which has no level.
		"abstraction_level": map[string]any{"type": "string", "enum": []string{LevelTrace, LevelReflection, LevelPattern, ""}},
		"content":           str("the report for the Planner; empty when withheld"),
		"withheld":          boolean(),
		"reasoning":         str("why this report, or why it is withheld"),
	})
}

// Validate checks a report has a known level and content, and a withheld
// one a reason.
func (a ReportAnswer) Validate() error {
	if a.Withheld {
		if strings.TrimSpace(a.Reasoning) == "" {
			return errors.New("withheld report gives no reasoning")
		}
		if a.AbstractionLevel != "" && !validLevel(a.AbstractionLevel) {
			return fmt.Errorf("abstraction_level %q is not one of trace, reflection, pattern", a.AbstractionLevel)
		}
		return nil
	}
	if !validLevel(a.AbstractionLevel) {
		return fmt.Errorf("abstraction_level %q is not one of trace, reflection, pattern", a.AbstractionLevel)
	}
	if strings.TrimSpace(a.Content) == "" {
		return errors.New("report content is empty (set withheld to withhold it)")
	}
	return nil
}

func validLevel(l string) bool { return l == LevelTrace || l == LevelReflection || l == LevelPattern }

// offlineReport withholds about one report in four and otherwise reports
// at a level picked by a hash of everything the Mediator was shown.
func offlineReport(seed int64, protocol, taskID, iteration, trace string) ReportAnswer {
	// Named parts in key order, as offline answers have always been hashed.
	h := llm.OfflineHash(seed, "report", "iteration", iteration, "skill", protocol, "task_id", taskID, "trace_summary", trace)
	if h%4 == 0 {
		return ReportAnswer{
			Withheld:  true,
			Reasoning: "The trace holds nothing the Planner could act on beyond what it already knows; withholding.",
		}
	}
	summary := prompt.OneLine(trace)
	if summary == "" {
		summary = "the trace gave no summary"
	}
	levels := []string{LevelTrace, LevelReflection, LevelPattern}
	level := levels[(h/4)%3]
	task := taskID
	if task == "" {
		task = "the task"
	}
	content := fmt.Sprintf("On %s: %s. Next time, make sure every output the instruction names exists before submitting.",
		task, llm.Truncate(summary, 400))
	return ReportAnswer{
		AbstractionLevel: level,
		Content:          content,
		Reasoning:        "Summarised the trace at the " + level + " level for the Planner.",
	}
}
