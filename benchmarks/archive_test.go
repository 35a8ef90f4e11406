package benchmarks

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// member is one archive entry for tests. kind is a tar type flag (0 means a
// regular file); zip archives turn symlink kinds into symlink modes.
type member struct {
	name, body, link string
	kind             byte
	mode             int64
}

func tarBytes(t testing.TB, ms []member, compress bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var tw *tar.Writer
	var gz *gzip.Writer
	if compress {
		gz = gzip.NewWriter(&buf)
		tw = tar.NewWriter(gz)
	} else {
		tw = tar.NewWriter(&buf)
	}
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Mode: m.mode, Linkname: m.link, Typeflag: m.kind, Format: tar.FormatPAX}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		switch m.kind {
		case 0:
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(m.body))
		case tar.TypeXGlobalHeader:
			h = &tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "abc123"}}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(m.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func zipBytes(t testing.TB, ms []member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range ms {
		h := &zip.FileHeader{Name: m.name, Method: zip.Deflate}
		switch m.kind {
		case tar.TypeSymlink:
			h.SetMode(fs.ModeSymlink | 0o777)
		case tar.TypeDir:
			h.SetMode(fs.ModeDir | 0o755)
		case tar.TypeFifo:
			h.SetMode(fs.ModeNamedPipe | 0o644)
		default:
			mode := fs.FileMode(0o644)
			if m.mode != 0 {
				mode = fs.FileMode(m.mode)
			}
			h.SetMode(mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		body := m.body
		if m.kind == tar.TypeSymlink {
			body = m.link
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// taskMembers is a valid task id under prefix ("" for the archive root).
func taskMembers(prefix, id string) []member {
	files := taskFiles("version = \"1.0\"\n[metadata]\nsource = \"archive\"\n")
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var ms []member
	for _, n := range names {
		mode := int64(0o644)
		if strings.HasSuffix(n, ".sh") {
			mode = 0o755
		}
		ms = append(ms, member{name: prefix + id + "/" + n, body: files[n], mode: mode})
	}
	return ms
}

func writeArchive(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// regularFiles lists every regular file under dir (relative paths).
func regularFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

func TestCleanEntryName(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{"a/b.txt", "a/b.txt", false},
		{"./a/./b", "a/b", false},
		{"a//b/", "a/b", false},
		{"./", "", false},
		{".", "", false},
		{"../x", "", true},
		{"a/../../x", "", true},
		{"a/../b", "", true}, // any .. is refused, even one that stays inside
		{"/etc/passwd", "", true},
		{`a\..\b`, "", true},
		{"C:/x", "", true},
		{"a\x00b", "", true},
	}
	for _, tt := range tests {
		got, err := cleanEntryName(tt.in)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("cleanEntryName(%q) = %q, %v; want %q, bad=%v", tt.in, got, err, tt.want, tt.bad)
		}
	}
}

func TestExtractArchiveFormats(t *testing.T) {
	ms := append([]member{{name: "pax_global_header", kind: tar.TypeXGlobalHeader}, {name: "./", kind: tar.TypeDir, mode: 0o755}},
		taskMembers("repo-main/tasks/", "alpha")...)
	tests := []struct {
		name string
		data []byte
	}{
		{"tar.gz", tarBytes(t, ms, true)},
		{"tar", tarBytes(t, ms, false)},
		{"zip", zipBytes(t, taskMembers("repo-main/tasks/", "alpha"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := writeArchive(t, t.TempDir(), "a."+tt.name, tt.data)
			dest := t.TempDir()
			if err := extractArchive(src, dest, nil, 0); err != nil {
				t.Fatal(err)
			}
			sh := filepath.Join(dest, "repo-main", "tasks", "alpha", "tests", "test.sh")
			st, err := os.Stat(sh)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm()&0o100 == 0 {
				t.Errorf("test.sh lost its executable bit: %v", st.Mode())
			}
			if _, err := Load(filepath.Join(dest, "repo-main", "tasks", "alpha")); err != nil {
				t.Errorf("extracted task does not load: %v", err)
			}
		})
	}
}

func TestUnsafeArchivesAreRefused(t *testing.T) {
	good := taskMembers("tasks/", "alpha")
	tests := []struct {
		name string
		bad  member
		want string
	}{
		{"parent traversal", member{name: "tasks/alpha/../../escape.txt", body: "x"}, ".."},
		{"absolute path", member{name: "/tmp/escape.txt", body: "x"}, "absolute"},
		{"symlink", member{name: "tasks/alpha/link", link: "/etc/passwd", kind: tar.TypeSymlink}, "symbolic link"},
		{"relative symlink", member{name: "tasks/alpha/link", link: "../../..", kind: tar.TypeSymlink}, "symbolic link"},
		{"hard link", member{name: "tasks/alpha/hard", link: "tasks/alpha/task.toml", kind: tar.TypeLink}, "hard link"},
		{"fifo", member{name: "tasks/alpha/pipe", kind: tar.TypeFifo}, "not a regular file"},
		{"char device", member{name: "tasks/alpha/dev", kind: tar.TypeChar}, "not a regular file"},
		{"duplicate file", member{name: "tasks/alpha/task.toml", body: "version = \"9\""}, "exists"},
	}
	for _, tt := range tests {
		formats := []string{"tar.gz"}
		if tt.bad.kind == tar.TypeSymlink || tt.bad.kind == tar.TypeFifo || tt.bad.kind == 0 {
			formats = append(formats, "zip")
		}
		for _, format := range formats {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				// The bad member comes last, after the good files, so a
				// streaming extractor would already have written those.
				ms := append(append([]member{}, good...), tt.bad)
				var data []byte
				if format == "zip" {
					data = zipBytes(t, ms)
				} else {
					data = tarBytes(t, ms, true)
				}
				// Pinned, the archive matches its checksum and would be
				// kept in cache/archives/; refused, it must not be.
				for _, pinned := range []bool{false, true} {
					work := t.TempDir()
					src := writeArchive(t, work, "tasks."+format, data)
					cache := filepath.Join(work, "cache")
					r := &Resolver{CacheDir: cache, ArchiveURL: src}
					if pinned {
						r.ArchiveSHA256 = sha256Hex(data)
					}
					_, err := r.Sync(t.Context(), []string{"alpha"})
					if err == nil || !strings.Contains(err.Error(), tt.want) {
						t.Fatalf("pinned %v: Sync error = %v, want one mentioning %q", pinned, err, tt.want)
					}
					if files := regularFiles(t, cache); len(files) != 0 {
						t.Errorf("pinned %v: refused archive left files behind: %v", pinned, files)
					}
					if _, err := os.Stat(filepath.Join(work, "escape.txt")); err == nil {
						t.Error("an entry escaped the cache")
					}
				}
			})
		}
	}
}

func TestExtractArchiveSizeCap(t *testing.T) {
	ms := []member{{name: "big.bin", body: strings.Repeat("z", 4096)}}
	src := writeArchive(t, t.TempDir(), "big.tar.gz", tarBytes(t, ms, true))
	err := extractArchive(src, t.TempDir(), nil, 1024)
	if err == nil || !strings.Contains(err.Error(), "more than 1024 bytes") {
		t.Fatalf("error = %v, want the size cap", err)
	}
}

func TestExtractArchiveRejectsGarbage(t *testing.T) {
	src := writeArchive(t, t.TempDir(), "x.zip", []byte("this is not an archive at all"))
	if err := extractArchive(src, t.TempDir(), nil, 0); err == nil || !strings.Contains(err.Error(), "not a .zip") {
		t.Fatalf("error = %v", err)
	}
}

func TestTaskRoots(t *testing.T) {
	names := []string{
		"repo/tasks-no-skills/alpha/task.toml",
		"repo/tasks/alpha/task.toml",
		"repo/tasks/alpha/tests/fixture/task.toml", // nested: not a task
		"repo/beta/task.toml",
		"repo/deep/er/beta/task.toml",
		"task.toml", // the archive root has no id
		"repo/tasks/gamma/environment/Dockerfile",
	}
	var entries []archiveEntry
	for _, n := range names {
		entries = append(entries, archiveEntry{Name: n})
	}
	entries = append(entries, archiveEntry{Name: "repo/dir/task.toml", Dir: true})
	got := taskRoots(entries)
	want := map[string]string{
		"alpha": "repo/tasks/alpha",
		"beta":  "repo/beta",
	}
	if len(got) != len(want) {
		t.Fatalf("taskRoots = %v, want %v", got, want)
	}
	for id, root := range want {
		if got[id] != root {
			t.Errorf("root of %s = %q, want %q", id, got[id], root)
		}
	}
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
