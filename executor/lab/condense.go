package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/prompt"
)

// Condensing a transcript: the tool calls of every loop in the order they
// were made, each with its result (exit code, heads and tails of output,
// errors), cut to a character budget. The first failed step and the last
// actions are kept whole; other steps shrink to one line and then go,
// farthest from those first, read-only agents before the ones that act.

// keepLastSteps is how many of the last actions a condensed transcript
// keeps whole.
const keepLastSteps = 3

// Excerpt sizes: each long text (a command, an output stream, a file
// written) keeps a tenth of the budget, within these bounds, halved until
// the steps kept whole fit.
const (
	minExcerpt = 60
	maxExcerpt = 2000
)

// lineChars caps a step shown on one line.
const lineChars = 160

// ReadTranscript reads agent/transcript.jsonl. A line that is not a record
// (the torn last line of a run that was killed) is skipped.
func ReadTranscript(path string) ([]TranscriptRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []TranscriptRecord
	for line := range bytes.Lines(data) {
		var rec TranscriptRecord
		if json.Unmarshal(line, &rec) == nil && rec.Event != "" {
			out = append(out, rec)
		}
	}
	return out, nil
}

// CondenseTranscript renders recs in at most budget characters (runes) for
// a reader of the whole trial. It is "" when budget <= 0 or nothing was
// recorded.
func CondenseTranscript(recs []TranscriptRecord, budget int) string {
	if budget <= 0 || len(recs) == 0 {
		return ""
	}
	c := parseTranscript(recs)
	excerpt := min(max(budget/10, minExcerpt), maxExcerpt)
	for {
		text, ok := c.fit(budget, excerpt)
		if ok {
			return text
		}
		if excerpt <= minExcerpt {
			return clipMiddle(text, budget)
		}
		excerpt = max(excerpt/2, minExcerpt)
	}
}

// tstep is one tool call with its result, or one event worth a line.
type tstep struct {
	who    string // executor, coordinator, or a subagent as kind#dispatch
	tool   string // "" for an event
	args   map[string]any
	raw    string // the arguments as written, when they are not an object
	said   string // the assistant's text beside the call
	result string
	done   bool   // result set
	target string // a dispatch's subagent, as kind#dispatch
	note   string // an event's text
	failed bool
}

type condensed struct {
	header   []string
	steps    []*tstep
	firstErr int // -1: none
	keep     []bool
	order    []int // unprotected steps, the first to shrink and go first
}

func agentLabel(r TranscriptRecord) string {
	if r.Dispatch > 0 {
		return r.Agent + "#" + strconv.Itoa(r.Dispatch)
	}
	return r.Agent
}

func parseTranscript(recs []TranscriptRecord) *condensed {
	c := &condensed{firstErr: -1}
	calls := map[string]*tstep{}
	var setup, stats string
	for _, r := range recs {
		who := agentLabel(r)
		switch r.Event {
		case EventSetup:
			if r.Setup != nil {
				setup = fmt.Sprintf("mode %s, working directory %s", r.Setup.Mode, r.Setup.Workdir)
			}
		case EventSummary:
			stats = statsLine(r.Stats)
		case EventDispatch:
			for _, s := range c.steps {
				if s.who == AgentCoordinator && s.tool == ToolDispatch && s.target == "" && !s.done {
					s.target = who
					break
				}
			}
		case EventDispatchResult:
			c.addNote(who, "reported: "+r.Detail)
		case llm.EventMessage:
			c.message(who, r.Message, calls)
		case llm.EventStop:
			if r.Detail != "submitted" {
				c.addNote(who, "stopped: "+r.Detail)
			}
		case llm.EventConclude:
			c.addNote(who, "was told to conclude ("+r.Detail+")")
		case llm.EventForced:
			c.addNote(who, "was forced to call "+r.Detail)
		case llm.EventNudge:
			c.addNote(who, "answered in plain text and was sent back to its tools")
		case llm.EventCompaction:
			c.addNote(who, fmt.Sprintf("dropped its %d oldest messages to fit its context window", r.Dropped))
		}
	}
	c.header = []string{"Condensed transcript of the Executor's tool calls, in order."}
	if setup != "" {
		c.header = append(c.header, setup)
	}
	if stats == "" {
		stats = "no summary record: the run was cut short"
	}
	c.header = append(c.header, stats)
	c.protect()
	return c
}

