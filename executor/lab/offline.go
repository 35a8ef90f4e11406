package lab

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
)

// OfflineTrial is what the offline player knows of the agent it stands in
// for: the texts the lab renders that agent's prompts from.
type OfflineTrial struct {
	TaskID string
	// Instruction is the task's instruction, or a subagent's dispatched task;
	// empty: the first user message of the call.
	Instruction string
	// Workdir is the sandbox's working directory; empty: /app.
	Workdir string
	// Seed is the trial's seed: the offline agent's draws depend on it and
	// not on the iteration, so trials with one seed and one skill behave
	// alike (common random numbers across checkpoints) and trials with
	// different seeds draw independently.
	Seed int64
	// Skill is the executor skill, and Plan the Planner's plan (empty for
	// subagents, which are not shown it).
	Skill, Plan string
	// Diligence is the share of trials the agent writes the outputs
	// without advice: its model's offline profile; nil means
	// diligenceRate.
	Diligence *float64
}

// diligenceRate is how often the offline agent writes outputs without the
// advice in its skill.
const diligenceRate = 0.35

// OfflinePlayer returns the llm.Player that plays the lab agent of trial
// without a model: it lists the working directory, reads the inputs the
// instruction names and, when diligent, writes the outputs it names before
// submitting; a coordinator dispatches explore, then code. It is diligent
// always when its skill carries executor.DiligenceAdvice or its plan
// executor.OutputsFirstStep, else for about a third of the trials. The same
// seed, trial and transcript always give the same turn.
func OfflinePlayer(trial OfflineTrial) llm.Player {
	return func(seed int64, req llm.Request) (llm.Message, error) {
		return agentStep(seed, trial, req), nil
	}
}

// agentState is what the offline agent reads back from its transcript.
type agentState struct {
	calls   []llm.ToolCall
	results map[string]string // tool call id -> result
	turns   int               // assistant messages so far
}

func readState(msgs []llm.Message) agentState {
	st := agentState{results: map[string]string{}}
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			st.turns++
			st.calls = append(st.calls, m.ToolCalls...)
		case llm.RoleTool:
			st.results[m.ToolCallID] = m.Content
		}
	}
	return st
}

// called reports whether a call to name with the given "path" (or "agent")
// argument, "" for any, was made.
func (s agentState) called(name, key string) bool {
	for _, c := range s.calls {
		if c.Name != name {
			continue
		}
		if key == "" || argKey(c) == key {
			return true
		}
	}
	return false
}

func argKey(c llm.ToolCall) string {
	var a struct {
		Path  string `json:"path"`
		Agent string `json:"agent"`
	}
	_ = json.Unmarshal([]byte(c.Arguments), &a)
	if a.Path != "" {
		return a.Path
	}
	return a.Agent
}

// resultOf is the result of the first call to name, if any.
func (s agentState) resultOf(name, key string) (string, bool) {
	for _, c := range s.calls {
		if c.Name == name && (key == "" || argKey(c) == key) {
			r, ok := s.results[c.ID]
			return r, ok
		}
	}
	return "", false
}

// maxOfflineTurns stops an offline agent whose transcript lost track of
// what it did (e.g. after compaction).
const maxOfflineTurns = 12

type step struct {
	name string
	args map[string]any
}

func agentStep(seed int64, trial OfflineTrial, req llm.Request) llm.Message {
	st := readState(req.Messages)
	tools := map[string]llm.Tool{}
	for _, t := range req.Tools {
		tools[t.Name] = t
	}
	workdir := trial.Workdir
	if workdir == "" {
		workdir = "/app"
	}
	workdir = path.Clean(workdir)
	instruction := trial.Instruction
	if instruction == "" {
		for _, m := range req.Messages {
			if m.Role == llm.RoleUser {
				instruction = m.Content
				break
			}
		}
	}
	a := offlineAgent{seed: seed, trial: trial, req: req, st: st, tools: tools, workdir: workdir, instruction: instruction}

	var steps []step
	switch tc := req.ToolChoice; {
	case tc == "none" || len(tools) == 0:
		return llm.Message{Role: llm.RoleAssistant, Content: a.summary()}
	case tc != "" && tc != "auto" && tc != "required":
		steps = []step{{tc, a.argsFor(tc)}}
	default:
		steps = a.next()
	}
	if len(steps) == 0 {
		return llm.Message{Role: llm.RoleAssistant, Content: a.summary()}
	}
	msg := llm.Message{Role: llm.RoleAssistant}
	for i, s := range steps {
		b, _ := json.Marshal(s.args)
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{
			ID:        fmt.Sprintf("call_%d_%d", st.turns+1, i+1),
			Name:      s.name,
			Arguments: string(b),
		})
	}
	return msg
}

