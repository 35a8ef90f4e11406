package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
)

// checkRole refuses anything but a skill role: the role names a directory,
// so this also keeps it from pointing elsewhere.
func checkRole(role conditions.Role) error {
	_, err := conditions.ParseSkillRole(string(role))
	return err
}

// RoleReport is the outcome of validating one role skill.
type RoleReport struct {
	Role        conditions.Role `json:"role"`
	Path        string          `json:"path"`
	OK          bool            `json:"ok"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Hash        string          `json:"hash,omitempty"`
	Bytes       int             `json:"bytes,omitempty"`
	Warnings    []string        `json:"warnings,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// Report is the outcome of validating a skills tree, one entry per role.
type Report struct {
	Root  string       `json:"root"`
	Roles []RoleReport `json:"roles"`
}

// OK reports whether every role skill is valid.
func (r Report) OK() bool {
	if len(r.Roles) == 0 {
		return false
	}
	for _, rr := range r.Roles {
		if !rr.OK {
			return false
		}
	}
	return true
}

// String renders the report for a terminal, one line per role plus warnings.
func (r Report) String() string {
	var b strings.Builder
	valid := 0
	for _, rr := range r.Roles {
		if rr.OK {
			valid++
		}
	}
	fmt.Fprintf(&b, "skills tree %s: %d of %d role skills valid\n", r.Root, valid, len(conditions.SkillRoles()))
	for _, rr := range r.Roles {
		if rr.OK {
			fmt.Fprintf(&b, "  ok    %-9s %s (name %q, %d bytes, %s)\n", rr.Role, rr.Path, rr.Name, rr.Bytes, shortHash(rr.Hash))
		} else {
			fmt.Fprintf(&b, "  FAIL  %-9s %s\n", rr.Role, rr.Error)
		}
		for _, w := range rr.Warnings {
			fmt.Fprintf(&b, "        warning: %s\n", w)
		}
	}
	return b.String()
}

func shortHash(h string) string {
	if len(h) > len("sha256:")+12 {
		return h[:len("sha256:")+12]
	}
	return h
}

// ValidateRole checks a role skill directory strictly: exactly one Markdown
// entrypoint at its top, named exactly SKILL.md, a regular file within
// MaxBytes, with valid front matter. Errors name the offending path.
func ValidateRole(dir string) (*Skill, error) {
	s, _, err := validateRoleDir(dir)
	return s, err
}

// ValidateTree validates root/executor, root/planner and root/mediator. The
// report is filled even when the error (all problems joined) is not nil.
func ValidateTree(root string) (Report, error) {
	rep := Report{Root: root}
	st, err := os.Stat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, &ValidationError{Path: root, Problem: "skills tree does not exist: it needs executor/, planner/ and mediator/ directories, each with a SKILL.md"}
	}
	if err != nil {
		return rep, fmt.Errorf("validate skills tree: %w", err)
	}
	if !st.IsDir() {
		return rep, &ValidationError{Path: root, Problem: "not a directory: a skills tree is a directory with executor/, planner/ and mediator/ inside"}
	}
	var errs []error
	for _, role := range conditions.SkillRoles() {
		dir := filepath.Join(root, string(role))
		s, warnings, err := validateRoleDir(dir)
		rep.Roles = append(rep.Roles, roleReport(role, filepath.Join(dir, FileName), s, warnings, err))
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

// ValidateDefaults validates the default skills embedded in the binary.
func ValidateDefaults() (Report, error) {
	rep := Report{Root: "(built-in defaults)"}
	var errs []error
	for _, role := range conditions.SkillRoles() {
		shown := path.Join("skills", string(role))
		s, warnings, err := validateRole(DefaultFS(), string(role), shown, string(role))
		rep.Roles = append(rep.Roles, roleReport(role, path.Join(shown, FileName), s, warnings, err))
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

func roleReport(role conditions.Role, file string, s *Skill, warnings []string, err error) RoleReport {
	rr := RoleReport{Role: role, Path: file, Warnings: warnings}
	if err != nil {
		rr.Error = err.Error()
		return rr
	}
	rr.OK = true
	rr.Name, rr.Description, rr.Hash, rr.Bytes = s.Name, s.Description, s.Hash, len(s.Content)
	return rr
}

func validateRoleDir(dir string) (*Skill, []string, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, &ValidationError{Path: dir, Problem: "skill directory does not exist: create it with a " + FileName + " inside"}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("validate skill %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, nil, &ValidationError{Path: dir, Problem: "not a directory: a skill is a directory holding " + FileName}
	}
	return validateRole(os.DirFS(dir), ".", dir, filepath.Base(dir))
}

// validateRole checks the skill directory dir of fsys; shown is how the
// directory is named in messages and role is the name the skill should carry.
func validateRole(fsys fs.FS, dir, shown, role string) (*Skill, []string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("validate skill %s: %w", shown, err)
	}
	join := func(name string) string { return filepath.Join(shown, name) }
	var entry fs.DirEntry
	var variants, others []string
	for _, e := range entries {
		n := e.Name()
		switch {
		case strings.HasPrefix(n, "."):
			// Hidden files (editor backups, interrupted atomic writes) are not entrypoints.
		case n == FileName:
			entry = e
		case strings.EqualFold(n, FileName):
			variants = append(variants, n)
		case isMarkdown(n) && !e.IsDir():
			others = append(others, n)
		}
	}
	switch {
	case entry == nil && len(variants) > 0:
		return nil, nil, &ValidationError{Path: join(variants[0]),
			Problem: fmt.Sprintf("the entrypoint must be named exactly %s: rename %s to %s", FileName, variants[0], FileName)}
	case entry == nil && len(others) > 0:
		return nil, nil, &ValidationError{Path: shown,
			Problem: fmt.Sprintf("no %s (found %s): a role skill's instructions must be in a file named exactly %s", FileName, strings.Join(others, ", "), FileName)}
	case entry == nil:
		return nil, nil, &ValidationError{Path: shown,
			Problem: fmt.Sprintf("no %s: create %s with front matter (name, description) and instructions", FileName, join(FileName))}
	}
	if others = append(variants, others...); len(others) > 0 {
		return nil, nil, &ValidationError{Path: shown, Problem: fmt.Sprintf(
			"%s Markdown entrypoints, %s and %s: a role skill has exactly one; merge %s into %s, or move supporting documents into a subdirectory such as references/",
			countWord(1+len(others)), FileName, strings.Join(others, " and "), strings.Join(others, " and "), FileName)}
	}
	file := join(FileName)
	switch t := entry.Type(); {
	case t&fs.ModeSymlink != 0:
		return nil, nil, &ValidationError{Path: file, Problem: "is a symbolic link: role skills must be regular files so runs can copy and snapshot them; replace the link with the file it points to"}
	case t.IsDir():
		return nil, nil, &ValidationError{Path: file, Problem: "is a directory: " + FileName + " must be a Markdown file"}
	case !t.IsRegular():
		return nil, nil, &ValidationError{Path: file, Problem: "is not a regular file"}
	}
	info, err := entry.Info()
	if err != nil {
		return nil, nil, fmt.Errorf("validate skill %s: %w", file, err)
	}
	if info.Size() > MaxBytes {
		// Checked before reading so a huge file is never loaded.
		return nil, nil, &ValidationError{Path: file, Problem: fmt.Sprintf(
			"SKILL.md is %d bytes; the limit is %d bytes (%d KiB): shorten it, or move reference material into files next to it",
			info.Size(), MaxBytes, MaxBytes>>10)}
	}
	content, err := fs.ReadFile(fsys, path.Join(dir, FileName))
	if err != nil {
		return nil, nil, fmt.Errorf("validate skill %s: %w", file, err)
	}
	s, err := Parse(content)
	if err != nil {
		return nil, nil, withPath(err, file)
	}
	var warnings []string
	if s.Name != role {
		warnings = append(warnings, fmt.Sprintf("name %q differs from the directory name %q", s.Name, role))
	}
	if strings.TrimSpace(s.Body) == "" {
		warnings = append(warnings, "no instructions after the front matter")
	}
	return s, warnings, nil
}

func isMarkdown(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".md" || ext == ".markdown"
}

func countWord(n int) string {
	switch n {
	case 2:
		return "two"
	case 3:
		return "three"
	default:
		return fmt.Sprint(n)
	}
}
