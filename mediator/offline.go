package mediator

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mediated-coevo/harness/llm/prompt"
	"github.com/mediated-coevo/harness/skills"
)

// Helpers of the roles' offline answers. Offline answers exercise the
// machinery and are never evidence; they must stay the same for the same
// seed and inputs, so runs and tests can be repeated.

// hashOf is a deterministic 64-bit hash of a seed and strings; each part
// is length-prefixed so ("ab","c") and ("a","bc") differ.
func hashOf(seed int64, parts ...string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(strconv.FormatInt(seed, 10)))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	// A final mix spreads FNV's weak low bits, which modulo decisions use.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// truncate cuts s to at most n bytes without splitting a UTF-8 character,
// marking the cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return s[:runeStart(s, n)]
	}
	return s[:runeStart(s, n-3)] + "..."
}

// runeStart moves i back to the start of the character it falls in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

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
