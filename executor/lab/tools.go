package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/skills"
)

// Names of the container tools. The offline provider and the docs rely on
// them, so they never change.
const (
	ToolRunCommand = "run_command"
	ToolReadFile   = "read_file"
	ToolWriteFile  = "write_file"
	ToolListDir    = "list_dir"
	ToolReadSkill  = "read_skill"
	ToolSubmit     = "submit"
	ToolDispatch   = "dispatch"
)

// ReadOnlyTools are the tools that cannot change the sandbox.
var ReadOnlyTools = []string{ToolReadFile, ToolListDir, ToolReadSkill}

// Defaults for tool limits a lab leaves at zero.
const (
	DefaultCommandTimeout = 120 * time.Second
	DefaultToolOutputCap  = 16 << 10
	// DefaultWorkdir is the working directory assumed when neither the task
	// nor the image names one.
	DefaultWorkdir = "/app"
)

const (
	// maxListEntries caps the lines of one list_dir answer.
	maxListEntries = 400
	// maxSkillDescription caps one description in the task-skill index.
	maxSkillDescription = 300
	// maxTaskSkills caps how many task skills are indexed.
	maxTaskSkills = 64
	// toolHelperTimeout bounds the small helper commands behind list_dir
	// and skill discovery.
	toolHelperTimeout = 30 * time.Second
)

// TaskSkill is one skill a task baked into its image: the index entry an
// agent sees in its prompt, and where read_skill finds the body.
type TaskSkill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Path is the SKILL.md inside the sandbox.
	Path string `json:"path"`
}

// ContainerTools are the tools an Executor agent uses on its sandbox. Build
// one per trial; it is not safe for concurrent use.
type ContainerTools struct {
	Sandbox executor.Sandbox
	// Workdir is where commands run and relative paths start.
	Workdir string
	// User runs commands and reads and writes files; empty means the
	// image's default user.
	User string
	// CommandTimeout is run_command's default timeout and its cap.
	CommandTimeout time.Duration
	// OutputCap caps, in bytes, each stream of a command and every file or
	// listing returned to the agent.
	OutputCap int
	// Skills is the task-skill index (see DiscoverSkills).
	Skills []TaskSkill
}

func (t *ContainerTools) timeout() time.Duration {
	if t.CommandTimeout <= 0 {
		return DefaultCommandTimeout
	}
	return t.CommandTimeout
}

func (t *ContainerTools) outputCap() int {
	if t.OutputCap <= 0 {
		return DefaultToolOutputCap
	}
	return t.OutputCap
}

func (t *ContainerTools) workdir() string {
	if t.Workdir == "" {
		return DefaultWorkdir
	}
	return t.Workdir
}

// resolve makes p absolute, relative paths starting at the workdir.
func (t *ContainerTools) resolve(p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(t.workdir(), p)
}

// Spec returns the tool with the given name, or false for an unknown one.
// submit and dispatch are not container tools: see SubmitTool and the
// lab agent.
func (t *ContainerTools) Spec(name string) (llm.ToolSpec, bool) {
	switch name {
	case ToolRunCommand:
		return llm.ToolSpec{Tool: runCommandTool(t.timeout()), Run: t.runCommand}, true
	case ToolReadFile:
		return llm.ToolSpec{Tool: readFileTool(), Run: t.readFile}, true
	case ToolWriteFile:
		return llm.ToolSpec{Tool: writeFileTool(), Run: t.writeFile}, true
	case ToolListDir:
		return llm.ToolSpec{Tool: listDirTool(), Run: t.listDir}, true
	case ToolReadSkill:
		return llm.ToolSpec{Tool: readSkillTool(), Run: t.readSkill}, true
	}
	return llm.ToolSpec{}, false
}

// Specs returns the named tools in order; unknown names are an error.
func (t *ContainerTools) Specs(names ...string) ([]llm.ToolSpec, error) {
	out := make([]llm.ToolSpec, 0, len(names))
	for _, n := range names {
		s, ok := t.Spec(n)
		if !ok {
			return nil, fmt.Errorf("no container tool named %q", n)
		}
		out = append(out, s)
	}
	return out, nil
}

// SubmitTool is the terminal tool; the loop ends the run when it is called.
// what says what the summary should hold.
func SubmitTool(what string) llm.ToolSpec {
	return llm.ToolSpec{Tool: llm.Tool{
		Name:        ToolSubmit,
		Description: "Finish your work. Call it once, when you are done; nothing runs after it.",
		Parameters: objectParams(map[string]any{
			"summary": stringParam(what),
		}, "summary"),
	}}
}

// SubmittedSummary extracts the summary from submit's arguments (the
// loop's Final when it submitted); text that is not such JSON is returned
// as it is.
func SubmittedSummary(final string) string {
	var a struct {
		Summary *string `json:"summary"`
	}
	if err := json.Unmarshal([]byte(final), &a); err == nil && a.Summary != nil {
		return *a.Summary
	}
	return final
}

