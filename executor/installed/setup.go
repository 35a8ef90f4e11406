package installed

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/lab"
)

// setupTimeout bounds each of the harness's own commands in the sandbox.
const setupTimeout = 2 * time.Minute

// ExecutorSkillName is the folder the executor skill is placed in, inside
// the agent's skills folder.
const ExecutorSkillName = "executor"

// trial is what prepare settled for one trial's command.
type trial struct {
	workdir, home   string
	instructionFile string
	instruction     string
	skillsDir       string
	command         string
	env             map[string]string
	skills          []lab.TaskSkill
	warnings        []string
}

// prepare finds the working directory and the agent user's home, writes
// the instruction, the plan and the skills where the agent reads them, and
// renders the command and its environment.
func (a *Agent) prepare(ctx context.Context, in executor.AgentInput, url, token string) (trial, error) {
	task := in.Task
	user := task.Config.Agent.User
	var dirs []string
	for _, d := range slices.Concat(task.SkillDirs, a.TaskSkillDirs) {
		if strings.HasPrefix(d, "/") && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	env, err := lab.DiscoverEnvironment(ctx, in.Sandbox, task.Config.Environment.Workdir, user, dirs)
	if err != nil {
		return trial{}, err
	}
	t := trial{workdir: env.Workdir, skills: env.Skills, warnings: env.Warnings, instructionFile: inContainer + "/instruction.md"}
	if t.home, err = homeOf(ctx, in.Sandbox, user); err != nil {
		return t, err
	}
	t.skillsDir = resolve(a.Spec.SkillsDir, t.home, t.workdir)
	t.instruction = task.Instruction
	if strings.TrimSpace(in.Plan) != "" {
		if a.Spec.Plan == "" || a.Spec.Plan == config.PlanPrompt {
			t.instruction = PlanPrefix(in.Plan) + task.Instruction
		} else if err := a.writePlanFile(ctx, in, t); err != nil {
			return t, err
		}
	}
	if err := in.Sandbox.WriteFile(ctx, user, t.instructionFile, []byte(t.instruction), 0o644); err != nil {
		return t, fmt.Errorf("write the instruction to %s: %w", t.instructionFile, err)
	}
	if err := a.placeSkills(ctx, in, t); err != nil {
		return t, err
	}
	t.env = a.Env(url, a.Client.Model, token)
	t.command = Render(a.Spec.Command, t.instructionFile, t.instruction, a.Client.Model, t.workdir)
	return t, nil
}

// PlanPrefix is the Planner's plan as a prompt prefix, for agents that take
// extra instructions only in their prompt.
func PlanPrefix(plan string) string {
	return "## Plan from your supervisor\n\n" + strings.TrimSpace(plan) + "\n\n## Task\n\n"
}

// PlanSection is the plan as a section of an instructions file such as
// AGENTS.md, appended to one the task already has.
func PlanSection(plan string) string {
	return "\n\n## Plan for this task (from the harness)\n\n" + strings.TrimSpace(plan) + "\n"
}

func (a *Agent) writePlanFile(ctx context.Context, in executor.AgentInput, t trial) error {
	user := in.Task.Config.Agent.User
	p := path.Join(t.workdir, a.Spec.Plan)
	old, err := in.Sandbox.ReadFile(ctx, user, p, 0)
	if err != nil {
		old = nil // no such file yet: the plan is all of it
	}
	data := append(old, []byte(PlanSection(in.Plan))...)
	if err := in.Sandbox.WriteFile(ctx, user, p, data, 0); err != nil {
		return fmt.Errorf("write the plan to %s: %w", p, err)
	}
	return nil
}

// placeSkills writes the executor skill and copies each task skill's
// folder into the agent's skills folder, as the agent user.
func (a *Agent) placeSkills(ctx context.Context, in executor.AgentInput, t trial) error {
	user := in.Task.Config.Agent.User
	if strings.TrimSpace(in.ExecutorSkill) != "" {
		p := path.Join(t.skillsDir, ExecutorSkillName, "SKILL.md")
		if err := in.Sandbox.WriteFile(ctx, user, p, []byte(in.ExecutorSkill), 0o644); err != nil {
			return fmt.Errorf("place the executor skill at %s: %w", p, err)
		}
	}
	var script strings.Builder
	script.WriteString("set -e\nmkdir -p " + shellQuote(t.skillsDir) + "\n")
	for _, s := range t.skills {
		src := path.Dir(s.Path)
		dst := path.Join(t.skillsDir, path.Base(src))
		if src == dst || s.Name == ExecutorSkillName {
			continue
		}
		fmt.Fprintf(&script, "[ -e %s ] || cp -R %s %s\n", shellQuote(dst), shellQuote(src), shellQuote(dst))
	}
	res, err := in.Sandbox.Exec(ctx, executor.ExecRequest{Cmd: []string{"bash", "-c", script.String()}, User: user, Timeout: setupTimeout})
	if err != nil {
		return fmt.Errorf("place the task skills in %s: %w", t.skillsDir, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("place the task skills in %s: exit %d: %s", t.skillsDir, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return nil
}

// homeOf is the agent user's home directory in the sandbox.
func homeOf(ctx context.Context, sb executor.Sandbox, user string) (string, error) {
	res, err := sb.Exec(ctx, executor.ExecRequest{Cmd: []string{"sh", "-c", `printf %s "$HOME"`}, User: user, Timeout: setupTimeout})
	if err != nil {
		return "", fmt.Errorf("find the agent user's home: %w", err)
	}
	home := strings.TrimSpace(res.Stdout)
	if home == "" {
		home = "/root"
		if user != "" && user != "root" && user != "0" {
			home = "/home/" + user
		}
	}
	return home, nil
}

// resolve makes a configured folder absolute: ~ is home, a relative path
// starts at the working directory.
func resolve(p, home, workdir string) string {
	p = expandHome(p, home)
	if !path.IsAbs(p) {
		p = path.Join(workdir, p)
	}
	return path.Clean(p)
}

func expandHome(p, home string) string {
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return path.Join(home, rest)
	}
	return p
}
