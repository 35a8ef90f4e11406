package installed

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/atif"
	"github.com/mediated-coevo/harness/executor/lab"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/gateway"
)

// executorTranscript is the transcript written from the gateway's record,
// in the lab agent's format, so the Mediator's digest and the viewer read
// an installed agent's trial as they read the lab's.
const executorTranscript = lab.TranscriptFile

// Transcript rebuilds the conversation from the gateway's calls: an agent
// sends its whole history with every call, so each call adds the messages
// past the previous call's, then its usage and the model's answer. A
// request that does not extend the history (the agent compacted or
// restarted it) is recorded as a compaction followed by its messages.
func Transcript(t trial, calls []gateway.Call) []lab.TranscriptRecord {
	agent := lab.AgentSingle
	rec := func(r llm.TranscriptRecord) lab.TranscriptRecord {
		return lab.TranscriptRecord{Agent: agent, TranscriptRecord: r}
	}
	out := []lab.TranscriptRecord{{Agent: agent, TranscriptRecord: llm.TranscriptRecord{Event: lab.EventSetup},
		Setup: &lab.Setup{Mode: "installed", Workdir: t.workdir, Skills: t.skills, Warnings: t.warnings}}}
	var seen []llm.Message
	for i, c := range calls {
		msgs := c.Request.Messages
		from := len(seen)
		if !extends(msgs, seen) {
			out = append(out, rec(llm.TranscriptRecord{Event: llm.EventCompaction, Call: i, Dropped: len(seen)}))
			from = 0
		}
		for _, m := range msgs[from:] {
			out = append(out, rec(llm.TranscriptRecord{Event: llm.EventMessage, Call: i, Message: &m}))
		}
		seen = append([]llm.Message(nil), msgs...)
		if c.Response == nil {
			out = append(out, rec(llm.TranscriptRecord{Event: llm.EventStop, Call: i + 1, Detail: c.Err}))
			continue
		}
		u, m := c.Response.Usage, c.Response.Message
		out = append(out, rec(llm.TranscriptRecord{Event: llm.EventUsage, Call: i + 1, Usage: &u}),
			rec(llm.TranscriptRecord{Event: llm.EventMessage, Call: i + 1, Message: &m}))
		seen = append(seen, m)
	}
	return out
}

// writeTrajectory writes the transcript and its ATIF documents.
func (a *Agent) writeTrajectory(in executor.AgentInput, t trial, calls []gateway.Call) error {
	recs := Transcript(t, calls)
	f, err := os.Create(filepath.Join(in.JobDir, executorTranscript))
	if err != nil {
		return fmt.Errorf("installed agent %s: write its transcript: %w", a.AgentName, err)
	}
	enc := json.NewEncoder(f)
	for _, r := range recs {
		if err = enc.Encode(r); err != nil {
			break
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("installed agent %s: write its transcript: %w", a.AgentName, err)
	}
	docs, err := atif.Build(lab.TrajectoryRecords(recs), atif.Options{
		SessionID: in.Caller,
		Name:      a.AgentName,
		Version:   cmp.Or(a.Spec.Version, "unversioned"),
		Models:    map[string]string{lab.AgentSingle: a.Client.Model},
		Extra: map[string]any{"task_id": in.Task.ID, "iteration": in.Iteration, "agent_kind": "installed",
			"api": a.Spec.API, "transcript": filepath.Base(executorTranscript), "source": "model gateway"},
	})
	if err != nil {
		return fmt.Errorf("installed agent %s: write its trajectory: %w", a.AgentName, err)
	}
	return atif.Write(filepath.Join(in.JobDir, filepath.Dir(lab.TrajectoryFile)), docs)
}

// extends reports whether msgs starts with seen. Agents re-encode what the
// model answered (a tool's arguments as an object, re-marshalled), so
// arguments are compared as JSON values and text without surrounding space.
func extends(msgs, seen []llm.Message) bool {
	if len(msgs) < len(seen) {
		return false
	}
	for i, m := range seen {
		o := msgs[i]
		if o.Role != m.Role || strings.TrimSpace(o.Content) != strings.TrimSpace(m.Content) || o.ToolCallID != m.ToolCallID ||
			len(o.ToolCalls) != len(m.ToolCalls) {
			return false
		}
		for j, tc := range m.ToolCalls {
			if oc := o.ToolCalls[j]; oc.ID != tc.ID || oc.Name != tc.Name || !sameJSON(oc.Arguments, tc.Arguments) {
				return false
			}
		}
	}
	return true
}

func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