func objectParams(props map[string]any, required ...string) map[string]any {
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

func stringParam(desc string) map[string]any {
	return map[string]any{"type": "string", "description": desc}
}

func runCommandTool(timeout time.Duration) llm.Tool {
	secs := int(timeout.Round(time.Second) / time.Second)
	return llm.Tool{
		Name: ToolRunCommand,
		Description: "Run a bash command (bash -lc) in the working directory of the container and return its exit code, " +
			"standard output and standard error. Output beyond the cap is cut. Each call starts a fresh shell: " +
			"cd and exported variables do not carry over.",
		Parameters: objectParams(map[string]any{
			"command": stringParam("the bash script to run"),
			"timeout_sec": map[string]any{
				"type":        "integer",
				"description": fmt.Sprintf("seconds before the command is killed; default and maximum %d", secs),
			},
		}, "command"),
	}
}

func readFileTool() llm.Tool {
	return llm.Tool{
		Name:        ToolReadFile,
		Description: "Read a text file in the container. Long files are cut at the output cap.",
		Parameters: objectParams(map[string]any{
			"path": stringParam("the file's path; relative paths start at the working directory"),
		}, "path"),
	}
}

func writeFileTool() llm.Tool {
	return llm.Tool{
		Name:        ToolWriteFile,
		Description: "Create or replace a file in the container with the given content, creating parent directories.",
		Parameters: objectParams(map[string]any{
			"path":    stringParam("the file's path; relative paths start at the working directory"),
			"content": stringParam("the complete new content of the file"),
		}, "path", "content"),
	}
}

func listDirTool() llm.Tool {
	return llm.Tool{
		Name:        ToolListDir,
		Description: "List a directory in the container, two levels deep: directories end with /, files show their size.",
		Parameters: objectParams(map[string]any{
			"path": stringParam("the directory; relative paths start at the working directory"),
		}, "path"),
	}
}

func readSkillTool() llm.Tool {
	return llm.Tool{
		Name:        ToolReadSkill,
		Description: "Read the full text of one of the task skills listed in your instructions.",
		Parameters: objectParams(map[string]any{
			"name": stringParam("the skill's name as listed"),
		}, "name"),
	}
}

// decodeArgs decodes a tool's arguments, naming the tool in the error.
func decodeArgs(tool string, args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("bad arguments for %s: %v", tool, err)
	}
	return nil
}

func (t *ContainerTools) runCommand(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Command    string   `json:"command"`
		TimeoutSec *float64 `json:"timeout_sec"`
	}
	if err := decodeArgs(ToolRunCommand, args, &a); err != nil {
		return "", err
	}
	if strings.TrimSpace(a.Command) == "" {
		return "", errors.New("command is empty; pass the bash script to run in \"command\"")
	}
	limit := t.timeout()
	var note string
	if a.TimeoutSec != nil && *a.TimeoutSec > 0 {
		asked := time.Duration(*a.TimeoutSec * float64(time.Second))
		if asked < limit {
			limit = max(asked, time.Second)
		} else if asked > limit {
			note = fmt.Sprintf("[timeout_sec %g is above the maximum; %s was used]\n", *a.TimeoutSec, limit)
		}
	}
	res, err := t.Sandbox.Exec(ctx, executor.ExecRequest{
		Cmd:       []string{"bash", "-lc", a.Command},
		Dir:       t.workdir(),
		User:      t.User,
		Timeout:   limit,
		OutputCap: t.outputCap(),
	})
	if err != nil {
		return "", fmt.Errorf("run command: %w", err)
	}
	return note + FormatExecResult(res, limit, t.outputCap()), nil
}

