package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ToolSpec is a tool offered to an agent and the function that runs it.
// Run gets the call's arguments as a JSON object; its error is shown to the
// model as the tool's result. The terminal tool may leave Run nil.
type ToolSpec struct {
	Tool Tool
	Run  func(ctx context.Context, args json.RawMessage) (string, error)
}

// Loop is the tool-calling loop every agent runs: system prompt, task,
// then model turns and tool results until the terminal tool is called or
// the call cap is reached. Build one per agent run.
type Loop struct {
	Client *Client
	// Caller is the ledger path of every call, e.g. "executor/student-1/code".
	Caller string
	// Kind of every call; zero means KindAgentStep.
	Kind  Kind
	Tools []ToolSpec
	// Allowed is the allowlist of tool names offered to the model; empty
	// means every tool in Tools. Calls to any other tool are refused.
	Allowed []string
	// Terminal is the tool that ends the run (e.g. "submit"); forced on the
	// last call. Empty: the run ends on a plain answer.
	Terminal string
	// MaxCalls caps the model calls (K).
	MaxCalls int
	// ConcludeMargin: with this many calls left, the agent is told to conclude.
	ConcludeMargin int
	// ContextTokens is the model's context window; the transcript is
	// compacted before it, the tool schemas and an answer of
	// MaxOutputTokens would overflow it. Zero disables compaction.
	ContextTokens int
	// MaxOutputTokens is the longest answer the model may give (its
	// max_tokens), kept free in the window; zero keeps a fifth of it.
	MaxOutputTokens int
	// Seed is passed on every request (see Request).
	Seed int64
	// Transcript, when set, receives one TranscriptRecord per JSON line.
	Transcript io.Writer
	// Backup, when set, receives every message compaction drops, one per JSON line.
	Backup io.Writer
}

// LoopResult is how an agent run ended.
type LoopResult struct {
	// Final is the terminal tool's arguments (JSON) when Submitted, else
	// the last text the model wrote.
	Final     string
	Submitted bool
	// Calls is the number of model calls made.
	Calls int
	// Refused counts calls to tools outside the allowlist.
	Refused int
	// BadArgs counts calls whose arguments were not valid JSON objects or
	// lacked required properties.
	BadArgs     int
	Compactions int
	// Messages is the transcript as last sent (after any compaction), with
	// the final turn.
	Messages []Message
	Usage    Usage
}

// Transcript events.
const (
	EventMessage    = "message"    // a message joined the transcript
	EventUsage      = "usage"      // a model call's usage
	EventRefused    = "refused"    // a call to a tool outside the allowlist
	EventBadArgs    = "bad_args"   // a call with malformed arguments
	EventToolError  = "tool_error" // a tool returned an error
	EventConclude   = "conclude"   // the agent was told to conclude
	EventForced     = "forced"     // the terminal tool was forced
	EventNudge      = "nudge"      // a plain answer was sent back once
	EventCompaction = "compaction" // old turns were dropped
	EventStop       = "stop"       // the run ended
)

// TranscriptRecord is one line of a loop transcript.
type TranscriptRecord struct {
	Event   string   `json:"event"`
	Call    int      `json:"call"` // model calls made so far
	Message *Message `json:"message,omitempty"`
	Usage   *Usage   `json:"usage,omitempty"`
	Detail  string   `json:"detail,omitempty"`
	Dropped int      `json:"dropped,omitempty"`
}

// estimateShare is the share of the room left in the window that the
// estimates of the transcript and tool schemas may fill: they count four
// characters a token, and code, JSON and wire overhead run nearer three.
const estimateShare = 0.75

// Run runs the agent on one task. An error wrapping ErrBudgetExhausted means
// the budget stopped it; the result then holds what happened until then.
func (l *Loop) Run(ctx context.Context, system, user string) (LoopResult, error) {
	r, err := l.newRun()
	if err != nil {
		return LoopResult{}, err
	}
	return r.run(ctx, system, user)
}

