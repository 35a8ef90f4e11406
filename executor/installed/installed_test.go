package installed

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/gateway"
)

func TestEnvPutsTheGatewayWhereEachShapeLooks(t *testing.T) {
	tests := []struct {
		api  string
		want map[string]string
		none []string
	}{
		{config.APIOpenAI, map[string]string{"OPENAI_BASE_URL": "http://172.18.0.1:4000/v1", "OPENAI_API_KEY": "tok",
			EnvBaseURL: "http://172.18.0.1:4000/v1", EnvModel: "m1", "EXTRA": "x"}, []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GEMINI_API_KEY"}},
		{config.APIOpenAIResponses, map[string]string{"OPENAI_BASE_URL": "http://172.18.0.1:4000/v1", "OPENAI_API_KEY": "tok"}, []string{"ANTHROPIC_API_KEY"}},
		{config.APIAnthropic, map[string]string{"ANTHROPIC_BASE_URL": "http://172.18.0.1:4000", "ANTHROPIC_API_KEY": "tok",
			EnvBaseURL: "http://172.18.0.1:4000", EnvModel: "m1"}, []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY"}},
		{config.APIGemini, map[string]string{"GOOGLE_GEMINI_BASE_URL": "http://172.18.0.1:4000", "GEMINI_API_KEY": "tok",
			EnvBaseURL: "http://172.18.0.1:4000", EnvModel: "m1"}, []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY"}},
	}
	for _, tt := range tests {
		t.Run(tt.api, func(t *testing.T) {
			a := &Agent{Spec: config.Agent{API: tt.api, Env: map[string]string{"EXTRA": "x"}}}
			env := a.Env("http://172.18.0.1:4000/", "m1", "tok")
			for k, v := range tt.want {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
			for _, k := range tt.none {
				if _, ok := env[k]; ok {
					t.Errorf("%s is set for the %s shape", k, tt.api)
				}
			}
		})
	}
}

func TestRenderQuotesEachValueAsOneWord(t *testing.T) {
	instruction := "Fix it; don't `rm -rf`\nthen say \"done\" $HOME"
	cmd := Render(`printf '%s|' {instruction} {model} {workdir} {instruction_file}`, "/tmp/i.md", instruction, "gpt-x", "/app dir")
	out, err := exec.Command("bash", "-c", cmd).Output()
	if err != nil {
		t.Fatalf("run %s: %v", cmd, err)
	}
	if want := instruction + "|gpt-x|/app dir|/tmp/i.md|"; string(out) != want {
		t.Errorf("rendered words = %q, want %q", out, want)
	}
}

func TestResolveSkillsDir(t *testing.T) {
	for in, want := range map[string]string{
		"~/.claude/skills": "/home/agent/.claude/skills",
		".agents/skills":   "/app/.agents/skills",
		"/skills/":         "/skills",
		"~":                "/home/agent",
	} {
		if got := resolve(in, "/home/agent", "/app"); got != want {
			t.Errorf("resolve(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTranscriptAddsEachCallsNewMessagesOnce(t *testing.T) {
	sys := llm.Message{Role: llm.RoleSystem, Content: "sys"}
	user := llm.Message{Role: llm.RoleUser, Content: "do it"}
	call := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "run", Arguments: `{"a": 1}`}}}
	// The agent sends the call back re-encoded, as agents do.
	echoed := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "run", Arguments: `{"a":1}`}}}
	result := llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: "ok"}
	final := llm.Message{Role: llm.RoleAssistant, Content: "done"}
	calls := []gateway.Call{
		{Request: llm.Request{Messages: []llm.Message{sys, user}}, Response: &llm.Response{Message: call, Usage: llm.Usage{InputTokens: 5}}},
		{Request: llm.Request{Messages: []llm.Message{sys, user, echoed, result}}, Response: &llm.Response{Message: final}},
		{Request: llm.Request{Messages: []llm.Message{sys, {Role: llm.RoleUser, Content: "summary"}}}, Err: "budget spent"},
	}
	var events []string
	for _, r := range Transcript(trial{workdir: "/app"}, calls) {
		e := r.Event
		if r.Message != nil {
			e += ":" + r.Message.Role
		}
		events = append(events, e)
	}
	want := "setup message:system message:user usage message:assistant message:tool usage message:assistant " +
		"compaction message:system message:user stop"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("transcript events:\n got %s\nwant %s", got, want)
	}
}

func TestInstallNamesTheLayer(t *testing.T) {
	a := &Agent{AgentName: "codex", Spec: config.Agent{Install: "npm i -g x", Version: "1.2"}}
	if in := a.Install(); in.Name != "codex" || in.Version != "1.2" || in.Script != "npm i -g x" || a.Name() != "codex" {
		t.Errorf("Install() = %+v, Name() = %q", in, a.Name())
	}
}
