package harness

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/llm/prompt"
)

// crossTaskHeader marks feedback that came from other tasks, so neither the
// Planner nor a reader of its prompt can mistake it for same-task evidence.
const crossTaskHeader = "Feedback from OTHER tasks (allow_cross_task_feedback = true); it is not about this task"

// traceNote is the compact summary of one usable trace kept for full_traces.
type traceNote struct {
	TaskID    string `json:"task_id"`
	Iteration int    `json:"iteration"`
	Summary   string `json:"summary"`
}

// reportNote is the latest exposed Mediator report of a task.
type reportNote struct {
	TaskID    string `json:"task_id"`
	Iteration int    `json:"iteration"`
	EntryID   string `json:"entry_id"`
	Content   string `json:"content"`
}

// feedbackBook keeps what the conditions may show the Planner: per task, the
// recent usable trace summaries and the latest report that was not withheld.
// It lives in the run's state and is only touched between trials of a task
// or at iteration boundaries, under the run's lock.
type feedbackBook struct {
	Traces  map[string][]traceNote `json:"traces"`
	Reports map[string]reportNote  `json:"reports"`
}

func newFeedbackBook() feedbackBook {
	return feedbackBook{Traces: map[string][]traceNote{}, Reports: map[string]reportNote{}}
}

func (b *feedbackBook) addTrace(n traceNote, window int) {
	list := append(b.Traces[n.TaskID], n)
	if window > 0 && len(list) > window {
		list = list[len(list)-window:]
	}
	b.Traces[n.TaskID] = list
}

// priorContext builds the Planner's prior context for a task from what the
// contract allows it (allowed). Same-task feedback comes first; other tasks'
// feedback, when allowed, follows under its own header.
func (b *feedbackBook) priorContext(allowed conditions.EvidenceSet, taskID, sharedNotes string, maxChars int) (header, body string) {
	switch {
	case allowed.Has(conditions.EvidenceSharedNotes):
		return "Shared notes", capText(strings.TrimSpace(sharedNotes), maxChars)
	case allowed.Has(conditions.EvidenceOwnSummaries):
		var sb strings.Builder
		for _, n := range b.Traces[taskID] {
			fmt.Fprintf(&sb, "### Iteration %d\n%s\n\n", n.Iteration, n.Summary)
		}
		if allowed.Has(conditions.EvidenceOtherSummaries) {
			writeCross(&sb, sortedKeys(b.Traces), taskID, func(id string) string {
				list := b.Traces[id]
				n := list[len(list)-1]
				return fmt.Sprintf("#### Task %s, iteration %d\n%s\n", id, n.Iteration, n.Summary)
			})
		}
		return "Summaries of your recent attempts at this task", capText(strings.TrimSpace(sb.String()), maxChars)
	case allowed.Has(conditions.EvidenceOwnReports):
		var sb strings.Builder
		if r, ok := b.Reports[taskID]; ok {
			fmt.Fprintf(&sb, "Report on iteration %d:\n%s\n", r.Iteration, r.Content)
		}
		if allowed.Has(conditions.EvidenceOtherReports) {
			writeCross(&sb, sortedKeys(b.Reports), taskID, func(id string) string {
				r := b.Reports[id]
				return fmt.Sprintf("#### Task %s, iteration %d\n%s\n", id, r.Iteration, r.Content)
			})
		}
		return "The Mediator's report on your last attempt at this task", capText(strings.TrimSpace(sb.String()), maxChars)
	}
	return "", ""
}

func writeCross(sb *strings.Builder, ids []string, self string, render func(string) string) {
	var others []string
	for _, id := range ids {
		if id != self {
			others = append(others, render(id))
		}
	}
	if len(others) == 0 {
		return
	}
	fmt.Fprintf(sb, "\n### %s\n\n%s", crossTaskHeader, strings.Join(others, "\n"))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// capText cuts s to at most max bytes on a rune boundary and says so.
func capText(s string, max int) string {
	return prompt.CapBytes(s, max, "\n[... cut to fit the context budget]")
}