type loopRun struct {
	*Loop
	specs   map[string]ToolSpec
	allowed map[string]bool
	offered []Tool
	kind    Kind
	// toolTokens estimates the offered tools' schemas, sent with every request.
	toolTokens int

	msgs     []Message
	res      LoopResult
	keepHead int
	hasNote  bool
	dropped  int
	answered bool // ended on a plain answer
	tEnc     *json.Encoder
	bEnc     *json.Encoder
	werr     error
}

func (l *Loop) newRun() (*loopRun, error) {
	if l.Client == nil {
		return nil, errors.New("agent loop has no model client")
	}
	if l.MaxCalls <= 0 {
		return nil, fmt.Errorf("agent loop for %s: MaxCalls is %d; it must be at least 1", l.Caller, l.MaxCalls)
	}
	r := &loopRun{Loop: l, specs: map[string]ToolSpec{}, allowed: map[string]bool{}, kind: l.Kind}
	if r.kind == "" {
		r.kind = KindAgentStep
	}
	for _, s := range l.Tools {
		if s.Tool.Name == "" {
			return nil, fmt.Errorf("agent loop for %s: a tool has no name", l.Caller)
		}
		if _, dup := r.specs[s.Tool.Name]; dup {
			return nil, fmt.Errorf("agent loop for %s: tool %q is listed twice", l.Caller, s.Tool.Name)
		}
		r.specs[s.Tool.Name] = s
	}
	for _, name := range l.Allowed {
		if _, ok := r.specs[name]; !ok {
			return nil, fmt.Errorf("agent loop for %s: allowlist names %q, which is not among its tools", l.Caller, name)
		}
		r.allowed[name] = true
	}
	for _, s := range l.Tools {
		if len(l.Allowed) == 0 {
			r.allowed[s.Tool.Name] = true
		}
		if r.allowed[s.Tool.Name] {
			r.offered = append(r.offered, s.Tool)
			schema, err := json.Marshal(s.Tool)
			if err != nil {
				return nil, fmt.Errorf("agent loop for %s: encode tool %q: %w", l.Caller, s.Tool.Name, err)
			}
			r.toolTokens += len(schema)/4 + 1
		}
	}
	if l.Terminal != "" && !r.allowed[l.Terminal] {
		return nil, fmt.Errorf("agent loop for %s: terminal tool %q is not among its allowed tools", l.Caller, l.Terminal)
	}
	if l.Transcript != nil {
		r.tEnc = json.NewEncoder(l.Transcript)
	}
	if l.Backup != nil {
		r.bEnc = json.NewEncoder(l.Backup)
	}
	return r, nil
}

func (r *loopRun) emit(rec TranscriptRecord) {
	if r.tEnc == nil || r.werr != nil {
		return
	}
	rec.Call = r.res.Calls
	if err := r.tEnc.Encode(rec); err != nil {
		r.werr = fmt.Errorf("write transcript of %s: %w", r.Caller, err)
	}
}

func (r *loopRun) add(m Message) {
	r.msgs = append(r.msgs, m)
	r.emit(TranscriptRecord{Event: EventMessage, Message: &m})
}

func (r *loopRun) finish(err error) (LoopResult, error) {
	if !r.res.Submitted && r.res.Final == "" {
		for i := len(r.msgs) - 1; i >= 0; i-- {
			if r.msgs[i].Role == RoleAssistant && strings.TrimSpace(r.msgs[i].Content) != "" {
				r.res.Final = r.msgs[i].Content
				break
			}
		}
	}
	detail := "call cap reached"
	switch {
	case err != nil:
		detail = err.Error()
	case r.res.Submitted:
		detail = "submitted"
	case r.answered:
		detail = "final answer"
	}
	r.emit(TranscriptRecord{Event: EventStop, Detail: detail})
	r.res.Messages = r.msgs
	if err == nil {
		err = r.werr
	}
	return r.res, err
}

