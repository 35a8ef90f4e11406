package docker

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeFiles creates files (path -> content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
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

// tarNames lists the entry names of a tar stream, in stream order.
func tarNames(t *testing.T, r io.Reader) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

func mustContextHash(t *testing.T, dir string) string {
	t.Helper()
	h, err := ContextHash(dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestWalkBuildContext(t *testing.T) {
	tree := map[string]string{
		"Dockerfile":        "FROM x\n",
		"app/main.py":       "print(1)\n",
		"app/debug.log":     "noise\n",
		"data/big.bin":      "big\n",
		"data/keep.txt":     "kept\n",
		"secrets/token":     "t\n",
		"notes/a.md":        "a\n",
		"notes/deep/b.md":   "b\n",
		"build/out/x.o":     "o\n",
		"build/out/README":  "r\n",
		"cache/sub/file":    "c\n",
		"solution/solve.sh": "s\n",
	}
	tests := []struct {
		name   string
		ignore string // "" = no .dockerignore
		want   []string
	}{
		{
			name: "no dockerignore sends everything",
			want: []string{"Dockerfile", "app/", "app/debug.log", "app/main.py", "build/", "build/out/", "build/out/README", "build/out/x.o",
				"cache/", "cache/sub/", "cache/sub/file", "data/", "data/big.bin", "data/keep.txt", "notes/", "notes/a.md", "notes/deep/", "notes/deep/b.md",
				"secrets/", "secrets/token", "solution/", "solution/solve.sh"},
		},
		{
			name: "patterns, exceptions and comments",
			ignore: "# comment line\n\n**/*.log\n/secrets\ndata\n!data/keep.txt\nnotes/**/*.md\nbuild/out/*\n!build/out/README\ncache/\n" +
				"Dockerfile\n.dockerignore\n",
			want: []string{".dockerignore", "Dockerfile", "app/", "app/main.py", "build/", "build/out/", "build/out/README",
				"data/keep.txt", "notes/", "notes/deep/", "solution/", "solution/solve.sh"},
		},
		{
			name:   "only comments is no filter",
			ignore: "# nothing\n",
			want: []string{".dockerignore", "Dockerfile", "app/", "app/debug.log", "app/main.py", "build/", "build/out/", "build/out/README", "build/out/x.o",
				"cache/", "cache/sub/", "cache/sub/file", "data/", "data/big.bin", "data/keep.txt", "notes/", "notes/a.md", "notes/deep/", "notes/deep/b.md",
				"secrets/", "secrets/token", "solution/", "solution/solve.sh"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tree)
			if tt.ignore != "" {
				writeFiles(t, dir, map[string]string{".dockerignore": tt.ignore})
			}
			var got []string
			err := walkBuildContext(dir, func(rel string, d fs.DirEntry, _ string) error {
				if d.IsDir() {
					rel += "/"
				}
				got = append(got, rel)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("walked\n%q\nwant\n%q", got, tt.want)
			}

			// The tar sent to the engine holds exactly the walked files.
			var buf bytes.Buffer
			if err := writeContextTar(&buf, dir); err != nil {
				t.Fatal(err)
			}
			inTar := tarNames(t, &buf)
			slices.Sort(inTar)
			if !slices.Equal(inTar, tt.want) {
				t.Errorf("tar holds\n%q\nwant\n%q", inTar, tt.want)
			}
		})
	}
}

func TestContextHashFollowsDockerignore(t *testing.T) {
	mk := func(t *testing.T) string {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{
			"Dockerfile":    "FROM x\nCOPY . /ctx\n",
			".dockerignore": "*.log\nscratch/\n",
			"app.py":        "print(1)\n",
			"run.log":       "first\n",
			"scratch/tmp":   "t\n",
		})
		return dir
	}
	base := mustContextHash(t, mk(t))
	tests := []struct {
		name   string
		change map[string]string
		same   bool
	}{
		{"ignored file edited", map[string]string{"run.log": "second\n"}, true},
		{"ignored file added", map[string]string{"scratch/more": "m\n", "other.log": "x\n"}, true},
		{"kept file edited", map[string]string{"app.py": "print(2)\n"}, false},
		{"dockerignore edited", map[string]string{".dockerignore": "*.log\n"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := mk(t)
			writeFiles(t, dir, tt.change)
			if got := mustContextHash(t, dir); (got == base) != tt.same {
				t.Errorf("hash equal to base: %v, want %v", got == base, tt.same)
			}
		})
	}
}

func TestBadDockerignore(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"Dockerfile": "FROM x\n", ".dockerignore": "[\n"})
	_, err := ContextHash(dir)
	if err == nil || !strings.Contains(err.Error(), ".dockerignore") {
		t.Fatalf("ContextHash with a malformed pattern: %v, want an error naming .dockerignore", err)
	}
}
