package skills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
)

const validSkill = "---\nname: executor\ndescription: Work inside a task container.\n---\n\n# Executor\n\nDo the work.\n"

// writeTree creates files (slash-separated paths relative to dir) with content.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func skillFor(role string) string {
	return strings.Replace(validSkill, "name: executor", "name: "+role, 1)
}

// validTree writes a complete valid skills tree under dir.
func validTree(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{}
	for _, r := range conditions.SkillRoles() {
		files[string(r)+"/SKILL.md"] = skillFor(string(r))
	}
	writeTree(t, dir, files)
}

// listFiles returns every file under dir, slash-separated and relative.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
