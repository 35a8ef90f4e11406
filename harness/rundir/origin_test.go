package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A copy of a run directory whose original is still there is refused on
// resume, with the reason; a moved one (the original is gone) records its
// new place and goes on.
func TestCheckOriginTellsACopyFromAMove(t *testing.T) {
	cfg := rundirTestConfig(t)
	base := t.TempDir()
	d, err := Create(base, rundirTestSpec(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CheckOrigin(); err != nil {
		t.Fatalf("the original: %v", err)
	}

	copyPath := filepath.Join(t.TempDir(), d.ID)
	if err := os.CopyFS(copyPath, os.DirFS(d.Path)); err != nil {
		t.Fatal(err)
	}
	c, err := Open(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	err = c.CheckOrigin()
	if err == nil || !strings.Contains(err.Error(), "is a copy of "+d.Path) || !strings.Contains(err.Error(), "resume the original") {
		t.Fatalf("resuming a copy beside its original: %v; want a refusal naming the original", err)
	}

	if err := os.RemoveAll(d.Path); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckOrigin(); err != nil {
		t.Fatalf("resuming it once the original is gone: %v", err)
	}
	back, err := Open(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := originOf(copyPath); back.Manifest().Origin != want {
		t.Errorf("origin after the move = %q, want %q", back.Manifest().Origin, want)
	}
}