// FormatExecResult renders a command's outcome for the model: exit code,
// both streams, and markers for a timeout or cut output.
func FormatExecResult(res executor.ExecResult, timeout time.Duration, outputCap int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d\n", res.ExitCode)
	if res.TimedOut {
		fmt.Fprintf(&b, "[timed out after %s; the command was killed]\n", timeout)
	}
	if res.Truncated {
		fmt.Fprintf(&b, "[output truncated: each stream is cut at %d bytes]\n", outputCap)
	}
	for _, s := range []struct{ name, text string }{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		fmt.Fprintf(&b, "--- %s ---\n", s.name)
		if s.text == "" {
			b.WriteString("(empty)\n")
			continue
		}
		b.WriteString(s.text)
		if !strings.HasSuffix(s.text, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (t *ContainerTools) readFile(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := decodeArgs(ToolReadFile, args, &a); err != nil {
		return "", err
	}
	if strings.TrimSpace(a.Path) == "" {
		return "", errors.New("path is empty; pass the file to read in \"path\"")
	}
	p := t.resolve(a.Path)
	limit := t.outputCap()
	// One byte more than the cap tells whether the file goes on.
	data, err := t.Sandbox.ReadFile(ctx, t.User, p, limit+1)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	if len(data) > limit {
		cut := cutUTF8(string(data), limit)
		return cut + fmt.Sprintf("\n[truncated: the file is longer than %d bytes; use run_command with sed or tail to read further]\n", limit), nil
	}
	if len(data) == 0 {
		return "(the file is empty)", nil
	}
	return string(data), nil
}

func (t *ContainerTools) writeFile(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
	}
	if err := decodeArgs(ToolWriteFile, args, &a); err != nil {
		return "", err
	}
	if strings.TrimSpace(a.Path) == "" {
		return "", errors.New("path is empty; pass the file to write in \"path\"")
	}
	if a.Content == nil {
		return "", errors.New("content is missing; pass the file's complete text in \"content\"")
	}
	p := t.resolve(a.Path)
	if err := t.Sandbox.WriteFile(ctx, t.User, p, []byte(*a.Content), 0); err != nil {
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(*a.Content), p), nil
}

// listScript prints "type<TAB>size<TAB>relative path" for entries up to
// two levels below $1, or falls back to ls where find lacks -printf.
const listScript = `p=$1
if [ ! -e "$p" ]; then echo "no such file or directory: $p" >&2; exit 2; fi
if [ ! -d "$p" ]; then echo "not a directory: $p (use read_file)" >&2; exit 2; fi
if find "$p" -maxdepth 0 -printf '' 2>/dev/null; then
  find "$p" -mindepth 1 -maxdepth 2 -printf '%y\t%s\t%P\n' 2>/dev/null
  exit 0
fi
ls -la -- "$p"`

func (t *ContainerTools) listDir(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := decodeArgs(ToolListDir, args, &a); err != nil {
		return "", err
	}
	p := t.workdir()
	if strings.TrimSpace(a.Path) != "" {
		p = t.resolve(a.Path)
	}
	res, err := t.Sandbox.Exec(ctx, executor.ExecRequest{
		Cmd:       []string{"sh", "-c", listScript, "harness-list", p},
		User:      t.User,
		Timeout:   toolHelperTimeout,
		OutputCap: 4 * t.outputCap(),
	})
	if err != nil {
		return "", fmt.Errorf("list %s: %w", p, err)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(res.Stderr)
		if msg == "" {
			msg = "exit code " + strconv.Itoa(res.ExitCode)
		}
		return "", fmt.Errorf("list %s: %s", p, msg)
	}
	return formatListing(p, res.Stdout, res.Truncated, t.outputCap()), nil
}

// formatListing turns the helper's lines into one entry per line, sorted.
// Lines that are not in the helper's format (the ls fallback) pass as they are.
func formatListing(dir, out string, truncated bool, outputCap int) string {
	var entries []string
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			continue
		}
		kind, rest, ok1 := strings.Cut(line, "\t")
		size, name, ok2 := strings.Cut(rest, "\t")
		if !ok1 || !ok2 || len(kind) != 1 {
			entries = append(entries, line)
			continue
		}
		switch kind {
		case "d":
			entries = append(entries, name+"/")
		case "f":
			entries = append(entries, name+"  ("+size+" bytes)")
		case "l":
			entries = append(entries, name+"@")
		default:
			entries = append(entries, name)
		}
	}
	slices.Sort(entries)
	var b strings.Builder
	fmt.Fprintf(&b, "%s (two levels):\n", dir)
	if len(entries) == 0 {
		b.WriteString("(empty)\n")
	}
	for i, e := range entries {
		if i == maxListEntries {
			fmt.Fprintf(&b, "[... %d more entries not shown; list a subdirectory]\n", len(entries)-i)
			break
		}
		b.WriteString(e)
		b.WriteByte('\n')
	}
	if truncated {
		b.WriteString("[listing cut: the directory is too large; list a subdirectory]\n")
	}
	s := b.String()
	if len(s) > outputCap {
		s = cutUTF8(s, outputCap) + "\n[listing truncated]\n"
	}
	return s
}

func (t *ContainerTools) readSkill(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := decodeArgs(ToolReadSkill, args, &a); err != nil {
		return "", err
	}
	want := strings.TrimSpace(a.Name)
	var found *TaskSkill
	for i := range t.Skills {
		if strings.EqualFold(t.Skills[i].Name, want) {
			found = &t.Skills[i]
			break
		}
	}
	if found == nil {
		if len(t.Skills) == 0 {
			return "", fmt.Errorf("no task skill named %q: this task has no skills", want)
		}
		names := make([]string, len(t.Skills))
		for i, s := range t.Skills {
			names[i] = s.Name
		}
		return "", fmt.Errorf("no task skill named %q; available: %s", want, strings.Join(names, ", "))
	}
	limit := t.outputCap()
	data, err := t.Sandbox.ReadFile(ctx, t.User, found.Path, limit+1)
	if err != nil {
		return "", fmt.Errorf("read skill %s: %w", found.Name, err)
	}
	text := string(data)
	if len(data) > limit {
		text = cutUTF8(text, limit) + "\n[truncated]"
	}
	return fmt.Sprintf("%s\n\n[skill directory: %s; its other files can be read with read_file]\n", text, path.Dir(found.Path)), nil
}

