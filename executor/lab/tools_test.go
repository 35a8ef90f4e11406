package lab

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/executor"
)

func labTools(sb executor.Sandbox) *ContainerTools {
	return &ContainerTools{Sandbox: sb, Workdir: "/app", CommandTimeout: 60 * time.Second, OutputCap: 64}
}

func runLabTool(t *testing.T, tools *ContainerTools, name string, args any) (string, error) {
	t.Helper()
	spec, ok := tools.Spec(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return spec.Run(context.Background(), b)
}

func TestLabToolsRunCommand(t *testing.T) {
	tests := []struct {
		name        string
		args        map[string]any
		result      executor.ExecResult
		wantTimeout time.Duration
		want        []string
	}{
		{"default timeout", map[string]any{"command": "ok"}, executor.ExecResult{Stdout: "out"},
			60 * time.Second, []string{"exit code: 0\n", "--- stdout ---\nout\n", "--- stderr ---\n(empty)\n"}},
		{"shorter timeout kept", map[string]any{"command": "ok", "timeout_sec": 5}, executor.ExecResult{},
			5 * time.Second, []string{"exit code: 0"}},
		{"longer timeout capped", map[string]any{"command": "ok", "timeout_sec": 600}, executor.ExecResult{},
			60 * time.Second, []string{"timeout_sec 600 is above the maximum; 1m0s was used"}},
		{"failure", map[string]any{"command": "ok"}, executor.ExecResult{ExitCode: 2, Stderr: "boom\n"},
			60 * time.Second, []string{"exit code: 2", "--- stderr ---\nboom\n"}},
		{"timed out", map[string]any{"command": "ok"}, executor.ExecResult{ExitCode: 124, TimedOut: true},
			60 * time.Second, []string{"[timed out after 1m0s; the command was killed]"}},
		{"truncated", map[string]any{"command": "ok"}, executor.ExecResult{Stdout: strings.Repeat("x", 64), Truncated: true},
			60 * time.Second, []string{"[output truncated: each stream is cut at 64 bytes]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newLabFakeSandbox(nil)
			sb.commands["ok"] = tc.result
			tools := labTools(sb)
			tools.User = "agent"
			out, err := runLabTool(t, tools, ToolRunCommand, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("result %q lacks %q", out, w)
				}
			}
			req := sb.execs[0]
			if strings.Join(req.Cmd, " ") != "bash -lc ok" || req.Dir != "/app" || req.Timeout != tc.wantTimeout ||
				req.OutputCap != 64 || req.User != "agent" {
				t.Errorf("exec request = %+v", req)
			}
		})
	}
	t.Run("empty command", func(t *testing.T) {
		if _, err := runLabTool(t, labTools(newLabFakeSandbox(nil)), ToolRunCommand, map[string]any{"command": " "}); err == nil {
			t.Error("an empty command was run")
		}
	})
}

func TestLabToolsFiles(t *testing.T) {
	sb := newLabFakeSandbox(map[string]string{
		"/app/short.txt":      "hi\n",
		"/app/long.txt":       strings.Repeat("é", 40), // 80 bytes, over the 64-byte cap
		"/app/src/main.c":     "int main;",
		"/app/src/lib/util.c": "deep",
	})
	tools := labTools(sb)
	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		want    []string
		notWant []string
		wantErr string
	}{
		{"relative read", ToolReadFile, map[string]any{"path": "short.txt"}, []string{"hi\n"}, nil, ""},
		{"capped read", ToolReadFile, map[string]any{"path": "/app/long.txt"},
			[]string{strings.Repeat("é", 32), "[truncated: the file is longer than 64 bytes"}, nil, ""},
		{"missing file", ToolReadFile, map[string]any{"path": "/app/none"}, nil, nil, "no such file"},
		{"write", ToolWriteFile, map[string]any{"path": "out/a.txt", "content": "abc"},
			[]string{"wrote 3 bytes to /app/out/a.txt"}, nil, ""},
		{"write without content", ToolWriteFile, map[string]any{"path": "b.txt"}, nil, nil, "content is missing"},
		{"list two levels", ToolListDir, map[string]any{"path": ""},
			[]string{"/app (two levels):\n", "short.txt  (3 bytes)\n", "src/\n", "src/lib/\n", "src/main.c  (9 bytes)\n"},
			[]string{"util.c"}, ""},
		{"list missing", ToolListDir, map[string]any{"path": "/nowhere"}, nil, nil, "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools := tools
			if tc.tool == ToolListDir {
				// A listing is capped like any output; give it room here.
				wide := *tools
				wide.OutputCap = 1 << 10
				tools = &wide
			}
			out, err := runLabTool(t, tools, tc.tool, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("result %q lacks %q", out, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("result %q has %q", out, w)
				}
			}
		})
	}
	if got, _ := sb.file("/app/out/a.txt"); got != "abc" {
		t.Errorf("written file = %q", got)
	}
}

