package mediator

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mediated-coevo/harness/llm/prompt"
	"github.com/mediated-coevo/harness/skills"
)

// Helpers of the roles' offline answers. Offline answers exercise the
// machinery and are never evidence; they must stay the same for the same
// seed and inputs, so runs and tests can be repeated.

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			return strings.TrimLeft(t, "# ")
		}
	}
	return ""
}

// digest is a deterministic, bounded summary: the text itself when short,
// else its beginning and end around a note of what was cut.
func digest(text string) string {
	t := prompt.OneLine(text)
	if t == "" {
		return "Nothing to summarise."
	}
	if len(t) <= 600 {
		return t
	}
	head := t[:runeStart(t, 400)]
	tail := t[runeStart(t, len(t)-150):]
	return fmt.Sprintf("%s [... %d characters omitted ...] %s", head, len(t)-len(head)-len(tail), tail)
}

// checkSkillText is a light check that text looks like a SKILL.md: it
// parses as a skill and has a body.
func checkSkillText(text string) error {
	s, err := skills.Parse([]byte(text))
	if err != nil {
		return err
	}
	if strings.TrimSpace(s.Body) == "" {
		return errors.New("SKILL.md has an empty body")
	}
	return nil
}

// ensureFrontMatter returns skill unchanged when it is a SKILL.md, else
// with a minimal front matter naming it name (executor when empty), so an
// offline draft or rewrite is always a SKILL.md.
func ensureFrontMatter(skill, name string) string {
	if checkSkillText(skill) == nil {
		return skill
	}
	if name == "" {
		name = "executor"
	}
	body := strings.TrimSpace(skill)
	if body == "" {
		body = "# " + name + "\n\nGuidance for the " + name + "."
	}
	return "---\nname: " + name + "\ndescription: Guidance for the " + name + ", kept by the harness.\n---\n\n" + body + "\n"
}

// replaceSection replaces the Markdown section that starts with heading (up
// to the next heading of the same level) with section, or appends section.
func replaceSection(doc, heading, section string) string {
	lines := strings.Split(doc, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == heading {
			start = i
			break
		}
	}
	if start < 0 {
		return strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "## ") || strings.HasPrefix(lines[i], "# ") {
			end = i
			break
		}
	}
	before := strings.TrimRight(strings.Join(lines[:start], "\n"), "\n")
	after := strings.Join(lines[end:], "\n")
	out := before + "\n\n" + section
	if strings.TrimSpace(after) != "" {
		out += "\n" + after
	}
	return out
}

// runeStart moves i back to the start of the character it falls in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}
