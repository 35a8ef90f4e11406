package skills

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
)

func TestShippedDefaultsValidate(t *testing.T) {
	rep, err := ValidateDefaults()
	if err != nil {
		t.Fatalf("ValidateDefaults: %v\n%s", err, rep)
	}
	if !rep.OK() || len(rep.Roles) != 3 {
		t.Fatalf("report not OK:\n%s", rep)
	}
	for _, rr := range rep.Roles {
		if len(rr.Warnings) > 0 {
			t.Errorf("%s: unexpected warnings %q", rr.Role, rr.Warnings)
		}
		if rr.Name != string(rr.Role) {
			t.Errorf("%s: name %q should equal the role", rr.Role, rr.Name)
		}
		s, err := Parse(mustReadDefault(t, string(rr.Role)))
		if err != nil {
			t.Fatal(err)
		}
		// The defaults are meant to be real documents, not stubs.
		if n := strings.Count(s.Body, "\n"); n < 60 || n > 150 {
			t.Errorf("%s: body has %d lines, want 60-150", rr.Role, n)
		}
	}
}

func mustReadDefault(t *testing.T, role string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(role, FileName)) // tests run in the package directory
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestValidateRole(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string // relative to the role directory
		noDir    bool
		wantPath string // file or directory the error must start with, relative to the role dir
		want     string
	}{
		{name: "valid", files: map[string]string{"SKILL.md": validSkill, "references/notes.md": "more", "scripts/run.sh": "echo"}},
		{name: "leftover temp file is ignored", files: map[string]string{"SKILL.md": validSkill, ".SKILL.md.tmp-123": "half"}},
		{name: "missing directory", noDir: true, wantPath: ".", want: "skill directory does not exist"},
		{name: "no SKILL.md", files: map[string]string{"notes.txt": "x"}, wantPath: ".",
			want: "no SKILL.md: create " + "%DIR%/SKILL.md with front matter (name, description) and instructions"},
		{name: "only a README", files: map[string]string{"README.md": validSkill}, wantPath: ".",
			want: "no SKILL.md (found README.md): a role skill's instructions must be in a file named exactly SKILL.md"},
		{name: "lowercase skill.md", files: map[string]string{"skill.md": validSkill}, wantPath: "skill.md",
			want: "the entrypoint must be named exactly SKILL.md: rename skill.md to SKILL.md"},
		{name: "mixed case Skill.md", files: map[string]string{"Skill.md": validSkill}, wantPath: "Skill.md",
			want: "rename Skill.md to SKILL.md"},
		{name: "two markdown entrypoints", files: map[string]string{"SKILL.md": validSkill, "README.md": "# readme"}, wantPath: ".",
			want: "two Markdown entrypoints, SKILL.md and README.md: a role skill has exactly one; merge README.md into SKILL.md"},
		{name: "three markdown entrypoints", files: map[string]string{"SKILL.md": validSkill, "README.md": "r", "notes.markdown": "n"}, wantPath: ".",
			want: "three Markdown entrypoints, SKILL.md and README.md and notes.markdown"},
		{name: "missing front matter", files: map[string]string{"SKILL.md": "# Executor\n"}, wantPath: "SKILL.md",
			want: "SKILL.md has no front matter: it must start with a line '---'"},
		{name: "missing name", files: map[string]string{"SKILL.md": "---\ndescription: d\n---\n"}, wantPath: "SKILL.md",
			want: "front matter has no name"},
		{name: "missing description", files: map[string]string{"SKILL.md": "---\nname: executor\n---\n"}, wantPath: "SKILL.md",
			want: "front matter has no description"},
		{name: "oversize", files: map[string]string{"SKILL.md": validSkill + strings.Repeat("x", MaxBytes)}, wantPath: "SKILL.md",
			want: "SKILL.md is 32860 bytes; the limit is 32768 bytes (32 KiB)"},
		{name: "SKILL.md is a directory", files: map[string]string{"SKILL.md/x": "x"}, wantPath: "SKILL.md",
			want: "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "executor")
			if !tt.noDir {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				writeTree(t, dir, tt.files)
			}
			s, err := ValidateRole(dir)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("ValidateRole: %v", err)
				}
				if s.Name != "executor" {
					t.Errorf("name = %q", s.Name)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateRole succeeded, want error %q", tt.want)
			}
			want := strings.ReplaceAll(tt.want, "%DIR%", dir)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error = %q\nwant it to contain %q", err, want)
			}
			prefix := filepath.Join(dir, tt.wantPath) + ": "
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error = %q, want it to start with the path %q", err, prefix)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Errorf("error %T is not a *ValidationError", err)
			}
		})
	}
}

func TestValidateRoleRefusesSymlink(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "executor")
	writeTree(t, dir, map[string]string{"real.txt": validSkill})
	if err := os.Symlink("real.txt", filepath.Join(dir, FileName)); err != nil {
		t.Skipf("symlinks not supported: %v", err)
	}
	_, err := ValidateRole(dir)
	if err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Fatalf("err = %v, want symbolic link refusal", err)
	}
}

func TestValidateTree(t *testing.T) {
	root := t.TempDir()
	validTree(t, root)
	writeTree(t, root, map[string]string{
		"planner/SKILL.md":  "no front matter\n",
		"mediator/SKILL.md": "---\nname: other\ndescription: d\n---\nBody.\n",
	})
	rep, err := ValidateTree(root)
	if err == nil {
		t.Fatal("want an error for the planner")
	}
	plannerFile := filepath.Join(root, "planner", FileName)
	if !strings.Contains(err.Error(), plannerFile+": SKILL.md has no front matter") {
		t.Errorf("error %q does not name %s", err, plannerFile)
	}
	if rep.OK() || len(rep.Roles) != 3 {
		t.Fatalf("report = %+v", rep)
	}
	byRole := map[conditions.Role]RoleReport{}
	for _, rr := range rep.Roles {
		byRole[rr.Role] = rr
	}
	if !byRole["executor"].OK || byRole["executor"].Hash != Hash([]byte(skillFor("executor"))) {
		t.Errorf("executor = %+v", byRole["executor"])
	}
	if byRole["planner"].OK || !strings.Contains(byRole["planner"].Error, plannerFile) {
		t.Errorf("planner = %+v", byRole["planner"])
	}
	if m := byRole["mediator"]; !m.OK || len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], `name "other" differs from the directory name "mediator"`) {
		t.Errorf("mediator = %+v, want ok with a name warning", m)
	}
	out := rep.String()
	for _, want := range []string{"2 of 3 role skills valid", "FAIL  planner", "ok    executor", "warning: name \"other\""} {
		if !strings.Contains(out, want) {
			t.Errorf("String() = %q, want it to contain %q", out, want)
		}
	}
}

func TestValidateTreeMissingRoot(t *testing.T) {
	tests := []struct {
		name string
		root func(t *testing.T) string
		want string
	}{
		{"missing", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, "skills tree does not exist"},
		{"file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "f")
			writeTree(t, filepath.Dir(p), map[string]string{"f": "x"})
			return p
		}, "not a directory"},
		{"missing role", func(t *testing.T) string {
			root := t.TempDir()
			writeTree(t, root, map[string]string{"executor/SKILL.md": validSkill, "planner/SKILL.md": skillFor("planner")})
			return root
		}, "mediator: skill directory does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tt.root(t)
			_, err := ValidateTree(root)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), root) {
				t.Fatalf("err = %v, want it to name %s and contain %q", err, root, tt.want)
			}
		})
	}
}