func TestLabToolsListingFallback(t *testing.T) {
	ls := "total 8\ndrwxr-xr-x 2 root root 4096 Jan 1 00:00 .\n-rw-r--r-- 1 root root 3 Jan 1 00:00 a.txt\n"
	out := formatListing("/x", ls, false, 1<<10)
	if !strings.Contains(out, "a.txt") || !strings.HasPrefix(out, "/x (two levels):\n") {
		t.Errorf("ls output was not passed through: %q", out)
	}
	if out := formatListing("/x", "f\t1\t"+strings.Repeat("n", 100)+"\n", false, 40); !strings.HasSuffix(out, "[listing truncated]\n") || len(out) > 70 {
		t.Errorf("listing over the output cap: %q", out)
	}
	var many strings.Builder
	for i := range maxListEntries + 5 {
		many.WriteString("f\t1\tfile" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + "\n")
	}
	if out := formatListing("/x", many.String(), true, 1<<20); !strings.Contains(out, "[... 5 more entries not shown") ||
		!strings.Contains(out, "[listing cut") {
		t.Errorf("long listing not capped: %.200q", out[len(out)-200:])
	}
}

func TestLabDiscoverEnvironment(t *testing.T) {
	files := map[string]string{
		"/root/.claude/skills/pdf/SKILL.md":  "---\nname: pdf\ndescription: Read   PDF\n  files.\n---\n\nbody\n",
		"/root/.claude/skills/bare/SKILL.md": "# Bare skill\n\nNo front matter here.\n",
		"/skills/pdf/SKILL.md":               "---\nname: pdf\ndescription: duplicate\n---\n\nbody\n",
		"/skills/nameless/skill.md":          "---\ndescription: only a description\n---\n\nbody\n",
	}
	tests := []struct {
		name        string
		taskWorkdir string
		pwd         string
		noApp       bool
		want        string
	}{
		{"task workdir wins", "/work", "/app", false, "/work"},
		{"image workdir", "", "/srv/project", false, "/srv/project"},
		{"root falls back to /app", "", "/", false, "/app"},
		{"root without /app", "", "/", true, "/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb := newLabFakeSandbox(files)
			sb.pwd, sb.noApp = tc.pwd, tc.noApp
			env, err := DiscoverEnvironment(context.Background(), sb, tc.taskWorkdir, "", []string{"/root/.claude/skills", "/skills", "/absent"})
			if err != nil {
				t.Fatal(err)
			}
			if env.Workdir != tc.want {
				t.Errorf("workdir = %q, want %q", env.Workdir, tc.want)
			}
			var names []string
			for _, s := range env.Skills {
				names = append(names, s.Name+"="+s.Description)
			}
			want := "Bare skill=No front matter here.|pdf=Read PDF files.|nameless=only a description"
			if strings.Join(names, "|") != want {
				t.Errorf("skills = %q, want %q", strings.Join(names, "|"), want)
			}
			if !strings.Contains(strings.Join(env.Warnings, "\n"), `name "pdf" is already taken`) {
				t.Errorf("warnings %q lack the duplicate", env.Warnings)
			}
		})
	}
}

func TestLabToolsReadSkill(t *testing.T) {
	sb := newLabFakeSandbox(map[string]string{"/skills/pdf/SKILL.md": "---\nname: pdf\ndescription: d\n---\n\nUse pdftotext.\n"})
	tools := labTools(sb)
	tools.OutputCap = 1 << 10
	tools.Skills = []TaskSkill{{Name: "pdf", Description: "d", Path: "/skills/pdf/SKILL.md"}}
	out, err := runLabTool(t, tools, ToolReadSkill, map[string]string{"name": "PDF"})
	if err != nil || !strings.Contains(out, "Use pdftotext.") || !strings.Contains(out, "skill directory: /skills/pdf") {
		t.Errorf("read_skill = %q, %v", out, err)
	}
	if _, err := runLabTool(t, tools, ToolReadSkill, map[string]string{"name": "docx"}); err == nil || !strings.Contains(err.Error(), "available: pdf") {
		t.Errorf("unknown skill: err = %v, want the available names", err)
	}
	if idx := SkillIndex(tools.Skills); !strings.Contains(idx, "- pdf: d\n") {
		t.Errorf("index = %q", idx)
	}
	if SkillIndex(nil) != "" {
		t.Error("an empty index is not empty")
	}
}

func TestLabSubmittedSummary(t *testing.T) {
	tests := map[string]string{
		`{"summary":"did it"}`: "did it",
		`{"summary":""}`:       "",
		"plain text":           "plain text",
		`{"other":1}`:          `{"other":1}`,
	}
	for in, want := range tests {
		if got := SubmittedSummary(in); got != want {
			t.Errorf("SubmittedSummary(%q) = %q, want %q", in, got, want)
		}
	}
}
