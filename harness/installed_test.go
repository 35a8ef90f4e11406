package harness

import (
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor/installed"
	"github.com/mediated-coevo/harness/llm"
)

func installedTestConfig(t *testing.T) *config.Config {
	cfg := rundirTestConfig(t)
	cfg.Agents = map[string]config.Agent{"mycli": {Kind: config.AgentInstalled, Command: "mycli {instruction_file}",
		SkillsDir: ".agents/skills", API: config.APIOpenAI, Model: "code"}}
	return cfg
}

func TestInstalledAgentsAreSelectable(t *testing.T) {
	cfg := installedTestConfig(t)
	opts := PlanOptions{Tasks: []string{"a"}, Condition: conditions.LearnedMediator, Policy: conditions.PolicyAll, OutDir: "out"}
	for _, name := range []string{"mycli", "codex"} {
		o := opts
		o.Agent = name
		p, err := BuildRunPlan(cfg, o)
		if err != nil {
			t.Fatalf("--agent %s: %v", name, err)
		}
		if p.Agent != name || !ModelDriven(p.Agent) {
			t.Errorf("plan agent %q, model driven %v", p.Agent, ModelDriven(p.Agent))
		}
	}
	opts.Agent = "human"
	if _, err := BuildRunPlan(cfg, opts); err == nil || !strings.Contains(err.Error(), "[agents.human]") {
		t.Errorf("unknown agent: err = %v, want it to say how to add one", err)
	}
}

func TestAgentFactoryBuildsInstalledAgents(t *testing.T) {
	cfg := installedTestConfig(t)
	lab := cfg.Labs[config.DefaultLab]
	lab.Agent = "mycli"
	cfg.Labs[config.DefaultLab] = lab
	code := &llm.Client{Role: "code", Model: "code-model"}
	clients := &Clients{byRole: map[conditions.Role]*llm.Client{conditions.RoleCode: code, conditions.RoleExecutor: {Role: "executor"}}}
	for _, kind := range []string{AgentLab, "mycli"} {
		f, err := agentFactory(cfg, kind, "", clients)
		if err != nil {
			t.Fatalf("agent %s: %v", kind, err)
		}
		a, ok := f("student-1").(*installed.Agent)
		if !ok || a.Name() != "mycli" || a.Client != code {
			t.Errorf("agent %s built %#v, want mycli on the code model's client", kind, f("student-1"))
		}
	}
	if _, err := agentFactory(cfg, "mycli", "", nil); err == nil || !strings.Contains(err.Error(), "model clients") {
		t.Errorf("without clients: err = %v", err)
	}
}