// discoverScript prints the working directory the image starts in, then
// every */SKILL.md (any case) under the directories given as arguments.
const discoverScript = `echo "pwd	$(pwd)"
if [ -d /app ]; then echo "app	yes"; fi
for d in "$@"; do
  [ -d "$d" ] || continue
  for f in "$d"/*/SKILL.md "$d"/*/skill.md "$d"/*/Skill.md; do
    [ -f "$f" ] && echo "skill	$f"
  done
done
exit 0`

// Environment is what DiscoverEnvironment learned about a fresh sandbox.
type Environment struct {
	// Workdir is the directory the agent works in.
	Workdir string
	Skills  []TaskSkill
	// Warnings are lenient-parse findings and unreadable skills.
	Warnings []string
}

// DiscoverEnvironment finds the agent's working directory (the task's
// workdir when set, else the image's, else /app) and indexes the task skills
// in skillDirs, parsing each SKILL.md leniently. Skills are read as
// agentUser ("" for the image's default), so a skill the agent cannot read
// is not offered to it. Only a failing sandbox is an error; unreadable
// skills become warnings.
func DiscoverEnvironment(ctx context.Context, sb executor.Sandbox, taskWorkdir, agentUser string, skillDirs []string) (Environment, error) {
	env := Environment{Workdir: taskWorkdir}
	res, err := sb.Exec(ctx, executor.ExecRequest{
		Cmd:       append([]string{"sh", "-c", discoverScript, "harness-discover"}, skillDirs...),
		Timeout:   toolHelperTimeout,
		OutputCap: 1 << 20,
	})
	if err != nil {
		if env.Workdir == "" {
			env.Workdir = DefaultWorkdir
		}
		return env, fmt.Errorf("look around the sandbox: %w", err)
	}
	imageDir, hasApp := "", false
	var files []string
	for line := range strings.Lines(res.Stdout) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), "\t")
		if !ok {
			continue
		}
		switch k {
		case "pwd":
			imageDir = v
		case "app":
			hasApp = true
		case "skill":
			files = append(files, v)
		}
	}
	if env.Workdir == "" {
		switch {
		case imageDir != "" && imageDir != "/":
			env.Workdir = imageDir
		case hasApp || imageDir == "":
			env.Workdir = DefaultWorkdir
		default:
			env.Workdir = "/"
		}
	}
	seen := map[string]bool{}
	for _, f := range files {
		if len(env.Skills) == maxTaskSkills {
			env.Warnings = append(env.Warnings, fmt.Sprintf("more than %d task skills; the rest are not indexed", maxTaskSkills))
			break
		}
		// Read as the agent: a skill it could not read_skill is not listed.
		data, err := sb.ReadFile(ctx, agentUser, f, skills.MaxBytes)
		if err != nil {
			if ctx.Err() != nil {
				return env, ctx.Err()
			}
			env.Warnings = append(env.Warnings, fmt.Sprintf("task skill %s: %v", f, err))
			continue
		}
		s, warns := skills.ParseLenient(data)
		for _, w := range warns {
			env.Warnings = append(env.Warnings, fmt.Sprintf("task skill %s: %s", f, w))
		}
		name := strings.TrimSpace(s.Name)
		if name == "" {
			name = path.Base(path.Dir(f))
		}
		key := strings.ToLower(name)
		if seen[key] {
			env.Warnings = append(env.Warnings, fmt.Sprintf("task skill %s: name %q is already taken by an earlier skill; skipped", f, name))
			continue
		}
		seen[key] = true
		env.Skills = append(env.Skills, TaskSkill{
			Name:        name,
			Description: cutUTF8(oneLineText(s.Description), maxSkillDescription),
			Path:        f,
		})
	}
	return env, nil
}

// SkillIndex renders the task-skill index for a system prompt: names and
// descriptions only; bodies are read on demand. Empty when there are none.
func SkillIndex(list []TaskSkill) string {
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("The task environment provides these skills. Read one with read_skill when it fits what you are doing:\n")
	for _, s := range list {
		d := s.Description
		if d == "" {
			d = "(no description)"
		}
		fmt.Fprintf(&b, "- %s: %s\n", s.Name, d)
	}
	return b.String()
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// cutUTF8 returns at most n bytes of s without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
