package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/llm"
)

// At 80 columns a busy matrix's status line is redrawn in place: every
// drawing fits in 79 columns and still shows the trials and the time left.
func TestStatusLineFitsEightyColumns(t *testing.T) {
	var buf bytes.Buffer
	plan := &harness.Plan{Trials: 360, EvaluationTrials: 24, ValidationTrials: 40, Rows: make([]harness.RowSpec, 6)}
	p := newProgress(&buf, plan, true, false, time.Now)
	p.width = 80
	r := 0.5
	spend := llm.Usage{InputTokens: 1_234_567, OutputTokens: 89_012, CostUSD: 12.3456, Retries: 17}
	events := []harness.Event{}
	for _, row := range []string{"no_feedback", "static_mediator", "learned_mediator", "full_coevolution"} {
		events = append(events, harness.Event{Row: row, Kind: "iteration_start", Iteration: 3})
	}
	for i := 0; i < 12; i++ {
		status := []string{"scored", "agent_error", "env_failure"}[i%3]
		events = append(events,
			harness.Event{Row: "no_feedback", Kind: "trial_start", Task: "t", Spend: spend},
			harness.Event{Row: "no_feedback", Kind: "trial_done", Task: "t", Status: status, Reward: &r, Spend: spend},
			harness.Event{Row: "no_feedback", Kind: "validation_trial_done", Task: "t", Status: "scored", Spend: spend})
	}
	for _, e := range events {
		p.event(e)
	}
	if full := p.status(); utf8.RuneCountInString(full) <= 80 {
		t.Fatalf("the test's status line already fits in 80 columns, so it proves nothing: %q", full)
	}
	draws := strings.Split(buf.String(), "\r")
	if len(draws) < len(events) {
		t.Fatalf("%d drawings for %d events", len(draws), len(events))
	}
	for _, d := range draws {
		if n := utf8.RuneCountInString(d); n >= 80 {
			t.Errorf("drawing of %d columns at width 80: %q", n, d)
		}
	}
	last := strings.TrimRight(draws[len(draws)-1], " ")
	for _, want := range []string{"trials 12/360", "eta "} {
		if !strings.Contains(last, want) {
			t.Errorf("fitted line %q lacks %q", last, want)
		}
	}
}

func TestFitStatus(t *testing.T) {
	line := "rows 1/6 | trials 3/360, 2 in flight, validation 4/~40, held-out evaluation 0/24 | scored 3 | a@1 b@1 | 99 tokens, 0 retries, $0.0100 | elapsed 5s, eta 10m0s"
	tests := []struct {
		name  string
		in    string
		width int
		want  string
	}{
		{"no width keeps the line", line, 0, line},
		{"wide enough keeps the line", line, 200, line},
		{"abbreviates first", line, 140, "rows 1/6 | trials 3/360, 2 in flight, valid 4/~40, eval 0/24 | scored 3 | a@1 b@1 | 99 tokens, 0 retries, $0.0100 | elapsed 5s, eta 10m0s"},
		{"then drops the active iterations and the statuses", line, 120, "rows 1/6 | trials 3/360, 2 in flight, valid 4/~40, eval 0/24 | 99 tokens, 0 retries, $0.0100 | elapsed 5s, eta 10m0s"},
		{"then the rows and the spend", line, 80, "trials 3/360, 2 in flight, valid 4/~40, eval 0/24 | elapsed 5s, eta 10m0s"},
		{"then cuts the trials, keeping the time", line, 60, "trials 3/360, 2 in flight, valid 4… | elapsed 5s, eta 10m0s"},
		{"cuts the whole when a part cannot give way", line, 20, "trials 3/360, 2 in…"},
		{"a line that is not a status line is cut", "rows 1/6 and more", 6, "rows…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fitStatus(tt.in, tt.width)
			if got != tt.want {
				t.Errorf("fitStatus(width %d) = %q, want %q", tt.width, got, tt.want)
			}
			if tt.width > 0 && columns(got) >= tt.width {
				t.Errorf("%q is %d columns, not under %d", got, columns(got), tt.width)
			}
		})
	}
}

func TestTerminalWidthFallsBackToColumns(t *testing.T) {
	var buf bytes.Buffer // not a terminal
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "COLUMNS" {
				return v
			}
			return ""
		}
	}
	for _, tt := range []struct {
		columns string
		want    int
	}{{"80", 80}, {"132", 132}, {"", 0}, {"wide", 0}, {"-3", 0}} {
		if got := terminalWidth(&buf, env(tt.columns)); got != tt.want {
			t.Errorf("COLUMNS=%q: width %d, want %d", tt.columns, got, tt.want)
		}
	}
}

// The last status line and the warning lines stay on screen: at 80
// columns neither is wider than 79, so the terminal never wraps them.
func TestFinalStatusAndWarningLinesFitEightyColumns(t *testing.T) {
	var buf bytes.Buffer
	plan := &harness.Plan{Trials: 360, EvaluationTrials: 24, ValidationTrials: 40, Rows: make([]harness.RowSpec, 6)}
	p := newProgress(&buf, plan, true, false, time.Now)
	p.width = 80
	spend := llm.Usage{InputTokens: 1_234_567, OutputTokens: 89_012, CostUSD: 12.3456, Retries: 17}
	r := 0.5
	p.event(harness.Event{Row: "full_coevolution", Kind: "iteration_start", Iteration: 3})
	p.event(harness.Event{Row: "full_coevolution", Kind: "trial_done", Task: "a-task-with-a-long-name", Status: "scored", Reward: &r, Spend: spend,
		Warnings: []string{"the task asks for a disk limit of 10G, which this engine's storage driver cannot enforce; the trial ran without one"}})
	stop := p.start(context.Background(), func(string) string { return "" })
	stop()
	lines := strings.FieldsFunc(buf.String(), func(r rune) bool { return r == '\n' || r == '\r' })
	var sawWarning bool
	for _, l := range lines {
		l = strings.TrimRight(l, " ")
		sawWarning = sawWarning || strings.HasPrefix(l, "warning: ")
		if n := utf8.RuneCountInString(l); n >= 80 {
			t.Errorf("line of %d columns at width 80: %q", n, l)
		}
	}
	if !sawWarning {
		t.Errorf("no warning line:\n%s", buf.String())
	}
}

// Log mode never prints an empty part ("|  |") before the first trial
// ends or the first iteration starts.
func TestStatusLineHasNoEmptyParts(t *testing.T) {
	p := newProgress(&bytes.Buffer{}, &harness.Plan{Trials: 4, Rows: make([]harness.RowSpec, 1)}, false, false, time.Now)
	p.event(harness.Event{Row: "r", Kind: "trial_start", Task: "a"})
	p.event(harness.Event{Row: "r", Kind: "trial_start", Task: "b"})
	got := p.statusText()
	if strings.Contains(got, "|  |") || strings.HasSuffix(got, "| ") || !strings.Contains(got, "2 in flight | ") {
		t.Errorf("status line %q has an empty part", got)
	}
}
