package durable

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileFuncFailureKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteFileFunc(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("half"))
		return errors.New("disk on fire")
	})
	if err == nil {
		t.Fatal("want error")
	}
	got, _ := os.ReadFile(path)
	if string(got) != "old" {
		t.Fatalf("content = %q, want old", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary file left behind: %v", ents)
	}
}

func TestLogAppendAndTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	l, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := l.Append(map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	// Simulate a crash mid-record.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"i":`)
	f.Close()
	var n int
	if err := ReadLog(path, func([]byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("read %d records, want 3 (torn tail skipped)", n)
	}
	l, _ = OpenLog(path)
	l.Append(map[string]int{"i": 9})
	l.Close()
	n = 0
	if err := ReadLog(path, func([]byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("read %d records after reopening, want 4: the torn record must be cut off", n)
	}
}

func TestTruncateLines(t *testing.T) {
	tests := []struct {
		name    string
		content string
		n       int
		want    string
		wantErr bool
	}{
		{"keep two", "a\nb\nc\n", 2, "a\nb\n", false},
		{"keep all", "a\nb\n", 2, "a\nb\n", false},
		{"drop torn tail", "a\n{\"x", 1, "a\n", false},
		{"too few lines", "a\n", 3, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "l.jsonl")
			os.WriteFile(path, []byte(tt.content), 0o644)
			err := TruncateLines(path, tt.n)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if tt.wantErr {
				return
			}
			got, _ := os.ReadFile(path)
			if !strings.EqualFold(string(got), tt.want) {
				t.Fatalf("got %q want %q", got, tt.want)
			}
		})
	}
}

func TestOpenLogCountsWhatIsThere(t *testing.T) {
	tests := []struct {
		name    string
		initial string
		want    int
		after   string // file content after OpenLog
	}{
		{"new file", "", 0, ""},
		{"complete records", "{\"a\":1}\n{\"a\":2}\n", 2, "{\"a\":1}\n{\"a\":2}\n"},
		{"torn tail cut", "{\"a\":1}\n{\"a\"", 1, "{\"a\":1}\n"},
		{"only a torn record", "{\"a\"", 0, ""},
		{"long torn tail past one read chunk", "{\"a\":1}\n" + strings.Repeat("x", 70<<10), 1, "{\"a\":1}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "x.jsonl")
			if tt.initial != "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.initial), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			l, err := OpenLog(path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if l.Count() != tt.want || l.Path() != path {
				t.Errorf("Count %d Path %q, want %d %q", l.Count(), l.Path(), tt.want, path)
			}
			if got, _ := os.ReadFile(path); string(got) != tt.after {
				t.Errorf("file holds %q, want %q", got, tt.after)
			}
			if err := l.Append(map[string]int{"b": 1}); err != nil || l.Count() != tt.want+1 {
				t.Errorf("after Append: count %d, err %v", l.Count(), err)
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deep", "v.json")
	if err := WriteJSON(path, map[string]any{"k": []int{1, 2}}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"k\": [\n    1,\n    2\n  ]\n}\n"; string(got) != want {
		t.Errorf("WriteJSON wrote %q, want %q", got, want)
	}
	if err := WriteJSON(path, func() {}); err == nil || !strings.Contains(err.Error(), "v.json") {
		t.Errorf("unencodable value: %v, want an error naming the file", err)
	}
	if got2, _ := os.ReadFile(path); string(got2) != string(got) {
		t.Errorf("a failed WriteJSON changed the file to %q", got2)
	}
}

func TestLogResetEmptiesAndAppendsAfresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	l, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 3 {
		if err := l.Append(map[string]int{"a": i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Reset(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); len(got) != 0 || l.Count() != 0 {
		t.Fatalf("after Reset: file %q, count %d; want empty, 0", got, l.Count())
	}
	if err := l.Append(map[string]int{"b": 1}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "{\"b\":1}\n" || l.Count() != 1 {
		t.Errorf("after Reset and Append: file %q, count %d; want one record", got, l.Count())
	}
}
