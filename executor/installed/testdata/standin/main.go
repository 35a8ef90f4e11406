// Command standin behaves like an installed agent CLI, for the Docker tests
// of installed agents: it reads its instruction from a file, calls the
// model endpoint in its environment in one API shape with two tools
// (run_command, write_file), runs what the model asks in the container,
// and stops when the model answers without a tool call. It also records
// its environment and echoes the marker line of the executor skill it
// finds in its skills folder, so a test can check both.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

type call struct{ id, name, args string }

func main() {
	api := flag.String("api", "openai", "openai, openai-responses, anthropic or gemini")
	file := flag.String("instruction-file", "", "the instruction")
	skills := flag.String("skills", "", "the skills folder")
	logs := flag.String("logs", "/tmp/standin", "where to write the environment")
	model := flag.String("model", "", "the model")
	flag.Parse()
	if err := run(*api, *file, *skills, *logs, *model); err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
}

func run(api, file, skills, logs, model string) error {
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	env := os.Environ()
	sort.Strings(env)
	if err := os.WriteFile(filepath.Join(logs, "env.txt"), []byte(strings.Join(env, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if skill, err := os.ReadFile(filepath.Join(skills, "executor", "SKILL.md")); err == nil {
		for _, line := range strings.Split(string(skill), "\n") {
			if strings.HasPrefix(line, "MARKER:") {
				fmt.Println("skill", strings.TrimSpace(line))
			}
		}
	}
	instruction, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	c := &client{api: api, model: model}
	c.user(string(instruction))
	for turn := 0; turn < 10; turn++ {
		text, calls, err := c.complete()
		if err != nil {
			return err
		}
		if len(calls) == 0 {
			fmt.Println("final:", text)
			return nil
		}
		for _, tc := range calls {
			c.result(tc, execute(tc))
		}
	}
	return fmt.Errorf("no final answer after 10 turns")
}

// execute runs one tool call in the container.
func execute(tc call) string {
	var a struct{ Command, Path, Content string }
	if err := json.Unmarshal([]byte(tc.args), &a); err != nil {
		return "bad arguments: " + err.Error()
	}
	switch tc.name {
	case "run_command":
		out, err := exec.Command("bash", "-c", a.Command).CombinedOutput()
		if err != nil {
			return string(out) + "\nerror: " + err.Error()
		}
		return string(out)
	case "write_file":
		if err := os.WriteFile(a.Path, []byte(a.Content), 0o644); err != nil {
			return "error: " + err.Error()
		}
		return "wrote " + a.Path
	}
	return "unknown tool " + tc.name
}

// client keeps the conversation in its API shape's own wire form.
type client struct {
	api, model string
	history    []any
}

var schemas = map[string]map[string]any{
	"run_command": {"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}, "required": []string{"command"}},
	"write_file":  {"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}}},
}

func (c *client) user(text string) {
	if c.api == "gemini" {
		c.history = append(c.history, map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}})
		return
	}
	c.history = append(c.history, map[string]any{"role": "user", "content": text})
}

func (c *client) result(tc call, out string) {
	switch c.api {
	case "anthropic":
		c.history = append(c.history, map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": tc.id, "content": out}}})
	case "openai-responses":
		c.history = append(c.history, map[string]any{"type": "function_call_output", "call_id": tc.id, "output": out})
	case "gemini":
		// No id: Gemini matches a response to its call by name.
		c.history = append(c.history, map[string]any{"role": "user", "parts": []any{
			map[string]any{"functionResponse": map[string]any{"name": tc.name, "response": map[string]any{"output": out}}}}})
	default:
		c.history = append(c.history, map[string]any{"role": "tool", "tool_call_id": tc.id, "content": out})
	}
}

func (c *client) request() (path string, body map[string]any, header http.Header) {
	header = http.Header{"Content-Type": {"application/json"}}
	var tools []any
	for _, name := range []string{"run_command", "write_file"} {
		switch c.api {
		case "anthropic":
			tools = append(tools, map[string]any{"name": name, "input_schema": schemas[name]})
		case "openai-responses":
			tools = append(tools, map[string]any{"type": "function", "name": name, "parameters": schemas[name]})
		case "gemini":
			tools = append(tools, map[string]any{"name": name, "parametersJsonSchema": schemas[name]})
		default:
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": name, "parameters": schemas[name]}})
		}
	}
	switch c.api {
	case "anthropic":
		header.Set("x-api-key", os.Getenv("ANTHROPIC_API_KEY"))
		return os.Getenv("ANTHROPIC_BASE_URL") + "/v1/messages", map[string]any{"model": c.model, "max_tokens": 1024,
			"system": "You are a stand-in agent.", "messages": c.history, "tools": tools, "stream": true}, header
	case "openai-responses":
		header.Set("Authorization", "Bearer "+os.Getenv("OPENAI_API_KEY"))
		return os.Getenv("OPENAI_BASE_URL") + "/responses", map[string]any{"model": c.model,
			"instructions": "You are a stand-in agent.", "input": c.history, "tools": tools}, header
	case "gemini":
		header.Set("x-goog-api-key", os.Getenv("GEMINI_API_KEY"))
		return os.Getenv("GOOGLE_GEMINI_BASE_URL") + "/v1beta/models/" + c.model + ":streamGenerateContent?alt=sse", map[string]any{
			"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "You are a stand-in agent."}}},
			"contents":          c.history, "tools": []any{map[string]any{"functionDeclarations": tools}}}, header
	}
	header.Set("Authorization", "Bearer "+os.Getenv("OPENAI_API_KEY"))
	msgs := append([]any{map[string]any{"role": "system", "content": "You are a stand-in agent."}}, c.history...)
	return os.Getenv("OPENAI_BASE_URL") + "/chat/completions", map[string]any{"model": c.model, "messages": msgs, "tools": tools}, header
}

func (c *client) complete() (string, []call, error) {
	url, body, header := c.request()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return "", nil, err
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("model call: %s: %s", resp.Status, raw)
	}
	switch c.api {
	case "anthropic":
		return c.anthropic(raw)
	case "openai-responses":
		return c.responses(raw)
	case "gemini":
		return c.gemini(raw)
	}
	return c.chat(raw)
}

func (c *client) chat(raw []byte) (string, []call, error) {
	var r struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Choices) == 0 {
		return "", nil, fmt.Errorf("read the answer %s: %v", raw, err)
	}
	m := r.Choices[0].Message
	var calls []call
	var wire []any
	for _, tc := range m.ToolCalls {
		calls = append(calls, call{tc.ID, tc.Function.Name, tc.Function.Arguments})
		wire = append(wire, map[string]any{"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Function.Name, "arguments": tc.Function.Arguments}})
	}
	msg := map[string]any{"role": "assistant", "content": m.Content}
	if len(wire) > 0 {
		msg["tool_calls"] = wire
	}
	c.history = append(c.history, msg)
	return m.Content, calls, nil
}

func (c *client) responses(raw []byte) (string, []call, error) {
	var r struct {
		Output []struct {
			Type      string `json:"type"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", nil, fmt.Errorf("read the answer %s: %v", raw, err)
	}
	var text string
	var calls []call
	for _, it := range r.Output {
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				text += p.Text
			}
			c.history = append(c.history, map[string]any{"role": "assistant", "content": text})
		case "function_call":
			calls = append(calls, call{it.CallID, it.Name, it.Arguments})
			c.history = append(c.history, map[string]any{"type": "function_call", "call_id": it.CallID, "name": it.Name, "arguments": it.Arguments})
		}
	}
	return text, calls, nil
}

// anthropic reads a streamed messages answer: its content blocks are put
// together from the start and delta events.
func (c *client) anthropic(raw []byte) (string, []call, error) {
	type block struct {
		Type, Text, ID, Name string
		json                 strings.Builder
	}
	var blocks []*block
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type         string
			Index        int
			ContentBlock struct{ Type, ID, Name string } `json:"content_block"`
			Delta        struct {
				Type, Text  string
				PartialJSON string `json:"partial_json"`
			}
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return "", nil, fmt.Errorf("read the event %s: %v", data, err)
		}
		switch ev.Type {
		case "content_block_start":
			blocks = append(blocks, &block{Type: ev.ContentBlock.Type, ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name})
		case "content_block_delta":
			blocks[ev.Index].Text += ev.Delta.Text
			blocks[ev.Index].json.WriteString(ev.Delta.PartialJSON)
		}
	}
	var text string
	var calls []call
	var content []any
	for _, b := range blocks {
		if b.Type == "tool_use" {
			calls = append(calls, call{b.ID, b.Name, b.json.String()})
			content = append(content, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": json.RawMessage(b.json.String())})
			continue
		}
		text += b.Text
		content = append(content, map[string]any{"type": "text", "text": b.Text})
	}
	c.history = append(c.history, map[string]any{"role": "assistant", "content": content})
	return text, calls, nil
}

// gemini reads a streamed generateContent answer: each event is a whole
// response whose parts add to the model's turn.
func (c *client) gemini(raw []byte) (string, []call, error) {
	var text string
	var calls []call
	var parts []any
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Candidates []struct {
				Content struct {
					Parts []struct {
						Text         string `json:"text"`
						FunctionCall *struct {
							ID   string          `json:"id"`
							Name string          `json:"name"`
							Args json.RawMessage `json:"args"`
						} `json:"functionCall"`
					} `json:"parts"`
				} `json:"content"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || len(ev.Candidates) == 0 {
			return "", nil, fmt.Errorf("read the event %s: %v", data, err)
		}
		for _, p := range ev.Candidates[0].Content.Parts {
			if fc := p.FunctionCall; fc != nil {
				calls = append(calls, call{fc.ID, fc.Name, string(fc.Args)})
				parts = append(parts, map[string]any{"functionCall": map[string]any{"id": fc.ID, "name": fc.Name, "args": fc.Args}})
				continue
			}
			text += p.Text
			parts = append(parts, map[string]any{"text": p.Text})
		}
	}
	c.history = append(c.history, map[string]any{"role": "model", "parts": parts})
	return text, calls, nil
}
