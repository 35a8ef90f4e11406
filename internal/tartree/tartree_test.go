package tartree

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "d"), 0o755)
	os.WriteFile(filepath.Join(dir, "d", "run.sh"), []byte("x"), 0o755)
	os.Symlink("d/run.sh", filepath.Join(dir, "ln"))
	var buf bytes.Buffer
	if err := Write(&buf, dir); err != nil {
		t.Fatal(err)
	}
	var got []string
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		got = append(got, h.Name+" "+string(h.Typeflag)+" "+h.Linkname)
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
		if h.Name == "d/run.sh" && h.Mode&0o111 == 0 {
			t.Errorf("executable bit lost: %o", h.Mode)
		}
	}
	want := []string{"d/ 5 ", "d/run.sh 0 ", "ln 2 d/run.sh"}
	if !slices.Equal(got, want) {
		t.Errorf("entries = %q, want %q", got, want)
	}
}
