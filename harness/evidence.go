package harness

import (
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/mediator"
)

// trialEvidence is everything one trial produced that a model might be
// shown. Each role's view of it is cut through the visibility contract
// (conditions.Setting.Visible), so no channel carries more of a trial than
// the experiment's setting allows.
type trialEvidence struct {
	trace    *executor.Trace
	plan     string
	maxChars int
	// verifier is the run's verifier_feedback level, named in a digest so
	// that a section it hides says so.
	verifier conditions.VerifierFeedback
	// transcript condenses the Executor's transcript; it is only called for
	// a consumer that may see it, since reading it costs.
	transcript func() string
}

// setting is what of the run decides visibility.
func (r *Run) setting() conditions.Setting {
	exp := r.Config.Experiment
	return conditions.Setting{Condition: r.Spec.Condition, Verifier: exp.Verifier(), CrossTask: exp.AllowCrossTaskFeedback, Routing: r.Spec.Routing.Or(),
		Network: r.Barrier != nil}
}

// visible is the evidence consumer c may be shown in this run.
func (r *Run) visible(c conditions.Consumer) conditions.EvidenceSet { return r.setting().Visible(c) }

// digest is the trial as a consumer allowed to see `allowed` may see it.
// Whatever is not allowed is left empty, never summarised or hinted at.
func (e *trialEvidence) digest(allowed conditions.EvidenceSet) mediator.TraceDigest {
	t := e.trace
	d := mediator.TraceDigest{TaskID: t.TaskID, Iteration: t.Iteration, Verifier: e.verifier}
	if allowed.Has(conditions.EvidenceOutcome) {
		d.Status, d.Reward = string(t.Status), t.Reward
		d.TestsPassed, d.TestsFailed, d.TestsTotal = t.Tests.Passed, t.Tests.Failed, t.Tests.Total
	}
	if allowed.Has(conditions.EvidenceTestNames) {
		for _, tr := range t.Tests.Results {
			if tr.Status == "failed" {
				d.FailedTests = append(d.FailedTests, tr.Name)
			}
		}
	}
	if allowed.Has(conditions.EvidenceDiagnostics) {
		d.VerifierExcerpt = capText(t.VerifierOutput, e.maxChars)
		for _, tr := range t.Tests.Results {
			if tr.Status == "failed" && strings.TrimSpace(tr.Message) != "" {
				d.TestMessages = append(d.TestMessages, tr.Name+": "+tr.Message)
			}
		}
	}
	for _, msg := range t.Errors {
		fromVerifier := strings.HasPrefix(msg, executor.VerifierErrorPrefix)
		if fromVerifier && allowed.Has(conditions.EvidenceDiagnostics) || !fromVerifier && allowed.Has(conditions.EvidenceAgentOutput) {
			d.Errors = append(d.Errors, msg)
		}
	}
	if allowed.Has(conditions.EvidenceAgentOutput) {
		d.AgentExcerpt = capText(t.AgentOutput, e.maxChars)
	}
	if allowed.Has(conditions.EvidencePlan) {
		d.Plan = capText(e.plan, e.maxChars)
	}
	if allowed.Has(conditions.EvidenceTranscript) && e.transcript != nil {
		d.Transcript = e.transcript()
	}
	return d
}

// shown is v when the contract allows e, else "".
func shown(allowed conditions.EvidenceSet, e conditions.Evidence, v string) string {
	if allowed.Has(e) {
		return v
	}
	return ""
}

// proposalsFor is a batch as consumer c may see it: without the feedback
// each proposal came from and its task's later rewards unless the contract
// allows them.
func (r *Run) proposalsFor(c conditions.Consumer, batch []mediator.Proposal) []mediator.Proposal {
	// What came from another student is shown only as the routing allows.
	out := slices.DeleteFunc(slices.Clone(batch), func(p mediator.Proposal) bool { return !fromStudentShown(r.visible(c), p) })
	if r.visible(c).Has(conditions.EvidenceProposalEvidence) {
		return out
	}
	for i := range out {
		out[i].Digest, out[i].DigestKind, out[i].LaterRewards = "", "", nil
		if !r.visible(c).Has(conditions.EvidenceOutcome) {
			out[i].Outcome = mediator.Outcome{}
		}
	}
	return out
}

// fromStudentShown reports whether a consumer allowed to see `allowed` may
// see p: a student's own proposal always, another student's pooled one
// with EvidenceOtherStudents, a routed one with EvidenceRoutedItems.
func fromStudentShown(allowed conditions.EvidenceSet, p mediator.Proposal) bool {
	switch {
	case p.From == "":
		return true
	case p.Routed == mediator.FormPooled:
		return allowed.Has(conditions.EvidenceOtherStudents)
	}
	return allowed.Has(conditions.EvidenceRoutedItems)
}

// outcome is the verifier's verdict on a trial, for a role allowed to see it.
func outcome(t *executor.Trace) mediator.Outcome {
	return mediator.Outcome{Status: string(t.Status), Reward: t.Reward,
		TestsPassed: t.Tests.Passed, TestsFailed: t.Tests.Failed, TestsTotal: t.Tests.Total}
}

// trialOutcome is a trial's verdict as a history entry records it.
func trialOutcome(t *executor.Trace) *rundir.TrialOutcome {
	o := outcome(t)
	return &rundir.TrialOutcome{Status: o.Status, Reward: o.Reward, TestsPassed: o.TestsPassed,
		TestsFailed: o.TestsFailed, TestsTotal: o.TestsTotal}
}

// digestOutcome is the outcome a digest carries, as a history entry
// records it; nil when the digest carries none.
func digestOutcome(d mediator.TraceDigest) *rundir.TrialOutcome {
	if d.Status == "" {
		return nil
	}
	return &rundir.TrialOutcome{Status: d.Status, Reward: d.Reward, TestsPassed: d.TestsPassed,
		TestsFailed: d.TestsFailed, TestsTotal: d.TestsTotal}
}

// sourceShown reports whether the Reflector may see what this run's plans
// and proposals were written from: not trace summaries, which carry the
// verifier's evidence beyond the outcome.
func (r *Run) sourceShown() bool {
	v := r.visible(conditions.ConsumerReflector)
	return v.Has(conditions.EvidenceSharedNotes) || v.Has(conditions.EvidenceOwnReports)
}

// shownSource is source when it may be shown, else "".
func shownSource(ok bool, source string) string {
	if ok {
		return source
	}
	return ""
}