func (r *loopRun) run(ctx context.Context, system, user string) (LoopResult, error) {
	if system != "" {
		r.add(Message{Role: RoleSystem, Content: system})
	}
	r.add(Message{Role: RoleUser, Content: user})
	r.keepHead = len(r.msgs)

	concluded, nudged := false, false
	for r.res.Calls < r.MaxCalls {
		if err := ctx.Err(); err != nil {
			return r.finish(fmt.Errorf("agent %s: %w", r.Caller, err))
		}
		if r.werr != nil {
			return r.finish(nil)
		}
		left := r.MaxCalls - r.res.Calls
		if r.ConcludeMargin > 0 && !concluded && r.res.Calls > 0 && left <= r.ConcludeMargin {
			concluded = true
			r.emit(TranscriptRecord{Event: EventConclude, Detail: fmt.Sprintf("%d calls left", left)})
			r.add(Message{Role: RoleUser, Content: r.concludeText(left)})
		}
		forced := r.Terminal != "" && left == 1
		r.compact()

		req := Request{
			Caller:   r.Caller,
			Kind:     r.kind,
			Messages: slices.Clone(r.msgs),
			Tools:    r.offered,
			Seed:     r.Seed,
		}
		if forced {
			req.ToolChoice = r.Terminal
			r.emit(TranscriptRecord{Event: EventForced, Detail: r.Terminal})
		}
		resp, err := r.Client.Complete(ctx, req)
		if err != nil {
			return r.finish(fmt.Errorf("agent %s, model call %d: %w", r.Caller, r.res.Calls+1, err))
		}
		r.res.Calls++
		r.res.Usage = r.res.Usage.Add(resp.Usage)
		u := resp.Usage
		r.emit(TranscriptRecord{Event: EventUsage, Usage: &u})
		am := resp.Message
		am.Role = RoleAssistant
		r.add(am)

		if len(am.ToolCalls) == 0 {
			if r.Terminal == "" || nudged || forced {
				r.res.Final = am.Content
				r.answered = true
				break
			}
			nudged = true
			r.emit(TranscriptRecord{Event: EventNudge})
			r.add(Message{Role: RoleUser, Content: fmt.Sprintf(
				"You answered without calling a tool. Keep working with your tools, or call %s to finish.", r.Terminal)})
			continue
		}
		done, err := r.runCalls(ctx, am.ToolCalls)
		if err != nil {
			return r.finish(err)
		}
		if done {
			break
		}
	}
	return r.finish(nil)
}

func (r *loopRun) concludeText(left int) string {
	if r.Terminal == "" {
		return fmt.Sprintf("You have %d model calls left. Conclude now and give your final answer.", left)
	}
	return fmt.Sprintf("You have %d model calls left. Conclude now: finish only what is essential, then call %s.", left, r.Terminal)
}

// runCalls runs one turn's tool calls in order and adds their results. It
// reports whether the terminal tool ended the run.
func (r *loopRun) runCalls(ctx context.Context, calls []ToolCall) (bool, error) {
	submitted := false
	for _, tc := range calls {
		result := "not run: the agent already submitted"
		if !submitted {
			var err error
			result, submitted, err = r.runTool(ctx, tc)
			if err != nil {
				return false, err
			}
			if submitted {
				r.res.Submitted = true
				r.res.Final = tc.Arguments
			}
		}
		r.add(Message{Role: RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: result})
	}
	return submitted, nil
}