func (c *condensed) addNote(who, note string) {
	c.steps = append(c.steps, &tstep{who: who, note: note})
}

func (c *condensed) message(who string, m *llm.Message, calls map[string]*tstep) {
	if m == nil {
		return
	}
	switch m.Role {
	case llm.RoleAssistant:
		if len(m.ToolCalls) == 0 {
			if strings.TrimSpace(m.Content) != "" {
				c.addNote(who, "said: "+m.Content)
			}
			return
		}
		for i, tc := range m.ToolCalls {
			s := &tstep{who: who, tool: tc.Name}
			if json.Unmarshal([]byte(tc.Arguments), &s.args) != nil {
				s.raw = tc.Arguments
			}
			if i == 0 {
				s.said = strings.TrimSpace(m.Content)
			}
			calls[who+"\x00"+tc.ID] = s
			c.steps = append(c.steps, s)
		}
	case llm.RoleTool:
		s := calls[who+"\x00"+m.ToolCallID]
		if s == nil || s.done {
			return
		}
		s.result, s.done = m.Content, true
		s.failed = stepFailed(s)
		if s.failed && c.firstErr < 0 {
			c.firstErr = slices.Index(c.steps, s)
		}
	}
}

func stepFailed(s *tstep) bool {
	if strings.HasPrefix(s.result, "error:") {
		return true
	}
	if s.tool != ToolRunCommand {
		return false
	}
	e, ok := parseExecResult(s.result)
	return ok && (e.exit != 0 || e.timedOut)
}

func statsLine(st *Stats) string {
	if st == nil {
		return ""
	}
	sub := "did not submit"
	if st.Submitted {
		sub = "submitted"
	}
	line := fmt.Sprintf("%d model calls, %s", st.Calls, sub)
	if len(st.Dispatches) > 0 {
		var ds []string
		for _, k := range []string{SubagentExplore, SubagentPlan, SubagentCode} {
			if n := st.Dispatches[k]; n > 0 {
				ds = append(ds, fmt.Sprintf("%s %d", k, n))
			}
		}
		line += "; dispatches: " + strings.Join(ds, ", ")
	}
	if n := st.Refused + st.BadArgs + st.QuotaRefused; n > 0 {
		line += fmt.Sprintf("; %d refused or malformed calls", n)
	}
	if st.Error != "" {
		line += "; stopped by error: " + prompt.CapLine(st.Error, lineChars)
	}
	return line
}

// acts reports whether a step changed or examined the container, or
// directed a subagent: the steps "the last steps" count.
func (s *tstep) acts() bool { return s.tool != "" && s.tool != ToolSubmit }

// rank orders who may lose detail first: read-only subagents, then the
// coordinator, then the agents that run commands.
func (s *tstep) rank() int {
	who, _, _ := strings.Cut(s.who, "#")
	switch who {
	case SubagentExplore, SubagentPlan:
		return 0
	case AgentCoordinator:
		return 1
	}
	return 2
}

// protect marks the first error and the last actions to keep whole, and
// orders the other steps: lowest rank, then farthest from a kept step,
// then earliest, goes first.
func (c *condensed) protect() {
	c.keep = make([]bool, len(c.steps))
	if c.firstErr >= 0 {
		c.keep[c.firstErr] = true
	}
	for i, n := len(c.steps)-1, 0; i >= 0 && n < keepLastSteps; i-- {
		if c.steps[i].acts() {
			c.keep[i] = true
			n++
		}
	}
	dist := make([]int, len(c.steps))
	for i := range c.steps {
		dist[i] = len(c.steps)
		for j, k := range c.keep {
			if k {
				dist[i] = min(dist[i], abs(i-j))
			}
		}
		if !c.keep[i] {
			c.order = append(c.order, i)
		}
	}
	slices.SortStableFunc(c.order, func(a, b int) int {
		if ra, rb := c.steps[a].rank(), c.steps[b].rank(); ra != rb {
			return ra - rb
		}
		return dist[b] - dist[a]
	})
}

func abs(n int) int { return max(n, -n) }

// Step states while fitting.
const (
	whole = iota
	oneLine
	gone
)

