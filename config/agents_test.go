package config

import (
	"strings"
	"testing"
)

const standInAgent = `
[agents.standin]
kind = "installed"
install = "echo installed"
version = "1"
command = "standin --file {instruction_file} --model {model} --dir {workdir}"
skills_dir = ".agents/skills"
api = "anthropic"
model = "code"
plan = "AGENTS.md"
env = { STANDIN_MODE = "fast" }
logs = ["~/.standin/logs"]

[labs.default]
agent = "standin"
`

func TestLoadInstalledAgent(t *testing.T) {
	dir, _ := writeLayer(t, standInAgent)
	c, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	a, err := c.InstalledAgent("standin")
	if err != nil {
		t.Fatal(err)
	}
	if a.Kind != AgentInstalled || a.API != APIAnthropic || a.SkillsDir != ".agents/skills" || a.Plan != "AGENTS.md" ||
		a.Env["STANDIN_MODE"] != "fast" || len(a.Logs) != 1 || a.AgentModel() != "code" {
		t.Errorf("agent = %+v", a)
	}
	if got := c.Labs[DefaultLab].Agent; got != "standin" {
		t.Errorf("labs.default.agent = %q, want standin", got)
	}
	clone := c.Clone()
	clone.Agents["standin"].Env["STANDIN_MODE"] = "slow"
	if c.Agents["standin"].Env["STANDIN_MODE"] != "fast" {
		t.Error("Clone shares the agent's env with the original")
	}
	if _, err := c.InstalledAgent("other"); err == nil || !strings.Contains(err.Error(), "[agents.other]") {
		t.Errorf("unknown agent error = %v, want one naming the table to add", err)
	}
}

func TestInstalledAgentDefaultsToTheExecutorModel(t *testing.T) {
	if got := (Agent{}).AgentModel(); got != "executor" {
		t.Errorf("AgentModel() = %q, want executor", got)
	}
}

func TestValidateInstalledAgent(t *testing.T) {
	tests := []struct {
		name, edit, want string
	}{
		{"kind", `kind = "installed"`, `agents.standin.kind must be "installed"`},
		{"api", `api = "anthropic"`, "agents.standin.api must be one of openai, openai-responses, anthropic, gemini"},
		{"placeholder", `command = "standin --file {instruction_file} --model {model} --dir {workdir}"`, "unknown placeholder {prompt}"},
		{"skills_dir", `skills_dir = ".agents/skills"`, "agents.standin.skills_dir is missing"},
		{"model", `model = "code"`, "agents.standin.model names no model"},
		{"plan", `plan = "AGENTS.md"`, "agents.standin.plan must be"},
		{"env", `env = { STANDIN_MODE = "fast" }`, `cannot set "OPENAI_API_KEY"`},
		{"lab", `agent = "standin"`, `labs.default.agent names the agent "ghost"`},
	}
	bad := map[string]string{
		"kind":        `kind = "docker"`,
		"api":         `api = "google"`,
		"placeholder": `command = "standin {prompt}"`,
		"skills_dir":  `skills_dir = ""`,
		"model":       `model = "gpt"`,
		"plan":        `plan = "../AGENTS.md"`,
		"env":         `env = { OPENAI_API_KEY = "sk-x" }`,
		"lab":         `agent = "ghost"`,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := strings.Replace(standInAgent, tt.edit, bad[tt.name], 1)
			if body == standInAgent {
				t.Fatalf("edit %q not found", tt.edit)
			}
			dir, _ := writeLayer(t, body)
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// The variables the harness sets for the gemini shape, and GOOGLE_API_KEY,
// which Google's SDK prefers to GEMINI_API_KEY, cannot come from an
// agent's env, where a real key would take the trial token's place.
func TestValidateRefusesGeminiKeyVariablesInEnv(t *testing.T) {
	for _, v := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"} {
		t.Run(v, func(t *testing.T) {
			body := strings.Replace(standInAgent, `env = { STANDIN_MODE = "fast" }`, `env = { `+v+` = "x" }`, 1)
			body = strings.Replace(body, `api = "anthropic"`, `api = "gemini"`, 1)
			dir, _ := writeLayer(t, body)
			if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), `cannot set "`+v+`"`) {
				t.Errorf("Load error = %v, want env refused for %s", err, v)
			}
		})
	}
	dir, _ := writeLayer(t, strings.Replace(standInAgent, `api = "anthropic"`, `api = "gemini"`, 1))
	if _, err := Load(dir); err != nil {
		t.Errorf("an agent with api = \"gemini\" is refused: %v", err)
	}
}
