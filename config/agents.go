package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/mediated-coevo/harness/conditions"
)

// AgentInstalled is the one [agents.<name>] kind: an agent program (a CLI
// such as Claude Code or Codex) installed into the task's image and run in
// the trial's container, its model calls going through the harness's
// model gateway.
const AgentInstalled = "installed"

// The API shapes an installed agent can speak to the gateway ([agents.<name>] api).
const (
	APIOpenAI          = "openai"           // chat completions
	APIOpenAIResponses = "openai-responses" // the Responses API
	APIAnthropic       = "anthropic"        // messages
	APIGemini          = "gemini"           // Google's Gemini API: generateContent
)

// APIShapes lists the values of [agents.<name>] api.
func APIShapes() []string { return []string{APIOpenAI, APIOpenAIResponses, APIAnthropic, APIGemini} }

// PlanPrompt is the [agents.<name>] plan value that puts the Planner's plan
// in front of the instruction; any other value names the file, relative to
// the working directory, the agent reads extra instructions from.
const PlanPrompt = "prompt"

// Agent is [agents.<name>]: an installed agent.
type Agent struct {
	Kind string `toml:"kind"`
	// Install is a shell script run as root when the task's image is
	// built, in a layer of its own cached per agent and Version.
	Install string `toml:"install"`
	// Version names the installed release in the layer's cache key; empty:
	// the script itself is the key.
	Version string `toml:"version"`
	// Command is the shell command that runs the agent, a template of
	// {instruction_file}, {instruction}, {model} and {workdir}.
	Command string `toml:"command"`
	// SkillsDir is the folder the agent reads skills from; a leading ~ is
	// the agent user's home, a relative path starts at the working directory.
	SkillsDir string `toml:"skills_dir"`
	// API is the wire format the agent speaks (APIShapes).
	API string `toml:"api"`
	// Model is the [models.<key>] whose endpoint and key the gateway
	// forwards to; empty: the executor's.
	Model string `toml:"model"`
	// Plan says how the Planner's plan reaches the agent: PlanPrompt, or a
	// file such as AGENTS.md or CLAUDE.md in the working directory.
	Plan string `toml:"plan"`
	// Env is more environment for the agent (never a key: the gateway adds
	// the real one).
	Env map[string]string `toml:"env"`
	// Logs are paths in the container kept as the agent's artifacts after
	// it stops (~ is the agent user's home).
	Logs []string `toml:"logs"`
}

func (a Agent) clone() Agent {
	a.Env = maps.Clone(a.Env)
	a.Logs = slices.Clone(a.Logs)
	return a
}

// InstalledAgent returns the named [agents.<name>] table (a copy), else
// the preset of that name (AgentPresets).
func (c *Config) InstalledAgent(name string) (Agent, error) {
	a, ok := c.Agents[name]
	if !ok {
		if presets, err := AgentPresets(); err == nil {
			a, ok = presets[name]
		}
	}
	if !ok {
		known := "none"
		if len(c.Agents) > 0 {
			known = strings.Join(sortedKeys(c.Agents), ", ")
		}
		return Agent{}, &Error{Key: "agents." + name,
			Msg: fmt.Sprintf("unknown agent %q (configured agents: %s; presets: claude-code, codex, gemini-cli, goose, mini-swe-agent, opencode; add one as [agents.%s] with kind = %q)",
				name, known, name, AgentInstalled)}
	}
	return a.clone(), nil
}

// AgentModel is the model role an installed agent's calls are forwarded
// to: its model key, else the executor's.
func (a Agent) AgentModel() conditions.Role {
	if a.Model == "" {
		return conditions.RoleExecutor
	}
	return conditions.Role(a.Model)
}

var (
	agentNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	placeholder = regexp.MustCompile(`\{[a-z_]+\}`)
)

// commandFields are the placeholders a command template may use.
var commandFields = []string{"{instruction_file}", "{instruction}", "{model}", "{workdir}"}

// reservedAgentNames are the agent kinds built in, which an [agents] table
// cannot shadow.
var reservedAgentNames = []string{"lab", "oracle", "nop"}

// reservedAgentEnv are set by the harness for every installed agent.
// GOOGLE_API_KEY is among them because Google's SDK prefers it to
// GEMINI_API_KEY: a key there would reach the gateway in place of the token.
var reservedAgentEnv = []string{"HARNESS_MODEL_BASE_URL", "HARNESS_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY",
	"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY"}

func (c *Config) validateAgents(ck *checker) {
	for _, name := range sortedKeys(c.Agents) {
		a := c.Agents[name]
		k := func(field string) toml.Key { return key("agents", name, field) }
		if !agentNameRE.MatchString(name) || slices.Contains(reservedAgentNames, name) {
			ck.add(key("agents", name), "has an invalid name: use letters, digits, '-' and '_', and none of %s", strings.Join(reservedAgentNames, ", "))
		}
		if a.Kind != AgentInstalled {
			ck.add(k("kind"), "must be %q (got %q)", AgentInstalled, a.Kind)
		}
		if strings.TrimSpace(a.Command) == "" {
			ck.add(k("command"), "is missing: give the shell command that runs the agent, e.g. \"mycli --prompt-file {instruction_file}\"")
		}
		for _, p := range placeholder.FindAllString(a.Command, -1) {
			if !slices.Contains(commandFields, p) {
				ck.add(k("command"), "uses the unknown placeholder %s: use %s", p, strings.Join(commandFields, ", "))
			}
		}
		if strings.TrimSpace(a.SkillsDir) == "" {
			ck.add(k("skills_dir"), "is missing: give the folder the agent reads skills from, e.g. \".agents/skills\" or \"~/.claude/skills\"")
		}
		ck.oneOf(k("api"), a.API, APIShapes())
		if a.Model != "" && !conditions.Role(a.Model).IsModel() {
			ck.add(k("model"), "names no model: use one of the [models.<key>] keys (%s), or leave it out for the executor's", roleNames())
		}
		if a.Plan != "" && a.Plan != PlanPrompt && (strings.HasPrefix(a.Plan, "/") || strings.Contains(a.Plan, "..")) {
			ck.add(k("plan"), "must be %q or a file name relative to the working directory, such as AGENTS.md (got %q)", PlanPrompt, a.Plan)
		}
		for _, v := range slices.Sorted(maps.Keys(a.Env)) {
			if !envNameRE.MatchString(v) || slices.Contains(reservedAgentEnv, v) {
				ck.add(k("env"), "cannot set %q: use a plain variable name, and none of %s (the harness sets them)", v, strings.Join(reservedAgentEnv, ", "))
			}
		}
	}
	for _, name := range sortedKeys(c.Labs) {
		if ag := c.Labs[name].Agent; ag != "" {
			if _, err := c.InstalledAgent(ag); err != nil {
				ck.add(key("labs", name, "agent"), "names the agent %q, which has no [agents.%s] table: add it, or leave agent out for the lab's own Executor", ag, ag)
			}
		}
	}
}

func roleNames() string {
	var out []string
	for _, r := range conditions.ModelRoles() {
		out = append(out, string(r))
	}
	return strings.Join(out, ", ")
}

// mergeAgents adds a layer's [agents.<name>] tables over c's: a table
// replaces the one of the same name whole, since an agent's keys only make
// sense together (a command for one CLI with another's install script).
func mergeAgents(c *Config, layer map[string]Agent) {
	if len(layer) == 0 {
		return
	}
	if c.Agents == nil {
		c.Agents = map[string]Agent{}
	}
	for name, a := range layer {
		c.Agents[name] = a.clone()
	}
}