type offlineAgent struct {
	seed        int64
	trial       OfflineTrial
	req         llm.Request
	st          agentState
	tools       map[string]llm.Tool
	workdir     string
	instruction string
}

func (a offlineAgent) has(name string) bool { _, ok := a.tools[name]; return ok }

// next is the state machine: what to call on this turn. Told to conclude,
// the agent skips what is left to explore but a diligent one still writes
// its outputs before submitting.
func (a offlineAgent) next() []step {
	if a.st.turns >= maxOfflineTurns {
		return a.finish()
	}
	concluding := a.concludeAsked()
	switch {
	case a.has("dispatch"):
		return a.coordinate(concluding)
	case a.has("write_file") || a.has("run_command"):
		return a.work(concluding)
	case concluding:
		return a.finish()
	default:
		return a.explore()
	}
}

func (a offlineAgent) finish() []step {
	if a.has("submit") {
		return []step{{"submit", a.argsFor("submit")}}
	}
	return nil
}

// concludeAsked reports whether the loop told the agent to wrap up.
func (a offlineAgent) concludeAsked() bool {
	msgs := a.req.Messages
	firstUser := true
	for _, m := range msgs {
		if m.Role != llm.RoleUser {
			continue
		}
		if firstUser {
			firstUser = false
			continue
		}
		if strings.Contains(strings.ToLower(m.Content), "conclude") {
			return true
		}
	}
	return false
}

// coordinate: explore once (not when concluding), then code with the
// task, then submit.
func (a offlineAgent) coordinate(concluding bool) []step {
	if !concluding && !a.st.called("dispatch", "explore") {
		return []step{{"dispatch", map[string]any{
			"agent": "explore",
			"task":  fmt.Sprintf("List %s and report which files the following task reads or writes.\n\nTask:\n%s", a.workdir, a.instruction),
		}}}
	}
	if !a.st.called("dispatch", "code") {
		task := a.instruction
		if r, ok := a.st.resultOf("dispatch", "explore"); ok && strings.TrimSpace(r) != "" {
			task += "\n\nWhat exploring found:\n" + llm.Truncate(r, 1500)
		}
		return []step{{"dispatch", map[string]any{"agent": "code", "task": task}}}
	}
	return a.finish()
}

// explore (read-only agents): list the working directory, then submit.
func (a offlineAgent) explore() []step {
	if a.has("list_dir") && !a.st.called("list_dir", "") {
		return []step{{"list_dir", map[string]any{"path": a.workdir}}}
	}
	return a.finish()
}

// work (single agent, code subagent): list, read inputs, maybe write the
// outputs, submit.
func (a offlineAgent) work(concluding bool) []step {
	// The listing is needed even when concluding: without it the agent
	// cannot tell outputs from inputs.
	if a.has("list_dir") && !a.st.called("list_dir", "") && (!concluding || a.diligent()) {
		return []step{{"list_dir", map[string]any{"path": a.workdir}}}
	}
	inputs, outputs := a.files()
	if a.has("read_file") && !concluding {
		var reads []step
		for _, p := range inputs {
			if !a.st.called("read_file", p) {
				reads = append(reads, step{"read_file", map[string]any{"path": p}})
			}
		}
		if len(reads) > 0 {
			return reads
		}
	}
	if a.diligent() {
		var writes []step
		for _, p := range outputs {
			if a.st.called("write_file", p) || a.st.called("run_command", p) {
				continue
			}
			writes = append(writes, a.writeStep(p))
		}
		if len(writes) > 0 {
			return writes
		}
	}
	return a.finish()
}

func (a offlineAgent) writeStep(p string) step {
	if a.has("write_file") {
		return step{"write_file", map[string]any{"path": p, "content": a.placeholder()}}
	}
	// argKey matches the write by its "path" argument, so record it there too.
	cmd := fmt.Sprintf("mkdir -p '%s' && printf '%%s\\n' '%s' > '%s'", path.Dir(p), "offline placeholder", p)
	return step{"run_command", map[string]any{"command": cmd, "timeout_sec": 30, "path": p}}
}

func (a offlineAgent) placeholder() string {
	task := a.trial.TaskID
	if task == "" {
		task = "the task"
	}
	return "placeholder output for " + task + " (offline agent)\n"
}

