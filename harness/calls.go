package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
	"github.com/mediated-coevo/harness/llm"
)

// CallLog keeps every model call of one run in its rundir.CallsFile: the
// recorder handed to the run's model clients. Each record is written and
// synced as it comes, with every configured API key value redacted. A
// record that cannot be written is remembered; the run fails at its next
// checkpoint (see Err) rather than carry on with calls missing.
type CallLog struct {
	log     *durable.Log
	secrets []string
	redact  *config.Redactor

	mu  sync.Mutex
	err error
}

// OpenCallLog opens (or, on resume, reopens for appending) the call log of
// the run directory dir. The values of the variables cfg's models read their
// keys from are what it redacts.
func OpenCallLog(dir string, cfg *config.Config) (*CallLog, error) {
	log, err := durable.OpenLog(filepath.Join(dir, rundir.CallsFile))
	if err != nil {
		return nil, err
	}
	return &CallLog{log: log, secrets: cfg.Secrets(), redact: cfg.Redactor()}, nil
}

// Record writes one call.
func (l *CallLog) Record(rec llm.CallRecord) {
	out := toCallRecord(rec)
	config.Redact(&out, l.secrets)
	data, err := json.Marshal(out)
	if err == nil && l.redact.Leaks(data) {
		err = errors.New("a record would contain the value of an API key variable; not written")
	}
	if err == nil {
		err = l.log.Append(json.RawMessage(data))
	}
	if err != nil {
		l.mu.Lock()
		if l.err == nil {
			l.err = fmt.Errorf("call log: record of %s: %w", rec.Caller, err)
		}
		l.mu.Unlock()
	}
}

// Err is the first failure to write a record; nil for a nil log.
func (l *CallLog) Err() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Close closes the file; a nil log is a no-op.
func (l *CallLog) Close() error {
	if l == nil {
		return nil
	}
	return l.log.Close()
}

// toCallRecord converts a client's record to the on-disk shape. Task and
// iteration come from the caller path (see callScope).
func toCallRecord(rec llm.CallRecord) rundir.CallRecord {
	task, it := callScope(rec.Caller)
	req := rec.Request
	out := rundir.CallRecord{
		Time: rec.Start.UTC(), Caller: rec.Caller, Role: rec.Role, Kind: string(req.Kind), Task: task, Iteration: it,
		Model: rec.Model, Offline: rec.Offline, LatencyMS: rec.Latency.Milliseconds(), Attempts: rec.Attempts,
		Retries: rec.Retries, Unusable: rec.Unusable, Fallback: rec.Fallback,
		Request: rundir.CallRequest{Messages: make([]rundir.CallMessage, 0, len(req.Messages)), ToolChoice: req.ToolChoice,
			Schema: genericJSON(req.Schema), SchemaName: req.SchemaName, Seed: req.Seed},
	}
	for _, m := range req.Messages {
		out.Request.Messages = append(out.Request.Messages, callMessage(m))
	}
	for _, t := range req.Tools {
		out.Request.Tools = append(out.Request.Tools, rundir.CallTool{Name: t.Name, Description: t.Description, Parameters: genericJSON(t.Parameters)})
	}
	if r := rec.Response; r != nil {
		out.Response = &rundir.CallResponse{Message: callMessage(r.Message), FinishReason: r.FinishReason, Model: r.Model}
	}
	u := rec.Charged
	out.Usage = rundir.CallUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUSD: u.CostUSD,
		CostKnown: u.CostKnown, EstimatedTokens: u.EstimatedTokens}
	if rec.Err != nil {
		out.Error = rec.Err.Error()
	}
	return out
}

func callMessage(m llm.Message) rundir.CallMessage {
	out := rundir.CallMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, rundir.CallToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
	}
	return out
}

// genericJSON is a deep copy of m decoded back from its JSON form, so that
// redaction reaches every string in it without touching the request's own
// schema, which later calls may share.
func genericJSON(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return map[string]any{"unencodable": err.Error()}
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return map[string]any{"unencodable": err.Error()}
	}
	return out
}

// callScope reads the task and iteration a call belongs to from its caller
// path (see rundir.Caller.Scope); a path that does not parse has neither.
func callScope(caller string) (task string, iteration int) {
	c, err := rundir.ParseCaller(caller)
	if err != nil {
		return "", 0
	}
	return c.Scope()
}