// runTool runs one call and returns the result shown to the model. err is
// set only when the run must stop (cancelled, budget exhausted).
func (r *loopRun) runTool(ctx context.Context, tc ToolCall) (result string, submitted bool, err error) {
	if !r.allowed[tc.Name] {
		r.res.Refused++
		r.emit(TranscriptRecord{Event: EventRefused, Detail: tc.Name})
		return fmt.Sprintf("error: tool %q is not available to this agent; available tools: %s",
			tc.Name, strings.Join(toolNames(r.offered), ", ")), false, nil
	}
	args, problem := checkArgs(tc.Arguments, r.specs[tc.Name].Tool.Parameters)
	if problem != "" {
		r.res.BadArgs++
		r.emit(TranscriptRecord{Event: EventBadArgs, Detail: tc.Name + ": " + problem})
		return fmt.Sprintf("error: bad arguments for %s: %s. Call it again with a JSON object matching its parameters.", tc.Name, problem), false, nil
	}
	spec := r.specs[tc.Name]
	if spec.Run == nil {
		if tc.Name == r.Terminal {
			return "submitted", true, nil
		}
		return fmt.Sprintf("error: tool %s cannot be run here", tc.Name), false, nil
	}
	out, runErr := spec.Run(ctx, args)
	if runErr != nil {
		if ctx.Err() != nil {
			return "", false, fmt.Errorf("agent %s: tool %s: %w", r.Caller, tc.Name, ctx.Err())
		}
		if errors.Is(runErr, ErrBudgetExhausted) {
			return "", false, fmt.Errorf("agent %s: tool %s: %w", r.Caller, tc.Name, runErr)
		}
		r.emit(TranscriptRecord{Event: EventToolError, Detail: tc.Name + ": " + runErr.Error()})
		return "error: " + runErr.Error(), false, nil
	}
	if tc.Name == r.Terminal {
		if out == "" {
			out = "submitted"
		}
		return out, true, nil
	}
	return out, false, nil
}

// checkArgs parses tool arguments: a JSON object (empty text means {})
// holding every required property. problem is empty when they are fine.
func checkArgs(text string, schema map[string]any) (json.RawMessage, string) {
	t := strings.TrimSpace(text)
	if t == "" {
		t = "{}"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(t), &obj); err != nil {
		return nil, "arguments are not a JSON object (" + err.Error() + ")"
	}
	if obj == nil {
		return nil, "arguments are null, not a JSON object"
	}
	var missing []string
	for _, name := range requiredProps(schema) {
		if _, ok := obj[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, "missing required " + strings.Join(missing, ", ")
	}
	return json.RawMessage(t), ""
}

func requiredProps(schema map[string]any) []string {
	switch req := schema["required"].(type) {
	case []string:
		return req
	case []any:
		var out []string
		for _, v := range req {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func toolNames(tools []Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// compact drops old turns when the transcript would pass its budget (see
// transcriptBudget), leaving a note of how much is gone.
func (r *loopRun) compact() {
	if r.ContextTokens <= 0 {
		return
	}
	limit := r.transcriptBudget()
	if EstimateTokens(r.msgs) <= limit {
		return
	}
	msgs := r.msgs
	if r.hasNote {
		msgs = slices.Delete(slices.Clone(msgs), r.keepHead, r.keepHead+1)
	}
	note := Message{Role: RoleUser, Content: r.noteText(r.dropped + len(msgs))}
	kept, dropped := Compact(msgs, limit-estimateTokens(note), r.keepHead)
	if len(dropped) == 0 {
		return // nothing droppable; keep the old note in place
	}
	r.dropped += len(dropped)
	note.Content = r.noteText(r.dropped)
	kept = slices.Insert(kept, r.keepHead, note)
	r.msgs = kept
	r.hasNote = true
	r.res.Compactions++
	for _, m := range dropped {
		if r.bEnc != nil && r.werr == nil {
			if err := r.bEnc.Encode(m); err != nil {
				r.werr = fmt.Errorf("write dropped messages of %s: %w", r.Caller, err)
			}
		}
	}
	r.emit(TranscriptRecord{Event: EventCompaction, Dropped: len(dropped),
		Detail: fmt.Sprintf("%d messages dropped in all", r.dropped)})
}

// transcriptBudget is the estimated size the transcript may reach: the
// window less the room for an answer, scaled by estimateShare, less the tool
// schemas. It can be negative; compaction then keeps only what it must.
func (r *loopRun) transcriptBudget() int {
	answer := r.MaxOutputTokens
	if answer <= 0 {
		answer = r.ContextTokens / 5
	}
	return int(float64(r.ContextTokens-answer)*estimateShare) - r.toolTokens
}

func (r *loopRun) noteText(n int) string {
	return fmt.Sprintf("[%d earlier messages were dropped to fit the context window; the newest turns follow.]", n)
}