// diligent reports whether this agent creates the outputs: always when its
// skill carries DiligenceAdvice or its plan OutputsFirstStep, else for the
// share of trials its model's profile gives (about a third by default).
func (a offlineAgent) diligent() bool {
	skill := a.trial.Skill
	if strings.Contains(skill, executor.DiligenceAdvice) || strings.Contains(a.trial.Plan, executor.OutputsFirstStep) {
		return true
	}
	sum := sha256.Sum256([]byte(skill))
	h := llm.OfflineHash(a.seed, "diligence", a.trial.TaskID, strconv.FormatInt(a.trial.Seed, 10), hex.EncodeToString(sum[:]))
	rate := diligenceRate
	if a.trial.Diligence != nil {
		rate = *a.trial.Diligence
	}
	return unit(h) < rate
}

var pathPattern = regexp.MustCompile(`/[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*/?`)

// files splits the absolute paths under the working directory that the
// instruction names into inputs (the listing shows them; at most 2) and
// outputs (it does not). Without a listing nothing counts as an output, so
// the agent never overwrites an input it could not see.
func (a offlineAgent) files() (inputs, outputs []string) {
	listing, listed := a.st.resultOf("list_dir", "")
	existing := map[string]bool{}
	for _, f := range strings.Fields(listing) {
		f = strings.Trim(f, "\"'`,;*@")
		f = strings.TrimSuffix(f, "/")
		if f == "" {
			continue
		}
		existing[f] = true
		existing[path.Base(f)] = true
	}
	seen := map[string]bool{}
	for _, m := range pathPattern.FindAllStringIndex(a.instruction, -1) {
		if m[0] > 0 && !strings.ContainsRune(" \t\n\"'`([<*:=", rune(a.instruction[m[0]-1])) {
			continue // part of a URL or a relative path
		}
		p := strings.TrimRight(a.instruction[m[0]:m[1]], ".")
		if strings.HasSuffix(p, "/") {
			continue // a directory
		}
		p = path.Clean(p)
		if p == a.workdir || !strings.HasPrefix(p, a.workdir+"/") || seen[p] {
			continue
		}
		seen[p] = true
		rel := strings.TrimPrefix(p, a.workdir+"/")
		switch {
		case existing[rel] || existing[p] || existing[path.Base(p)]:
			if len(inputs) < 2 {
				inputs = append(inputs, p)
			}
		case listed:
			outputs = append(outputs, p)
		}
	}
	return inputs, outputs
}

// argsFor builds arguments for a forced call of a tool.
func (a offlineAgent) argsFor(name string) map[string]any {
	switch name {
	case "submit":
		return map[string]any{"summary": a.summary()}
	case "list_dir":
		return map[string]any{"path": a.workdir}
	case "read_file":
		inputs, _ := a.files()
		if len(inputs) > 0 {
			return map[string]any{"path": inputs[0]}
		}
		return map[string]any{"path": a.workdir}
	case "write_file":
		_, outputs := a.files()
		p := a.workdir + "/offline-notes.txt"
		if len(outputs) > 0 {
			p = outputs[0]
		}
		return map[string]any{"path": p, "content": a.placeholder()}
	case "run_command":
		return map[string]any{"command": "ls -la " + a.workdir, "timeout_sec": 30}
	case "dispatch":
		return map[string]any{"agent": "code", "task": a.instruction}
	}
	return argsFromSchema(a.tools[name].Parameters)
}

// argsFromSchema fills every property of a JSON Schema with a placeholder
// of its type.
func argsFromSchema(schema map[string]any) map[string]any {
	out := map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	for k, v := range props {
		p, _ := v.(map[string]any)
		switch p["type"] {
		case "integer", "number":
			out[k] = 1
		case "boolean":
			out[k] = false
		case "array":
			out[k] = []any{}
		case "object":
			out[k] = map[string]any{}
		default:
			if enum, ok := p["enum"].([]any); ok && len(enum) > 0 {
				out[k] = enum[0]
			} else if enum, ok := p["enum"].([]string); ok && len(enum) > 0 {
				out[k] = enum[0]
			} else {
				out[k] = "offline"
			}
		}
	}
	return out
}

// summary says what the agent did, from its transcript.
func (a offlineAgent) summary() string {
	var did []string
	for _, c := range a.st.calls {
		switch c.Name {
		case "submit":
			continue
		case "dispatch":
			did = append(did, "dispatched "+argKey(c))
		default:
			if k := argKey(c); k != "" {
				did = append(did, c.Name+" "+k)
			} else {
				did = append(did, c.Name)
			}
		}
	}
	if len(did) == 0 {
		return "Nothing was done."
	}
	s := "Done: " + strings.Join(did, "; ") + "."
	if r, ok := a.st.resultOf("list_dir", ""); ok && !a.has("write_file") && !a.has("run_command") && !a.has("dispatch") {
		s += " Listing: " + llm.Truncate(oneLineText(r), 500)
	}
	return llm.Truncate(s, 2000)
}

// unit maps a hash onto [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / float64(uint64(1)<<53) }