// fit shrinks, then drops, unprotected steps in order until the text fits.
// ok is false when even the kept steps alone do not fit; text is then that.
func (c *condensed) fit(budget, excerpt int) (string, bool) {
	full := make([]string, len(c.steps))
	short := make([]string, len(c.steps))
	for i, s := range c.steps {
		full[i], short[i] = s.render(i+1, excerpt), s.line(i+1)
	}
	state := make([]int, len(c.steps))
	// Sizes are counted, not rendered, while steps shrink; the count runs
	// one over (the final newline is trimmed), so it never overshoots.
	fullN, shortN := make([]int, len(c.steps)), make([]int, len(c.steps))
	for i := range c.steps {
		fullN[i], shortN[i] = utf8.RuneCountInString(full[i]), utf8.RuneCountInString(short[i])
	}
	head := &runeCounter{}
	c.write(head, make([]int, 0), nil, nil)
	fits := func() bool {
		n := head.n
		for i := 0; i < len(state); i++ {
			switch state[i] {
			case whole:
				n += fullN[i]
			case oneLine:
				n += shortN[i]
			default:
				j := i
				for j+1 < len(state) && state[j+1] == gone {
					j++
				}
				n += utf8.RuneCountInString(omitted(i, j))
				i = j
			}
		}
		return n <= budget
	}
	for _, next := range []int{oneLine, gone} {
		for _, i := range c.order {
			if fits() {
				break
			}
			state[i] = next
		}
	}
	var b strings.Builder
	c.write(&b, state, full, short)
	text := strings.TrimRight(b.String(), "\n")
	return text, utf8.RuneCountInString(text) <= budget
}

// runeCounter counts the characters written to it.
type runeCounter struct{ n int }

func (w *runeCounter) WriteString(s string) (int, error) {
	w.n += utf8.RuneCountInString(s)
	return len(s), nil
}

// write writes the header and the steps in their states; with no states,
// the header alone.
func (c *condensed) write(w io.StringWriter, state []int, full, short []string) {
	for _, h := range c.header {
		w.WriteString(h + "\n")
	}
	if c.firstErr >= 0 {
		w.WriteString(fmt.Sprintf("The first error is at step %d.\n", c.firstErr+1))
	}
	w.WriteString("\n")
	for i := 0; i < len(state); i++ {
		switch state[i] {
		case whole:
			w.WriteString(full[i])
		case oneLine:
			w.WriteString(short[i])
		default:
			j := i
			for j+1 < len(state) && state[j+1] == gone {
				j++
			}
			w.WriteString(omitted(i, j))
			i = j
		}
	}
}

// omitted marks steps i to j (from 0) left out.
func omitted(i, j int) string {
	if i == j {
		return fmt.Sprintf("[step %d omitted]\n", i+1)
	}
	return fmt.Sprintf("[steps %d-%d omitted]\n", i+1, j+1)
}

// render is a step in full: its call, and its result with long text cut to
// head and tail.
func (s *tstep) render(n, excerpt int) string {
	var b strings.Builder
	if s.tool == "" {
		fmt.Fprintf(&b, "[%d] %s %s\n", n, s.who, block(s.note, excerpt))
		return strings.ReplaceAll(b.String(), " \n    ", "\n    ")
	}
	fmt.Fprintf(&b, "[%d] %s %s\n", n, s.who, s.call(excerpt))
	if s.said != "" {
		fmt.Fprintf(&b, "  said: %s\n", prompt.CapLine(s.said, excerpt/2))
	}
	switch {
	case !s.done:
		b.WriteString("  (no result: the run stopped first)\n")
	case s.tool == ToolRunCommand:
		b.WriteString(renderExec(s.result, excerpt))
	case strings.HasPrefix(s.result, "error:"):
		fmt.Fprintf(&b, "  %s\n", block(s.result, excerpt))
	case s.tool == ToolReadSkill:
		fmt.Fprintf(&b, "  (%d characters; skill bodies are not shown)\n", utf8.RuneCountInString(s.result))
	case s.tool == ToolSubmit, s.tool == ToolDispatch:
	default:
		fmt.Fprintf(&b, "  -> %s\n", block(s.result, excerpt))
	}
	// A label followed by an indented block leaves a space at a line's end.
	return strings.ReplaceAll(b.String(), " \n    ", "\n    ")
}

