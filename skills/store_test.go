package skills

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/internal/durable"

	"github.com/mediated-coevo/harness/conditions"
)

func TestStoreReadWrite(t *testing.T) {
	root := t.TempDir()
	validTree(t, root)
	st := &Store{Root: root}

	newContent := []byte("---\nname: planner\ndescription: Better plans.\n---\nNew body.\n")
	s, err := st.Write("planner", newContent)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if s.Hash != Hash(newContent) || s.Description != "Better plans." {
		t.Errorf("Write returned %+v", s)
	}
	got, err := st.Read("planner")
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if string(got.Content) != string(newContent) {
		t.Errorf("Read = %q, want %q", got.Content, newContent)
	}
	if files := listFiles(t, filepath.Join(root, "planner")); len(files) != 1 || files[0] != FileName {
		t.Errorf("planner dir holds %q, want only SKILL.md", files)
	}
}

func TestStoreWriteRefusesInvalidContent(t *testing.T) {
	tests := []struct {
		name    string
		role    conditions.Role
		content string
		want    string
	}{
		{"no front matter", "executor", "just text", "SKILL.md has no front matter"},
		{"no name", "executor", "---\ndescription: d\n---\n", "front matter has no name"},
		{"no description", "executor", "---\nname: executor\n---\n", "front matter has no description"},
		{"oversize", "executor", validSkill + strings.Repeat("x", MaxBytes), "the limit is 32768 bytes"},
		{"unknown role", "advisor", validSkill, `unknown skill role "advisor"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			validTree(t, root)
			calls := 0
			st := &Store{Root: root, writeFile: func(string, []byte, os.FileMode) error { calls++; return nil }}
			_, err := st.Write(tt.role, []byte(tt.content))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if calls != 0 {
				t.Errorf("writer called %d times for invalid content; validation must come first", calls)
			}
			if tt.role == "executor" {
				if !strings.Contains(err.Error(), st.Path("executor")) {
					t.Errorf("error %q does not name %s", err, st.Path("executor"))
				}
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Errorf("error %T is not a *ValidationError", err)
				}
			}
			old, _ := os.ReadFile(st.Path("executor"))
			if string(old) != validSkill {
				t.Errorf("executor skill changed to %q", old)
			}
		})
	}
}

// A writer that dies half way (a full disk, a crash before rename) must
// leave the previous SKILL.md whole and no temporary file behind.
func TestStoreWriteIsAtomic(t *testing.T) {
	root := t.TempDir()
	validTree(t, root)
	boom := errors.New("disk full")
	st := &Store{Root: root, writeFile: func(path string, data []byte, perm os.FileMode) error {
		return durable.WriteFileFunc(path, perm, func(w io.Writer) error {
			if _, err := w.Write(data[:len(data)/2]); err != nil {
				return err
			}
			return boom
		})
	}}
	newContent := []byte("---\nname: executor\ndescription: A new version.\n---\n" + strings.Repeat("line\n", 200))
	_, err := st.Write("executor", newContent)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the writer's error", err)
	}
	old, err := os.ReadFile(st.Path("executor"))
	if err != nil || string(old) != validSkill {
		t.Fatalf("old SKILL.md = %q (%v), want it intact", old, err)
	}
	if files := listFiles(t, filepath.Join(root, "executor")); len(files) != 1 || files[0] != FileName {
		t.Errorf("executor dir holds %q, want only SKILL.md (no temp files)", files)
	}
	if _, err := st.Read("executor"); err != nil {
		t.Errorf("skill unreadable after failed write: %v", err)
	}
}

func TestStoreHashes(t *testing.T) {
	root := t.TempDir()
	validTree(t, root)
	st := &Store{Root: root}
	got, err := st.Hashes()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range conditions.SkillRoles() {
		if got[r] != Hash([]byte(skillFor(string(r)))) {
			t.Errorf("hash of %s = %s", r, got[r])
		}
	}
	writeTree(t, root, map[string]string{"mediator/README.md": "extra"})
	if _, err := st.Hashes(); err == nil || !strings.Contains(err.Error(), "two Markdown entrypoints") {
		t.Errorf("Hashes on an invalid tree: err = %v", err)
	}
}

func TestStoreReadUnknownRole(t *testing.T) {
	st := &Store{Root: t.TempDir()}
	if _, err := st.Read("../etc"); err == nil || !strings.Contains(err.Error(), "unknown skill role") {
		t.Fatalf("err = %v", err)
	}
}
