package mediator

import (
	"context"
	"errors"
	"strings"

	"github.com/mediated-coevo/harness/llm"
)

// KindTraceSummary is the kind of the compactor's call: summarise a trace.
const KindTraceSummary llm.Kind = "trace_summary"

const schemaTraceSummary = "trace_summary"

// Compactor summarises long traces into the feedback a condition that
// shows whole traces gives the Planner.
type Compactor struct {
	Client *llm.Client
	// Caller is the ledger path calls are charged to.
	Caller string
}

const compactorSystem = "You compress execution traces of a coding agent into short, factual summaries for the agent's planner. Keep failures, their causes and what was tried; drop noise."

// SummariseTrace asks for a summary of a trace's text in a call seeded with
// seed. Unusable output twice gives fallback with fellBack set; model and
// budget errors are returned.
func (c *Compactor) SummariseTrace(ctx context.Context, seed int64, text, fallback string) (summary string, fellBack bool, err error) {
	ans, fellBack, err := ask(ctx, c.Client, call[SummaryAnswer]{
		What:       "summarise a trace",
		Kind:       KindTraceSummary,
		Caller:     c.Caller,
		Seed:       seed,
		System:     compactorSystem,
		User:       "Summarise this trace in at most 12 lines:\n\n" + text,
		Schema:     summarySchema(),
		SchemaName: schemaTraceSummary,
		Fallback:   SummaryAnswer{Summary: fallback},
		Offline:    func(int64) SummaryAnswer { return SummaryAnswer{Summary: digest(text)} },
	})
	if err != nil {
		return "", false, err
	}
	return ans.Summary, fellBack, nil
}

// SummaryAnswer is the compactor's summary of a trace.
type SummaryAnswer struct {
	Summary string `json:"summary"`
}

func summarySchema() map[string]any {
	return objectSchema(map[string]any{"summary": str("the summary")})
}

// Validate checks the summary is not empty.
func (a SummaryAnswer) Validate() error {
	if strings.TrimSpace(a.Summary) == "" {
		return errors.New("summary is empty")
	}
	return nil
}
