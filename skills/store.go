package skills

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/internal/durable"
)

// Store is a skills tree on disk: Root/<role>/SKILL.md for each role. A run
// works on its own copy of a tree, never on the repository's skills.
type Store struct {
	Root string

	// writeFile replaces a file atomically; nil means durable.WriteFile.
	// Tests swap it for a writer that fails half way.
	writeFile func(path string, data []byte, perm os.FileMode) error
}

// Path is the SKILL.md of role in the tree.
func (s *Store) Path(role conditions.Role) string {
	return filepath.Join(s.Root, string(role), FileName)
}

// Read reads and strictly validates the skill of role.
func (s *Store) Read(role conditions.Role) (*Skill, error) {
	if err := checkRole(role); err != nil {
		return nil, err
	}
	return ValidateRole(filepath.Join(s.Root, string(role)))
}

// Write validates content as a strict skill and only then replaces the
// role's SKILL.md atomically: a failure or crash at any point leaves the old
// file whole. Invalid content is refused with a *ValidationError and nothing
// is written.
func (s *Store) Write(role conditions.Role, content []byte) (*Skill, error) {
	if err := checkRole(role); err != nil {
		return nil, err
	}
	target := s.Path(role)
	sk, err := Parse(content)
	if err != nil {
		return nil, fmt.Errorf("write %s skill: %w", role, withPath(err, target))
	}
	write := s.writeFile
	if write == nil {
		write = durable.WriteFile
	}
	if err := write(target, content, 0o644); err != nil {
		return nil, fmt.Errorf("write %s skill: %w", role, err)
	}
	return sk, nil
}

// Hashes returns the content hash of every role skill, validating each.
func (s *Store) Hashes() (map[conditions.Role]string, error) {
	out := make(map[conditions.Role]string, len(conditions.SkillRoles()))
	for _, role := range conditions.SkillRoles() {
		sk, err := s.Read(role)
		if err != nil {
			return nil, fmt.Errorf("hash %s skill: %w", role, err)
		}
		out[role] = sk.Hash
	}
	return out, nil
}

// Validate validates the whole tree; see ValidateTree.
func (s *Store) Validate() (Report, error) {
	return ValidateTree(s.Root)
}

// RestoreFrom puts the snapshot of role with the given hash back as the
// active skill, verifying the snapshot and validating it like any write.
func (s *Store) RestoreFrom(snapshotsDir string, role conditions.Role, hash string) error {
	content, err := Restore(snapshotsDir, role, hash)
	if err != nil {
		return err
	}
	if _, err := s.Write(role, content); err != nil {
		return fmt.Errorf("restore %s skill %s: %w", role, hash, err)
	}
	return nil
}
