package lab

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
)

// SystemPrompt layers a system prompt in a fixed order: the identity,
// the executor skill, the task-skill index, then the Planner's plan. Empty
// layers are left out. The task instruction is never part of it: it goes,
// unmodified, in the user message.
func SystemPrompt(identity, executorSkill, skillIndex, plan string) string {
	var parts []string
	add := func(header, body string) {
		if strings.TrimSpace(body) == "" {
			return
		}
		parts = append(parts, header+"\n\n"+strings.TrimSpace(body))
	}
	add("# Your role", identity)
	add("# Executor skill", executorSkill)
	add("# Task skills", skillIndex)
	add("# Plan from the Planner", plan)
	return strings.Join(parts, "\n\n") + "\n"
}

// containerTools drops read_skill from names when the sandbox lists no
// task skills: a tool for skills nobody listed only invites blind guesses.
func (r *labRun) containerTools(names ...string) []string {
	if len(r.tools.Skills) > 0 {
		return slices.Clone(names)
	}
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == ToolReadSkill })
}

// specNames are the names of the tools an agent holds, in the order it
// is offered them.
func specNames(specs []llm.ToolSpec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Tool.Name
	}
	return out
}

// toolList names tools in prose: "a, b and c".
func toolList(names []string) string {
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// sharedSkillNote tells every agent how to read the executor skill, which
// all of them share and which may evolve: the role states the tools and
// inputs each agent really has.
const sharedSkillNote = "The executor skill below is shared by every agent of the Executor. Where it speaks of a tool you do not hold or an input you were not given, what this section says holds."

// planSentence says truthfully where the plan is, or that there is none.
func planSentence(hasPlan bool) string {
	if hasPlan {
		return "The task's instruction is the user message; the Planner's plan for it is at the end of this prompt."
	}
	return "The task's instruction is the user message; no plan was written for it."
}

func singleIdentity(workdir string, calls int, tools []string, hasPlan bool) string {
	return fmt.Sprintf(`You are an Executor in a research lab. You carry out one task inside an isolated Linux container, acting only through your tools: %s. Your working directory is %s.
%s
The task's tests are not in the container; they run after you submit, against the state you leave behind, so make sure every result the task asks for exists where it asks.
You may make at most %d model calls. When the work is done, or when you are told to conclude, call submit with a short summary.
%s`, toolList(tools), workdir, planSentence(hasPlan), calls, sharedSkillNote)
}

func coordinatorIdentity(workdir string, lab config.Lab, tools []string, hasPlan bool) string {
	quota := func(n int) string {
		if n == 0 {
			return "not available in this lab"
		}
		return fmt.Sprintf("at most %d per trial", n)
	}
	planNote := "not this conversation"
	if hasPlan {
		planNote = "not this conversation or the plan below"
	}
	return fmt.Sprintf(`You coordinate an Executor in a research lab working on one task inside an isolated Linux container (working directory %s). You cannot run commands or change files yourself. Your tools are %s; you delegate the rest with dispatch:
- explore: investigates the container read-only and reports facts (%s);
- plan: designs an approach read-only (%s);
- code: the only agent that runs commands and writes files (%s).
%s
Every dispatch starts a fresh subagent that sees only the task text you give it, the executor skill and the list of task skills, %s, so make each task self-contained: the goal, the paths involved, and what earlier dispatches found. You get back only its final report.
The task's tests run after you submit, against the state the code subagent leaves behind. You may make at most %d model calls. When the work is done, or when you are told to conclude, call submit with a short summary.
%s`,
		workdir, toolList(tools), quota(lab.ExploreQuota), quota(lab.PlanQuota), quota(lab.CodeQuota),
		planSentence(hasPlan), planNote, lab.MaxModelCalls, sharedSkillNote)
}

func subagentIdentity(kind, workdir string, calls int, tools []string) string {
	var role string
	switch kind {
	case SubagentExplore:
		role = "You are the explore subagent of an Executor in a research lab. Investigate the container and report the facts your task asks for: which files exist, what they hold, how things are built and run. You cannot run commands or change anything."
	case SubagentPlan:
		role = "You are the plan subagent of an Executor in a research lab. Design a concrete approach to your task: the steps, the files to change and the commands to check the result. You cannot run commands or change anything."
	default:
		role = "You are the code subagent of an Executor in a research lab, the only agent allowed to change the container. Do the task you are given and check that the result works."
	}
	return fmt.Sprintf(`%s Your tools are %s.
The container's working directory is %s. Your task is the user message, written for you by the coordinator: you do not see the task's original instruction, the Planner's plan or the coordinator's conversation. Where the executor skill speaks of the instruction or the plan, read it as your task.
You may make at most %d model calls. When you are done, call submit: its summary is the only thing the coordinator gets back.
%s`, role, toolList(tools), workdir, calls, sharedSkillNote)
}
