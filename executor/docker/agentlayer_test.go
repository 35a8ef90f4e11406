package docker

import (
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/executor"
)

func TestAgentLayerTagChangesWithEachInput(t *testing.T) {
	base := executor.AgentInstall{Name: "Claude Code", Version: "1.0", Script: "npm i -g x"}
	tag := AgentLayerTag("sha256:aaa", base)
	if !strings.HasPrefix(tag, "harness-agent-claude-code:") || tag != AgentLayerTag("sha256:aaa", base) {
		t.Fatalf("tag %q is not a stable harness-agent-<name> tag", tag)
	}
	for name, other := range map[string]string{
		"image":   AgentLayerTag("sha256:bbb", base),
		"version": AgentLayerTag("sha256:aaa", executor.AgentInstall{Name: base.Name, Version: "1.1", Script: base.Script}),
		"script":  AgentLayerTag("sha256:aaa", executor.AgentInstall{Name: base.Name, Version: base.Version, Script: "npm i -g y"}),
	} {
		if other == tag {
			t.Errorf("a new %s keeps the tag %s", name, tag)
		}
	}
}

func TestAgentDockerfileGivesTheUserBack(t *testing.T) {
	df := agentDockerfile("sha256:aaa", "agent")
	for _, want := range []string{"FROM sha256:aaa\n", "USER root\n", "RUN bash /tmp/harness-agent-install.sh", "USER agent\n"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q:\n%s", want, df)
		}
	}
	if strings.HasSuffix(agentDockerfile("sha256:aaa", ""), "USER \n") {
		t.Error("an image without a user gets an empty USER line")
	}
}
