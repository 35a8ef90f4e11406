package lab

import (
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/skills"
)

var update = flag.Bool("update", false, "rewrite the golden prompt files under testdata/prompts")

// goldenInstruction is the fixed trial's instruction.
const goldenInstruction = "Merge /app/a.csv and /app/b.csv on the id column into /app/out.csv, sorted by id.\n"

// goldenAgent is one agent of the Executor whose first request is rendered.
type goldenAgent struct {
	file   string
	mode   string
	caller string
	skills bool
	plan   string
}

func goldenAgents() []goldenAgent {
	plan := "1. Read both CSV headers.\n2. Merge on id with python3's csv module.\n3. Check /app/out.csv before submitting."
	return []goldenAgent{
		{"executor-single.golden", config.ModeSingle, labCaller, true, plan},
		{"executor-single-no-skills.golden", config.ModeSingle, labCaller, false, plan},
		{"executor-single-no-plan.golden", config.ModeSingle, labCaller, false, ""},
		{"executor-coordinator.golden", config.ModeHierarchical, labCaller + "/coordinator", true, plan},
		{"executor-explore.golden", config.ModeHierarchical, labCaller + "/explore", true, plan},
		{"executor-plan.golden", config.ModeHierarchical, labCaller + "/plan", true, plan},
		{"executor-code.golden", config.ModeHierarchical, labCaller + "/code", true, plan},
		{"executor-code-no-skills.golden", config.ModeHierarchical, labCaller + "/code", false, plan},
	}
}

// renderGolden runs the fixed trial with the default executor skill and
// returns the first request of the agent.
func renderGolden(t *testing.T, ga goldenAgent) llm.Request {
	t.Helper()
	files := map[string]string{"/app/a.csv": "id,x\n1,a\n", "/app/b.csv": "id,y\n1,b\n"}
	if ga.skills {
		files["/root/.claude/skills/csv-tools/SKILL.md"] = "---\nname: csv-tools\ndescription: Helpers for CSV files.\n---\n\nUse python's csv module.\n"
	}
	sb := newLabFakeSandbox(files)
	script := map[string][]labStep{labCaller: {labSubmit("done")}}
	if ga.mode == config.ModeHierarchical {
		script = hierarchicalScript()
	}
	p := newLabProvider(script)
	in := labInput(t, sb, goldenInstruction)
	in.Plan = ga.plan
	skill, err := fs.ReadFile(skills.DefaultFS(), "executor/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	in.ExecutorSkill = string(skill)
	if _, err := NewAgent(labTestLab(ga.mode), labClients(p, nil)).Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	reqs := p.requests(ga.caller)
	if len(reqs) == 0 {
		t.Fatalf("%s made no request", ga.caller)
	}
	return reqs[0]
}

// goldenText is a request as a golden file shows it: the tools offered,
// then each message.
func goldenText(req llm.Request) string {
	var b strings.Builder
	b.WriteString("=== tools ===\n" + strings.Join(toolNamesOf(req), ", ") + "\n")
	for _, m := range req.Messages {
		b.WriteString("=== " + string(m.Role) + " ===\n" + m.Content)
		if !strings.HasSuffix(m.Content, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// checkGolden compares got with testdata/prompts/name, or rewrites it
// under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "prompts", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run go test ./executor/lab -run TestGoldenPrompts -update to write it", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the rendered prompt; review the change and rerun with -update. Got:\n%s", path, got)
	}
}

// A change to any prompt of the Executor shows up as a diff of its golden file.
func TestGoldenPrompts(t *testing.T) {
	for _, ga := range goldenAgents() {
		t.Run(ga.file, func(t *testing.T) {
			checkGolden(t, ga.file, goldenText(renderGolden(t, ga)))
		})
	}
}

var toolName = regexp.MustCompile(`\b(` + strings.Join([]string{ToolRunCommand, ToolReadFile, ToolWriteFile,
	ToolListDir, ToolReadSkill, ToolDispatch, ToolSubmit}, "|") + `)\b`)

// No prompt of the Executor names a tool its agent is not offered, nor an
// input it does not get.
func TestPromptsNameOnlyWhatTheAgentHas(t *testing.T) {
	for _, ga := range goldenAgents() {
		t.Run(ga.file, func(t *testing.T) {
			req := renderGolden(t, ga)
			held := toolNamesOf(req)
			system := req.Messages[0].Content
			for _, name := range toolName.FindAllString(system, -1) {
				if !slices.Contains(held, name) {
					t.Errorf("the prompt names %s, which the agent does not hold (it holds %v)", name, held)
				}
			}
			subagent := strings.HasSuffix(ga.caller, "/explore") || strings.HasSuffix(ga.caller, "/plan") || strings.HasSuffix(ga.caller, "/code")
			gotPlan := ga.plan != "" && !subagent
			for _, claim := range []string{"# Plan from the Planner", "the Planner's plan for it is at the end"} {
				if strings.Contains(system, claim) != gotPlan {
					t.Errorf("the prompt says %q: %v, but the agent gets a plan: %v", claim, strings.Contains(system, claim), gotPlan)
				}
			}
			if !gotPlan && strings.Contains(system, "plan below") {
				t.Error("the prompt speaks of a plan below, but the agent gets none")
			}
			if subagent && !strings.Contains(system, "you do not see the task's original instruction, the Planner's plan") {
				t.Error("a subagent is not told that it sees neither the instruction nor the plan")
			}
			if strings.Contains(system, "# Task skills") != ga.skills {
				t.Errorf("the prompt lists task skills: %v, but the task ships some: %v", !ga.skills, ga.skills)
			}
		})
	}
}
