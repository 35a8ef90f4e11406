package skills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
)

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	snaps := t.TempDir()
	s, err := Parse([]byte(validSkill))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Snapshot(snaps, "executor", s)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	want := filepath.Join(snaps, "executor", strings.TrimPrefix(s.Hash, "sha256:"), FileName)
	if p != want {
		t.Errorf("path = %s, want %s", p, want)
	}
	// Idempotent: a second snapshot of the same skill changes nothing.
	info1, _ := os.Stat(p)
	p2, err := Snapshot(snaps, "executor", s)
	if err != nil || p2 != p {
		t.Fatalf("second Snapshot = %s, %v", p2, err)
	}
	info2, _ := os.Stat(p)
	if !info1.ModTime().Equal(info2.ModTime()) {
		t.Errorf("second snapshot rewrote the file")
	}
	for _, h := range []string{s.Hash, strings.TrimPrefix(s.Hash, "sha256:")} {
		got, err := Restore(snaps, "executor", h)
		if err != nil {
			t.Fatalf("Restore(%s): %v", h, err)
		}
		if string(got) != validSkill {
			t.Errorf("Restore = %q", got)
		}
	}
}

func TestRestoreRefuses(t *testing.T) {
	s, _ := Parse([]byte(validSkill))
	tests := []struct {
		name   string
		hash   string
		role   conditions.Role
		tamper bool
		want   string
	}{
		{name: "tampered snapshot", hash: s.Hash, role: "executor", tamper: true, want: "is damaged or was edited: its content hashes to"},
		{name: "unknown hash", hash: Hash([]byte("other")), role: "executor", want: "no snapshot with hash"},
		{name: "malformed hash", hash: "sha256:../../etc", role: "executor", want: "invalid skill hash"},
		{name: "uppercase hash", hash: strings.ToUpper(strings.TrimPrefix(s.Hash, "sha256:")), role: "executor", want: "invalid skill hash"},
		{name: "unknown role", hash: s.Hash, role: "nobody", want: "unknown skill role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snaps := t.TempDir()
			p, err := Snapshot(snaps, "executor", s)
			if err != nil {
				t.Fatal(err)
			}
			if tt.tamper {
				if err := os.WriteFile(p, []byte(validSkill+"\nsneaky edit\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err = Restore(snaps, tt.role, tt.hash)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestSnapshotRepairsDamagedCopy(t *testing.T) {
	snaps := t.TempDir()
	s, _ := Parse([]byte(validSkill))
	p, _ := Snapshot(snaps, "executor", s)
	if err := os.WriteFile(p, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Snapshot(snaps, "executor", s); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(snaps, "executor", s.Hash); err != nil {
		t.Errorf("Restore after repair: %v", err)
	}
}

func TestSnapshotRefusesMismatchedHash(t *testing.T) {
	s, _ := Parse([]byte(validSkill))
	s.Hash = Hash([]byte("something else"))
	if _, err := Snapshot(t.TempDir(), "executor", s); err == nil || !strings.Contains(err.Error(), "does not match its content") {
		t.Fatalf("err = %v", err)
	}
}

func TestStoreRestoreFrom(t *testing.T) {
	root, snaps := t.TempDir(), t.TempDir()
	validTree(t, root)
	st := &Store{Root: root}
	old, err := st.Read("executor")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Snapshot(snaps, "executor", old); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Write("executor", []byte("---\nname: executor\ndescription: v2\n---\nv2\n")); err != nil {
		t.Fatal(err)
	}
	if err := st.RestoreFrom(snaps, "executor", old.Hash); err != nil {
		t.Fatalf("RestoreFrom: %v", err)
	}
	got, err := st.Read("executor")
	if err != nil || got.Hash != old.Hash {
		t.Fatalf("after restore: %+v, %v", got, err)
	}
}
