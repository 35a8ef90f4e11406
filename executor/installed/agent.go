// Package installed runs an installed agent (an agent CLI such as Claude
// Code or Codex, configured as [agents.<name>]) as a trial's Executor. The
// agent runs in the trial's container; its model calls go to a gateway
// (llm/gateway) served on the host side of the trial's own network, which
// forwards them through the role's model client. The agent holds a token
// worthless outside its trial, never the real key.
package installed

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/gateway"
)

// Files of an installed agent's run, relative to the job directory.
const (
	StdoutFile = "agent/stdout.txt"
	StderrFile = "agent/stderr.txt"
	LogsDir    = "agent/logs"
	// inContainer holds the instruction and the agent's own files in the sandbox.
	inContainer = "/tmp/harness-agent"
)

// outputCap caps each of the agent command's streams kept in the job directory.
const outputCap = 4 << 20

// Agent is one installed agent, built once per row and used for every trial.
type Agent struct {
	// AgentName is the [agents.<name>] key.
	AgentName string
	Spec      config.Agent
	// Client is the model client of the agent's model role: the gateway
	// makes every call through it.
	Client *llm.Client
	// TaskSkillDirs are the lab's task_skill_dirs, searched besides the
	// task's own for skills to place where the agent reads them.
	TaskSkillDirs []string
	// Listen opens the gateway's listener on the trial network's host
	// address; nil: TCP on an ephemeral port.
	Listen func(ctx context.Context, host string) (net.Listener, error)
}

// Name is the agent's configured name.
func (a *Agent) Name() string { return a.AgentName }

// Install is the layer the agent needs in the task's image.
func (a *Agent) Install() executor.AgentInstall {
	return executor.AgentInstall{Name: a.AgentName, Version: a.Spec.Version, Script: a.Spec.Install}
}

// Run serves the trial's gateway, places the skills and the plan, runs the
// agent's command and keeps its output, logs and trajectory.
func (a *Agent) Run(ctx context.Context, in executor.AgentInput) (executor.AgentResult, error) {
	var res executor.AgentResult
	gh, ok := in.Sandbox.(executor.GatewayHost)
	if !ok {
		return res, fmt.Errorf("installed agent %s: the sandbox has no network of its own for the model gateway", a.AgentName)
	}
	host, err := gh.GatewayHost(ctx)
	if err != nil {
		return res, fmt.Errorf("installed agent %s: find the gateway's address: %w", a.AgentName, err)
	}
	gw, url, stop, err := a.serve(ctx, host, in)
	if err != nil {
		return res, err
	}
	defer stop()
	t, err := a.prepare(ctx, in, url, gw.Token)
	if err != nil {
		return res, fmt.Errorf("installed agent %s: %w", a.AgentName, err)
	}
	out, runErr := a.runCommand(ctx, in, t)
	stop()
	res.Output = cut(strings.TrimSpace(out.Stdout), 2000)
	res.Submitted = runErr == nil && out.ExitCode == 0 && !out.TimedOut
	res.Usage = usageOf(gw.Calls())
	if in.JobDir != "" {
		if err := a.keepArtifacts(ctx, in, t, out); err != nil && runErr == nil {
			runErr = err
		}
		if err := a.writeTrajectory(in, t, gw.Calls()); err != nil && runErr == nil {
			runErr = err
		}
		res.TranscriptPath = executorTranscript
	}
	if runErr != nil {
		return res, runErr
	}
	if err := gw.Err(); err != nil {
		// The budget or the model endpoint stopped the agent, not the agent itself.
		return res, fmt.Errorf("installed agent %s: %w", a.AgentName, err)
	}
	if out.TimedOut {
		return res, fmt.Errorf("installed agent %s: its command did not finish within the agent timeout", a.AgentName)
	}
	return res, nil
}

// serve starts the trial's gateway on host; stop ends it and may be called
// more than once.
func (a *Agent) serve(ctx context.Context, host string, in executor.AgentInput) (*gateway.Gateway, string, func(), error) {
	token, err := gateway.NewToken()
	if err != nil {
		return nil, "", nil, err
	}
	listen := a.Listen
	if listen == nil {
		listen = func(ctx context.Context, host string) (net.Listener, error) {
			var lc net.ListenConfig
			return lc.Listen(ctx, "tcp", net.JoinHostPort(host, "0"))
		}
	}
	ln, err := listen(ctx, host)
	if err != nil {
		return nil, "", nil, fmt.Errorf("installed agent %s: listen for the model gateway on %s (the harness must run on the engine's host): %w", a.AgentName, host, err)
	}
	client := a.Client
	if client.Offline() {
		client = client.WithPlayer(OfflinePlayer)
	}
	gw := &gateway.Gateway{Client: client, Caller: in.Caller, API: a.Spec.API, Token: token, Seed: in.Seed}
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { _ = gw.Serve(gctx, ln); close(done) }()
	stop := func() { cancel(); <-done }
	return gw, "http://" + ln.Addr().String(), stop, nil
}

// runCommand runs the rendered command in the working directory as the
// task's agent user, bounded by the agent timeout the runner set on ctx.
func (a *Agent) runCommand(ctx context.Context, in executor.AgentInput, t trial) (executor.ExecResult, error) {
	timeout := executor.AgentTimeout(in.Task, config.ExecutorRuntime{})
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	res, err := in.Sandbox.Exec(ctx, executor.ExecRequest{
		Cmd:       []string{"bash", "-lc", "cd " + shellQuote(t.workdir) + " && " + t.command},
		Dir:       t.workdir,
		Env:       executor.EnvList(t.env),
		Timeout:   timeout,
		OutputCap: outputCap,
		User:      in.Task.Config.Agent.User,
	})
	if err != nil {
		return res, fmt.Errorf("installed agent %s: run its command: %w", a.AgentName, err)
	}
	return res, nil
}

// keepArtifacts writes the command's output and copies the agent's own
// logs out of the container.
func (a *Agent) keepArtifacts(ctx context.Context, in executor.AgentInput, t trial, out executor.ExecResult) error {
	for name, data := range map[string]string{StdoutFile: out.Stdout, StderrFile: out.Stderr} {
		if err := os.WriteFile(filepath.Join(in.JobDir, name), []byte(data), 0o644); err != nil {
			return fmt.Errorf("installed agent %s: keep its output: %w", a.AgentName, err)
		}
	}
	for i, p := range a.Spec.Logs {
		p = expandHome(p, t.home)
		dst := filepath.Join(in.JobDir, LogsDir, fmt.Sprintf("%02d-%s.tar", i+1, filepath.Base(p)))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("installed agent %s: keep its logs: %w", a.AgentName, err)
		}
		f, err := os.Create(dst)
		if err != nil {
			return fmt.Errorf("installed agent %s: keep its logs: %w", a.AgentName, err)
		}
		cerr := in.Sandbox.CopyOut(ctx, p, f)
		_ = f.Close()
		if cerr != nil {
			// An agent that wrote no log there is not a failed trial.
			_ = os.Remove(dst)
		}
	}
	return nil
}

func usageOf(calls []gateway.Call) executor.Usage {
	var u executor.Usage
	for _, c := range calls {
		if c.Response == nil {
			continue
		}
		u.InputTokens += c.Response.Usage.InputTokens
		u.OutputTokens += c.Response.Usage.OutputTokens
		u.CostUSD += c.Response.Usage.CostUSD
		u.ModelCalls++
	}
	return u
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + " [cut]"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
