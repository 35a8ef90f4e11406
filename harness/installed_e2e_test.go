package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor/installed"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// bashAgent installs an agent written in bash alone: one chat call to the
// gateway over /dev/tcp, its answer printed.
const bashAgent = `cat > /usr/local/bin/bash-agent <<'AGENT'
#!/bin/bash
hostport=${OPENAI_BASE_URL#http://}; hostport=${hostport%%/*}
body='{"model":"'"$HARNESS_MODEL"'","messages":[{"role":"user","content":"'"$(head -c 40 "$1" | tr -dc 'a-zA-Z0-9 ')"'"}]}'
exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}"
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
  "$hostport" "$OPENAI_API_KEY" "${#body}" "$body" >&3
cat <&3
AGENT
chmod +x /usr/local/bin/bash-agent`

// TestOfflineRunWithAnInstalledAgent runs the orchestrator with an
// installed agent offline: the Planner plans, the agent's call goes
// through the gateway to the offline player under the student's caller,
// and the run's call log and the trial's trajectory record it.
func TestOfflineRunWithAnInstalledAgent(t *testing.T) {
	requireEngine(t)
	cfg := e2eConfig(t)
	cfg.Agents = map[string]config.Agent{"bash-agent": {Kind: config.AgentInstalled, Version: "1", Install: bashAgent,
		Command: "bash-agent {instruction_file}", SkillsDir: ".agents/skills", API: config.APIOpenAI, Plan: "AGENTS.md"}}
	p, err := BuildRunPlan(cfg, PlanOptions{Tasks: []string{"orbital-period"}, Condition: conditions.NoFeedback,
		Policy: conditions.PolicyNone, Iterations: 1, Seeds: []int64{42}, Agent: "bash-agent", Offline: true, Concurrency: 1, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := ExecutePlan(context.Background(), onEngine(t, ExecOptions{Plan: p}))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != rundir.StatusCompleted || out.EnvFailures != 0 {
		t.Fatalf("outcome %+v", out)
	}
	job := filepath.Join(out.Rows[0].Dir, rundir.JobDir("orbital-period", 1))
	stdout, err := os.ReadFile(filepath.Join(job, installed.StdoutFile))
	if err != nil || !strings.Contains(string(stdout), "200 OK") || !strings.Contains(string(stdout), "Offline run") {
		t.Errorf("the agent's output %q (%v), want the gateway's offline answer", stdout, err)
	}
	var executorCalls, plannerCalls int
	if err := rundir.ReadCalls(filepath.Join(out.Rows[0].Dir, rundir.CallsFile), func(r rundir.CallRecord) error {
		switch {
		case strings.HasPrefix(r.Caller, "executor/student-1"):
			executorCalls++
		case strings.HasPrefix(r.Caller, "planner"):
			plannerCalls++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if executorCalls != 1 || plannerCalls == 0 {
		t.Errorf("call log has %d calls of executor/student-1 and %d of the Planner, want 1 and at least 1", executorCalls, plannerCalls)
	}
	if _, err := os.Stat(filepath.Join(job, "agent", "trajectory.json")); err != nil {
		t.Errorf("no trajectory: %v", err)
	}
}
