package installed

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
)

// The presets cannot be installed here (their package registries are out
// of reach), so this checks what can be: each install script and rendered
// command is valid shell, and holds the flags, files and variables its
// agent's documentation names.
func TestPresetsRenderTheirDocumentedCommands(t *testing.T) {
	presets, err := config.AgentPresets()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name              string
		api, skills, plan string
		command, install  []string
	}{
		{"claude-code", config.APIAnthropic, "~/.claude/skills", "CLAUDE.md",
			[]string{"claude --print", "--dangerously-skip-permissions", "--model 'm1'", `"$(cat '/tmp/harness-agent/instruction.md')"`},
			[]string{"npm install -g @anthropic-ai/claude-code"}},
		{"codex", config.APIOpenAIResponses, "~/.codex/skills", "AGENTS.md",
			[]string{"codex exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--model 'm1'", "- < '/tmp/harness-agent/instruction.md'"},
			[]string{"npm install -g @openai/codex"}},
		{"gemini-cli", config.APIGemini, ".gemini/skills", "GEMINI.md",
			[]string{"gemini --yolo", "--model 'm1'", "--prompt"}, []string{"npm install -g @google/gemini-cli"}},
		{"opencode", config.APIOpenAI, ".opencode/skills", "AGENTS.md",
			[]string{"opencode run --model \"harness/$HARNESS_MODEL\"", `"baseURL":"{env:OPENAI_BASE_URL}"`, `"apiKey":"{env:OPENAI_API_KEY}"`},
			[]string{"npm install -g opencode-ai"}},
		{"goose", config.APIOpenAI, ".agents/skills", ".goosehints",
			[]string{"goose run --no-session -i '/tmp/harness-agent/instruction.md'", `OPENAI_HOST="${OPENAI_BASE_URL%/v1}"`, "GOOSE_MODEL='m1'"},
			[]string{"download_cli.sh", "CONFIGURE=false"}},
		{"mini-swe-agent", config.APIOpenAI, ".agents/skills", config.PlanPrompt,
			[]string{"mini --yolo", "--exit-immediately", "--model openai/'m1'", "--task"}, []string{"pip install mini-swe-agent"}},
	}
	var names []string
	for _, tt := range tests {
		names = append(names, tt.name)
		t.Run(tt.name, func(t *testing.T) {
			p, ok := presets[tt.name]
			if !ok {
				t.Fatalf("no preset %s", tt.name)
			}
			if p.Kind != config.AgentInstalled || p.API != tt.api || p.SkillsDir != tt.skills || p.Plan != tt.plan {
				t.Errorf("preset = %+v", p)
			}
			cmd := Render(p.Command, "/tmp/harness-agent/instruction.md", "Do it.", "m1", "/app")
			for _, want := range tt.command {
				if !strings.Contains(cmd, want) {
					t.Errorf("command %s\nlacks %s", cmd, want)
				}
			}
			for _, want := range tt.install {
				if !strings.Contains(p.Install, want) {
					t.Errorf("install script lacks %s:\n%s", want, p.Install)
				}
			}
			for what, script := range map[string]string{"command": cmd, "install": p.Install} {
				if out, err := exec.Command("bash", "-n", "-c", script).CombinedOutput(); err != nil {
					t.Errorf("%s is not valid shell: %v %s", what, err, out)
				}
			}
			a := &Agent{AgentName: tt.name, Spec: p, Client: &llm.Client{Model: "m1"}}
			env := a.Env("http://172.18.0.1:4000", "m1", "tok")
			for k, v := range p.Env {
				if env[k] != v {
					t.Errorf("env %s = %q, want the preset's %q", k, env[k], v)
				}
			}
		})
	}
	for name := range presets {
		if !slices.Contains(names, name) {
			t.Errorf("preset %s is not tested", name)
		}
	}
}

func TestPresetsPassValidationAsLabAgents(t *testing.T) {
	presets, err := config.AgentPresets()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range presets {
		cfg, err := config.Default()
		if err != nil {
			t.Fatal(err)
		}
		lab := cfg.Labs[config.DefaultLab]
		lab.Agent = name
		cfg.Labs[config.DefaultLab] = lab
		cfg.Agents = map[string]config.Agent{name: p}
		if err := cfg.Validate(); err != nil {
			t.Errorf("lab with agent %s: %v", name, err)
		}
	}
}
