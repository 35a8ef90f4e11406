package rundir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/config"
)

func rundirTestConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Load("")
	if err != nil {
		t.Fatalf("load default config: %v", err)
	}
	return cfg
}

var rundirStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// zeros is a Spec.Rand that always draws zeros, so names are predictable.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func rundirTestSpec(cfg *config.Config) Spec {
	return Spec{
		Manifest: Manifest{Kind: KindRun, Condition: "learned_mediator", Policy: "all", Lab: "default",
			Seed: 42, Tasks: []string{"a", "b"}, Iterations: 3},
		Config: cfg,
		Meta:   config.RunMeta{Args: []string{"run", "--tasks=a,b"}},
		Now:    rundirStart,
		Rand:   zeros{},
	}
}

func TestCreateLayoutAndFiles(t *testing.T) {
	base := filepath.Join(t.TempDir(), "experiments")
	cfg := rundirTestConfig(t)
	d, err := Create(base, rundirTestSpec(cfg))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	wantName := "20260102T030405Z-42-learned_mediator-000000"
	if d.ID != wantName || d.Path != filepath.Join(base, wantName) {
		t.Errorf("directory = %s (id %s), want %s", d.Path, d.ID, wantName)
	}
	for _, sub := range []string{"metrics", "artifacts/reports", "artifacts/traces", "artifacts/validation",
		"history", "jobs", "skills", "skills_snapshots", "notes"} {
		if st, err := os.Stat(filepath.Join(d.Path, sub)); err != nil || !st.IsDir() {
			t.Errorf("layout: %s missing (%v)", sub, err)
		}
	}

	var m Manifest
	data, err := os.ReadFile(filepath.Join(d.Path, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("run.json: %v", err)
	}
	if m.ID != wantName || m.Kind != KindRun || m.Status != StatusRunning || !m.StartedAt.Equal(rundirStart) ||
		m.HarnessVersion != Version || m.GitCommit == "" || m.ConfigFingerprint != config.Fingerprint(cfg) ||
		!slices.Equal(m.Tasks, []string{"a", "b"}) || m.Seed != 42 {
		t.Errorf("run.json = %+v", m)
	}

	text, err := os.ReadFile(filepath.Join(d.Path, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	back, meta, err := config.ParseResolved(text, "config.toml")
	if err != nil {
		t.Fatalf("config.toml does not read back: %v", err)
	}
	if config.Fingerprint(back) != config.Fingerprint(cfg) {
		t.Error("config.toml does not hold the configuration it was given")
	}
	if !slices.Equal(meta.Args, []string{"run", "--tasks=a,b"}) || meta.Version != Version || meta.GitCommit != GitCommit() {
		t.Errorf("config.toml [run] = %+v, want the arguments, version and commit", meta)
	}
}

func TestCreateNames(t *testing.T) {
	cfg := rundirTestConfig(t)
	base := t.TempDir()

	preset := rundirTestSpec(cfg)
	preset.Manifest.Preset = "full_coevolution"
	matrix := Spec{Manifest: Manifest{Kind: KindMatrix, Name: "baseline", Seed: 7}, Config: cfg, Now: rundirStart, Rand: zeros{}}

	tests := []struct {
		name string
		spec Spec
		want []string // successive creations with the same start time
	}{
		{"run named after its condition, then collision suffixes", rundirTestSpec(cfg),
			[]string{"20260102T030405Z-42-learned_mediator-000000", "20260102T030405Z-42-learned_mediator-000000-2", "20260102T030405Z-42-learned_mediator-000000-3"}},
		{"run named after its preset", preset, []string{"20260102T030405Z-42-full_coevolution-000000"}},
		{"matrix keeps its -matrix suffix last", matrix,
			[]string{"20260102T030405Z-7-baseline-000000-matrix", "20260102T030405Z-7-baseline-000000-2-matrix"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, want := range tt.want {
				d, err := Create(base, tt.spec)
				if err != nil {
					t.Fatalf("Create: %v", err)
				}
				if d.ID != want {
					t.Errorf("name = %s, want %s", d.ID, want)
				}
			}
		})
	}
}

// Two runs of one seed and condition started in the same second get
// different ids, even in two --out directories: the id labels their
// containers on a shared engine.
func TestCreateIDsDifferAcrossOutputDirectories(t *testing.T) {
	cfg := rundirTestConfig(t)
	spec := rundirTestSpec(cfg)
	spec.Rand = nil
	a, err := Create(t.TempDir(), spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Create(t.TempDir(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID {
		t.Fatalf("two runs started in the same second share the id %s", a.ID)
	}
	for _, d := range []*Dir{a, b} {
		if !strings.HasPrefix(d.ID, "20260102T030405Z-42-learned_mediator-") {
			t.Errorf("id %s does not start with the time, seed and condition", d.ID)
		}
	}
}

func TestCreateMatrixHasNoRunLayout(t *testing.T) {
	cfg := rundirTestConfig(t)
	d, err := Create(t.TempDir(), Spec{Manifest: Manifest{Kind: KindMatrix, Name: "m", Rows: []string{"r1"}}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(d.Path)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{ConfigFile, ManifestFile}) {
		t.Errorf("matrix directory holds %v, want only config.toml and run.json", names)
	}
}

func TestCreateExactNameRefusesExisting(t *testing.T) {
	cfg := rundirTestConfig(t)
	base := t.TempDir()
	spec := rundirTestSpec(cfg)
	spec.DirName = "row-a"
	if _, err := Create(base, spec); err != nil {
		t.Fatal(err)
	}
	_, err := Create(base, spec)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second Create with the same name: err = %v, want already exists", err)
	}
}

func TestCreateBadInputCreatesNothing(t *testing.T) {
	cfg := rundirTestConfig(t)
	tests := []struct {
		name   string
		mutate func(*Spec)
	}{
		{"no config", func(s *Spec) { s.Config = nil }},
		{"label with a path separator", func(s *Spec) { s.Manifest.Condition = "../escape" }},
		{"no label", func(s *Spec) { s.Manifest.Condition = "" }},
		{"unknown kind", func(s *Spec) { s.Manifest.Kind = "sweep" }},
		{"bad exact name", func(s *Spec) { s.DirName = "a/b" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := filepath.Join(t.TempDir(), "out")
			spec := rundirTestSpec(cfg)
			tt.mutate(&spec)
			if _, err := Create(base, spec); err == nil {
				t.Fatal("Create succeeded")
			}
			if _, err := os.Stat(base); !os.IsNotExist(err) {
				t.Errorf("output directory was created (stat err %v)", err)
			}
		})
	}
}

// No API key may reach a run directory, even when it shows up in the
// command line or the manifest.
func TestCreateHoldsNoSecret(t *testing.T) {
	const secret = "secret-value"
	t.Setenv("OPENROUTER_API_KEY", secret)
	cfg := rundirTestConfig(t)
	spec := rundirTestSpec(cfg)
	spec.Meta.Args = append(spec.Meta.Args, "--note="+secret)
	d, err := Create(t.TempDir(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UpdateManifest(func(m *Manifest) { m.Error = "provider said: bad key " + secret }); err != nil {
		t.Fatal(err)
	}
	found := 0
	err = filepath.WalkDir(d.Path, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		found++
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(data), secret) {
			t.Errorf("%s contains the API key", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 2 {
		t.Errorf("walked %d files, want at least config.toml and run.json", found)
	}
}

func TestManifestRoundTrip(t *testing.T) {
	cfg := rundirTestConfig(t)
	d, err := Create(t.TempDir(), rundirTestSpec(cfg))
	if err != nil {
		t.Fatal(err)
	}
	err = d.UpdateManifest(func(m *Manifest) {
		m.CompletedIterations = 3
		m.Status = StatusCompleted
		m.Counts = map[TrialStatus]int{"scored": 5, "env_failure": 1}
		m.MarkFinished()
	})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Open(d.Path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	m := again.Manifest()
	if m.Status != StatusCompleted || m.CompletedIterations != 3 || m.FinishedAt == nil || m.Counts["env_failure"] != 1 || again.ID != d.ID {
		t.Errorf("reopened manifest = %+v", m)
	}
	// The copy handed out is not the one kept.
	m.Counts["scored"] = 99
	if again.Manifest().Counts["scored"] != 5 {
		t.Error("Manifest() shares its map with the Dir")
	}
	if _, err := again.ResolvedConfig(); err != nil {
		t.Errorf("ResolvedConfig: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "bad")
	os.MkdirAll(notJSON, 0o755)
	os.WriteFile(filepath.Join(notJSON, ManifestFile), []byte("{"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.MkdirAll(empty, 0o755)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)

	tests := []struct{ path, want string }{
		{filepath.Join(dir, "missing"), "does not exist"},
		{file, "not a directory"},
		{empty, "no run.json"},
		{notJSON, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			_, err := Open(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open(%s) = %v, want %q", tt.path, err, tt.want)
			}
		})
	}
}

func TestOpenLog(t *testing.T) {
	d, err := Create(t.TempDir(), rundirTestSpec(rundirTestConfig(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"../outside.jsonl", "/abs.jsonl", ""} {
		if _, err := d.OpenLog(bad); err == nil {
			t.Errorf("OpenLog(%q) succeeded, want a refusal", bad)
		}
	}
	l, err := d.OpenLog("history/history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	data, _ := os.ReadFile(filepath.Join(d.Path, "history", "history.jsonl"))
	if string(data) != "{\"n\":1}\n" {
		t.Errorf("log holds %q", data)
	}
}
