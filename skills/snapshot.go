package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/internal/durable"
)

// Snapshot keeps a copy of s at snapshotsDir/<role>/<hex digest>/SKILL.md and
// returns that path. It is idempotent: an intact existing snapshot is left
// alone, and a damaged one is rewritten from s.
func Snapshot(snapshotsDir string, role conditions.Role, s *Skill) (string, error) {
	if err := checkRole(role); err != nil {
		return "", err
	}
	if s == nil || len(s.Content) == 0 {
		return "", fmt.Errorf("snapshot %s skill: the skill has no content", role)
	}
	h := Hash(s.Content)
	if s.Hash != "" && s.Hash != h {
		return "", fmt.Errorf("snapshot %s skill: its recorded hash %s does not match its content (%s)", role, s.Hash, h)
	}
	p := snapshotPath(snapshotsDir, role, strings.TrimPrefix(h, "sha256:"))
	if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, s.Content) {
		return p, nil
	}
	if err := durable.WriteFile(p, s.Content, 0o644); err != nil {
		return "", fmt.Errorf("snapshot %s skill: %w", role, err)
	}
	return p, nil
}

// Restore reads the snapshot of role with the given hash ("sha256:<hex>" or
// bare hex) and verifies that its content still has that hash.
func Restore(snapshotsDir string, role conditions.Role, hash string) ([]byte, error) {
	if err := checkRole(role); err != nil {
		return nil, err
	}
	digest, err := parseHash(hash)
	if err != nil {
		return nil, err
	}
	p := snapshotPath(snapshotsDir, role, digest)
	content, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("restore %s skill: no snapshot with hash sha256:%s in %s", role, digest, snapshotsDir)
	}
	if err != nil {
		return nil, fmt.Errorf("restore %s skill: %w", role, err)
	}
	if got := Hash(content); got != "sha256:"+digest {
		return nil, fmt.Errorf("restore %s skill: snapshot %s is damaged or was edited: its content hashes to %s, not sha256:%s", role, p, got, digest)
	}
	return content, nil
}

func snapshotPath(snapshotsDir string, role conditions.Role, digest string) string {
	return filepath.Join(snapshotsDir, string(role), digest, FileName)
}

// parseHash returns the hex digest of a skill hash. Checking the form also
// keeps a hash from naming a path outside the snapshots directory.
func parseHash(hash string) (string, error) {
	digest := strings.TrimPrefix(hash, "sha256:")
	ok := len(digest) == 64
	for _, c := range digest {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			ok = false
		}
	}
	if !ok {
		return "", fmt.Errorf("invalid skill hash %q: want sha256: followed by 64 lowercase hex digits", hash)
	}
	return digest, nil
}
