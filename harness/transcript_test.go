package harness

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/lab"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/mediator"
)

// writeFakeTranscript writes the transcript of a code subagent that ran
// CMD-<task>-<iteration>, which failed with exit code 3 and printed
// OUT-<task>-<iteration>.
func writeFakeTranscript(spec executor.TrialSpec) error {
	mark := fmt.Sprintf("%s-%d", spec.Task.ID, spec.Iteration)
	l, err := durable.OpenLog(filepath.Join(spec.JobDir, lab.TranscriptFile))
	if err != nil {
		return err
	}
	out := lab.FormatExecResult(executor.ExecResult{ExitCode: 3, Stdout: "OUT-" + mark + "\n", Stderr: "boom"}, time.Minute, 4096)
	msgs := []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: lab.ToolRunCommand, Arguments: `{"command":"CMD-` + mark + `"}`}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Name: lab.ToolRunCommand, Content: out},
	}
	for _, m := range msgs {
		if err := l.Append(lab.TranscriptRecord{Agent: lab.SubagentCode, Dispatch: 1,
			TranscriptRecord: llm.TranscriptRecord{Event: llm.EventMessage, Message: &m}}); err != nil {
			l.Close()
			return err
		}
	}
	return l.Close()
}

func TestMediatorSeesTheTrialTranscript(t *testing.T) {
	tests := []struct {
		name   string
		cond   conditions.Condition
		budget int
		shown  bool
	}{
		{name: "static mediator", cond: conditions.StaticMediator, budget: 6000, shown: true},
		{name: "learned mediator", cond: conditions.LearnedMediator, budget: 6000, shown: true},
		{name: "budget 0 shows none", cond: conditions.StaticMediator, budget: 0},
		{name: "full traces never shows it", cond: conditions.FullTraces, budget: 6000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRun(t, tc.cond, conditions.PolicyNone, []string{"a"}, 2, func(c *config.Config) {
				c.Mediator.TranscriptChars = tc.budget
			})
			tr.trials.transcript = true
			tr.execute(t)
			reports := tr.rec.ByKind(mediator.KindReport)
			want := 2
			if tc.cond == conditions.FullTraces {
				want = 0
			}
			if len(reports) != want {
				t.Fatalf("%d report requests, want %d", len(reports), want)
			}
			for it, q := range reports {
				p := promptText(q)
				mark := fmt.Sprintf("a-%d", it+1)
				for _, want := range []string{"## Transcript (condensed)", "code#1 ran: CMD-" + mark, "exit code 3", "OUT-" + mark} {
					if strings.Contains(p, want) != tc.shown {
						t.Errorf("iteration %d: prompt holds %q = %v, want %v:\n%s", it+1, want, !tc.shown, tc.shown, p)
					}
				}
			}
			for it := 1; it <= 2; it++ {
				if p := tr.planPrompt(t, "a", it); strings.Contains(p, "CMD-a-") {
					t.Errorf("iteration %d: the Planner sees the transcript:\n%s", it, p)
				}
			}
		})
	}
}

// A transcript that cannot be read costs the Mediator its transcript, not
// the report.
func TestMediatorReportsWithoutAnUnreadableTranscript(t *testing.T) {
	tr := newTestRun(t, conditions.StaticMediator, conditions.PolicyNone, []string{"a"}, 1, nil)
	tr.trials.transcript = true
	tr.run.Trials = removeTranscript{tr.trials}
	tr.execute(t)
	if n := len(tr.rec.ByKind(mediator.KindReport)); n != 1 {
		t.Fatalf("%d report requests, want 1", n)
	}
	d, err := rundir.Open(tr.run.Dir.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a: the Mediator was not shown the transcript: it is missing": 1}
	if got := d.Manifest().TrialWarnings; !maps.Equal(got, want) {
		t.Errorf("run.json trial_warnings = %v, want %v", got, want)
	}
}

// removeTranscript deletes the transcript its trials wrote.
type removeTranscript struct{ *fakeTrials }

func (r removeTranscript) Run(ctx context.Context, spec executor.TrialSpec) *executor.Trace {
	tr := r.fakeTrials.Run(ctx, spec)
	if err := os.Remove(filepath.Join(spec.JobDir, lab.TranscriptFile)); err != nil {
		panic(err)
	}
	return tr
}