// line is a step on one line.
func (s *tstep) line(n int) string {
	if s.tool == "" {
		return fmt.Sprintf("[%d] %s %s\n", n, s.who, prompt.CapLine(s.note, lineChars))
	}
	out := "ok"
	switch {
	case !s.done:
		out = "no result"
	case s.tool == ToolRunCommand:
		if e, ok := parseExecResult(s.result); ok {
			out = "exit " + strconv.Itoa(e.exit)
			if e.timedOut {
				out += ", timed out"
			}
		}
	case strings.HasPrefix(s.result, "error:"):
		out = prompt.CapLine(s.result, lineChars/2)
	}
	return fmt.Sprintf("[%d] %s %s -> %s\n", n, s.who, prompt.CapLine(s.call(lineChars), lineChars), out)
}

// call names the tool and what it was asked.
func (s *tstep) call(excerpt int) string {
	arg := func(k string) string {
		v, _ := s.args[k].(string)
		return v
	}
	switch s.tool {
	case ToolRunCommand:
		return "ran: " + block(arg("command"), excerpt)
	case ToolReadFile, ToolListDir:
		return s.tool + " " + prompt.CapLine(arg("path"), lineChars)
	case ToolWriteFile:
		content := arg("content")
		return fmt.Sprintf("write_file %s (%d characters): %s", prompt.CapLine(arg("path"), lineChars),
			utf8.RuneCountInString(content), block(content, excerpt))
	case ToolReadSkill:
		return "read_skill " + prompt.CapLine(arg("name"), lineChars)
	case ToolSubmit:
		return "submitted: " + block(arg("summary"), excerpt)
	case ToolDispatch:
		to := s.target
		if to == "" {
			to = arg("agent")
		}
		return "dispatched " + to + ": " + block(arg("task"), excerpt)
	}
	raw := s.raw
	if raw == "" {
		b, _ := json.Marshal(s.args)
		raw = string(b)
	}
	return s.tool + " " + block(raw, excerpt)
}

// block is text cut to its head and tail, on its own indented lines when it
// has more than one.
func block(s string, n int) string {
	s = headTail(strings.TrimSpace(s), n)
	if !strings.Contains(s, "\n") {
		return s
	}
	return "\n    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// headTail keeps the first and last n/2 characters of a longer text.
func headTail(s string, n int) string {
	total := utf8.RuneCountInString(s)
	if total <= n {
		return s
	}
	half := n / 2
	r := []rune(s)
	return fmt.Sprintf("%s\n[... %d characters cut ...]\n%s", string(r[:half]), total-2*half, string(r[total-half:]))
}

// execResult is what FormatExecResult wrote.
type execResult struct {
	exit           int
	timedOut       bool
	markers        []string
	stdout, stderr string
}

// parseExecResult reads FormatExecResult's text back.
func parseExecResult(text string) (execResult, bool) {
	var e execResult
	i := strings.Index(text, "exit code: ")
	if i < 0 {
		return e, false
	}
	rest := text[i+len("exit code: "):]
	line, rest, _ := strings.Cut(rest, "\n")
	code, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return e, false
	}
	e.exit = code
	head, body, ok := strings.Cut(rest, "--- stdout ---\n")
	if !ok {
		return e, true
	}
	for m := range strings.Lines(head) {
		m = strings.TrimSpace(m)
		e.markers = append(e.markers, m)
		e.timedOut = e.timedOut || strings.HasPrefix(m, "[timed out")
	}
	out, errText, _ := strings.Cut(body, "--- stderr ---\n")
	clean := func(s string) string {
		s = strings.TrimSuffix(s, "\n")
		if s == "(empty)" {
			return ""
		}
		return s
	}
	e.stdout, e.stderr = clean(out), clean(errText)
	return e, true
}

func renderExec(text string, excerpt int) string {
	e, ok := parseExecResult(text)
	if !ok {
		return "  -> " + block(text, excerpt) + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  exit code %d\n", e.exit)
	for _, m := range e.markers {
		fmt.Fprintf(&b, "  %s\n", m)
	}
	if e.stdout != "" {
		fmt.Fprintf(&b, "  stdout: %s\n", block(e.stdout, excerpt))
	}
	if e.stderr != "" {
		fmt.Fprintf(&b, "  stderr: %s\n", block(e.stderr, excerpt))
	}
	return b.String()
}

// clipMiddle cuts the middle out of a text longer than n characters, so its
// start (the header, the first error) and end (the last steps) are left.
func clipMiddle(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	const note = "\n[... cut ...]\n"
	keep := n - utf8.RuneCountInString(note)
	r := []rune(s)
	if keep < 2 {
		return string(r[:n])
	}
	return string(r[:keep/2]) + note + string(r[len(r)-(keep-keep/2):])
}
