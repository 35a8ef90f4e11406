// Package rundir owns the on-disk format of run and matrix directories:
// every file and folder name in them, the manifest (run.json) with its
// kinds and statuses, the checkpoint (state.json), the history, the metric
// rows and their Parquet parts, and the build information recorded with
// them. The orchestrator writes through it and the readers (inspect,
// report) read through it, so the format is defined once and readers need
// none of the orchestrator's dependencies.
package rundir

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/internal/dirlock"
	"github.com/mediated-coevo/harness/internal/durable"
)

// Manifest is run.json: what a run or matrix is, how far it got and how it
// ended. It is rewritten atomically on every change, so a reader (inspect,
// resume) always sees a complete one.
type Manifest struct {
	ID     string `json:"id"`   // the directory name
	Kind   Kind   `json:"kind"` // run | matrix
	Name   string `json:"name,omitempty"`
	Status Status `json:"status"` // running | completed | failed | interrupted | budget_exhausted

	StartedAt  time.Time  `json:"started_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`

	// MatrixID is set on the rows of a matrix; Rows on the matrix itself
	// (its row directory names, in plan order).
	MatrixID string   `json:"matrix_id,omitempty"`
	Rows     []string `json:"rows,omitempty"`

	Tasks   []string `json:"tasks"`
	TaskSet string   `json:"task_set,omitempty"`
	// ValidateTasks and HeldOutTasks are the validation and held-out
	// splits; Tasks is then the evolve split.
	ValidateTasks       []string `json:"validate_tasks,omitempty"`
	HeldOutTasks        []string `json:"held_out_tasks,omitempty"`
	Iterations          int      `json:"iterations"`
	CompletedIterations int      `json:"completed_iterations"`
	Condition           string   `json:"condition,omitempty"`
	Policy              string   `json:"skill_update_policy,omitempty"`
	Preset              string   `json:"baseline_preset,omitempty"`
	Lab                 string   `json:"lab,omitempty"`
	// Routing is the row's routing between students (isolated, pooled or
	// mediated); empty in a run from before routing, which is isolated.
	Routing string  `json:"routing,omitempty"`
	Agent   string  `json:"agent,omitempty"`
	Seed    int64   `json:"seed"`
	Seeds   []int64 `json:"seeds,omitempty"`
	// Offline marks results of the offline provider: tests of the
	// machinery, never evidence.
	Offline bool `json:"offline"`
	// Counts are trial counts by trace status (scored, env_failure, ...).
	Counts map[TrialStatus]int `json:"counts,omitempty"`
	// TrialWarnings count trials by trace warning ("task: message"): task
	// settings their sandbox could not honour, such as a disk limit.
	TrialWarnings map[string]int `json:"trial_warnings,omitempty"`

	HarnessVersion    string `json:"harness_version"`
	GitCommit         string `json:"git_commit"`
	ConfigFingerprint string `json:"config_fingerprint,omitempty"`
	// Origin is where the directory was made, or last resumed: "host:path"
	// with the path absolute. A resume that finds the directory elsewhere
	// tells a copy (the original is still there, with the same id) from a
	// move.
	Origin string `json:"origin,omitempty"`
	// ForcedResumes records each --force resume that changed the
	// configuration: from which iteration on the new one applied.
	ForcedResumes []ForcedResume `json:"forced_resumes,omitempty"`
	Error         string         `json:"error,omitempty"`
	// Network is set on the run.json of a network experiment (harness
	// network): its design and the stability check it started under.
	Network *NetworkRecord `json:"network,omitempty"`
	// Warnings are what the user should know about how the run was made or
	// repaired, though none stops it: a binary that does not know its
	// commit, a state.json rebuilt on resume from the run's other records.
	Warnings []string `json:"warnings,omitempty"`
}

// ForcedResume is one resume forced past a configuration change.
type ForcedResume struct {
	// FromIteration is the first iteration run under the new configuration
	// (0 in a matrix's own run.json: each row records its own).
	FromIteration int       `json:"from_iteration"`
	Was           string    `json:"was_fingerprint"`
	Now           string    `json:"now_fingerprint"`
	Time          time.Time `json:"time"`
	// KeptConfig is the file the earlier config.toml was moved to.
	KeptConfig string `json:"kept_config"`
}

// MarkFinished stamps the finishing time (UTC).
func (m *Manifest) MarkFinished() {
	t := time.Now().UTC()
	m.FinishedAt = &t
}

func (m Manifest) clone() Manifest {
	m.Rows = slices.Clone(m.Rows)
	m.Tasks = slices.Clone(m.Tasks)
	m.Seeds = slices.Clone(m.Seeds)
	m.Warnings = slices.Clone(m.Warnings)
	m.Counts = maps.Clone(m.Counts)
	m.TrialWarnings = maps.Clone(m.TrialWarnings)
	m.ForcedResumes = slices.Clone(m.ForcedResumes)
	m.Warnings = slices.Clone(m.Warnings)
	if m.FinishedAt != nil {
		t := *m.FinishedAt
		m.FinishedAt = &t
	}
	return m
}

// Dir is an open run or matrix directory.
type Dir struct {
	Path string // as given (joined with the base), not made absolute
	ID   string // the directory name

	mu       sync.Mutex
	manifest Manifest
	// secrets are values of the API-key variables the run's models name;
	// they are scrubbed from run.json as a second line of defence.
	secrets []string
	// lock is held while this process is the directory's writer (see Lock).
	lock *dirlock.Lock
}

// Spec describes a directory to create.
type Spec struct {
	// Manifest is the initial run.json. Kind (default run), Seed and the
	// label fields are read from it: a run is named after its Preset, or
	// its Condition when there is none; a matrix after its Name. ID, Status,
	// the times, HarnessVersion, GitCommit and ConfigFingerprint are filled
	// in by Create.
	Manifest Manifest
	// DirName, when set, is the exact directory name (a matrix row uses its
	// row name); an existing directory of that name is an error. Empty
	// means <UTC timestamp>-<seed>-<label>-<nonce>, or ...-<nonce>-matrix
	// for a matrix, with a numeric suffix if that already exists. The
	// nonce (six random hex digits) keeps the id, which labels the run's
	// containers, apart from a run started in the same second elsewhere
	// (another --out, another machine on the same engine).
	DirName string
	// Rand is where the nonce's random bits come from; nil means
	// crypto/rand.
	Rand io.Reader
	// Config is written as config.toml, with Meta as its [run] table.
	// Meta.Version and Meta.GitCommit default to this build's.
	Config *config.Config
	Meta   config.RunMeta
	// Now is the start time; zero means the current time.
	Now time.Time
	// Hold takes the directory's lock (see Dir.Lock) as soon as it exists,
	// before anything is written into it; release it with Unlock.
	Hold bool
}

var dirLabelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// NetworkRecord is a network experiment's design and the baseline
// stability check it started under (or that it was skipped).
type NetworkRecord struct {
	Labs              []string `json:"labs"`
	Topology          string   `json:"topology"`
	Diffusion         []string `json:"diffusion"`
	DiffusionInterval int      `json:"diffusion_interval"`
	TokenBudget       int      `json:"token_budget"`
	StabilityBound    float64  `json:"stability_bound"`
	// SkipStabilityCheck is true when --skip-stability-check started it
	// without a baseline; else Baseline is the no_feedback matrix checked
	// and BaselineSpread its seed-to-seed spread.
	SkipStabilityCheck bool     `json:"skip_stability_check"`
	Baseline           string   `json:"baseline,omitempty"`
	BaselineSpread     *float64 `json:"baseline_spread,omitempty"`
}

// CheckLabel reports whether s can be used in a run directory name.
func CheckLabel(s string) error {
	if len(s) > 100 || !dirLabelRE.MatchString(s) {
		return fmt.Errorf("%q cannot be part of a directory name: use letters, digits, '_', '.' and '-' (at most 100, starting with a letter or digit)", s)
	}
	return nil
}

// Create creates a new run or matrix directory under base with its
// layout, config.toml (the resolved configuration, CLI arguments, harness
// version and git commit; never an API key) and run.json (status running).
// Nothing is created when the inputs are invalid; if writing the files
// fails, the new directory is removed again.
func Create(base string, spec Spec) (*Dir, error) {
	if spec.Config == nil {
		return nil, errors.New("create run directory: no configuration to record")
	}
	m := spec.Manifest.clone()
	if m.Kind == "" {
		m.Kind = KindRun
	}
	if m.Kind != KindRun && m.Kind != KindMatrix {
		return nil, fmt.Errorf("create run directory: unknown kind %q (want %s or %s)", m.Kind, KindRun, KindMatrix)
	}
	now := spec.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC().Truncate(time.Second)
	candidates, err := dirNames(m, spec.DirName, spec.Rand, now)
	if err != nil {
		return nil, err
	}
	meta := withBuildInfo(spec.Meta)
	meta.Offline = meta.Offline || m.Offline
	// Render config.toml before touching the disk: a configuration that
	// cannot be written safely must not leave a half-made directory.
	var cfgText bytes.Buffer
	if err := config.WriteResolved(&cfgText, spec.Config, meta); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	path, name, err := makeDir(base, spec.DirName, candidates)
	if err != nil {
		return nil, err
	}

	m.ID = name
	m.Status = StatusRunning
	m.StartedAt = now
	m.UpdatedAt = now
	m.FinishedAt = nil
	m.HarnessVersion = meta.Version
	m.GitCommit = meta.GitCommit
	if w := BuildWarning(m.GitCommit); w != "" && !slices.Contains(m.Warnings, w) {
		m.Warnings = append(m.Warnings, w)
	}
	m.ConfigFingerprint = config.Fingerprint(spec.Config)
	m.Origin = originOf(path)
	d := &Dir{Path: path, ID: name, manifest: m, secrets: secretValues(spec.Config)}
	if spec.Hold {
		if err := d.Lock(); err != nil {
			os.RemoveAll(path)
			return nil, err
		}
	}
	if err := d.populate(m.Kind, cfgText.Bytes()); err != nil {
		// Only this call wrote into the directory, which did not exist before.
		d.Unlock()
		os.RemoveAll(path)
		return nil, err
	}
	return d, nil
}

// dirNames returns the names a new directory may take, in order of
// preference: candidates(i) is the i-th choice, "" when there is none left.
// An exact name (dirName) has one choice; otherwise the name is
// <UTC timestamp>-<seed>-<label>-<nonce>, numbered from the second choice on.
func dirNames(m Manifest, dirName string, random io.Reader, now time.Time) (candidates func(i int) string, err error) {
	if dirName != "" {
		if err := CheckLabel(dirName); err != nil {
			return nil, fmt.Errorf("create run directory: %w", err)
		}
		return func(i int) string {
			if i > 0 {
				return ""
			}
			return dirName
		}, nil
	}
	label := m.Name
	if m.Kind == KindRun {
		label = cmp.Or(m.Preset, m.Condition)
	}
	if label == "" {
		return nil, fmt.Errorf("create %s directory: no condition, preset or name to name it after", m.Kind)
	}
	if err := CheckLabel(label); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	nonce, err := newNonce(random)
	if err != nil {
		return nil, fmt.Errorf("create %s directory: %w", m.Kind, err)
	}
	stem := fmt.Sprintf("%s-%d-%s-%s", now.Format(DirTimeFormat), m.Seed, label, nonce)
	return func(i int) string {
		name := stem
		if i > 0 {
			name += fmt.Sprintf("-%d", i+1)
		}
		if m.Kind == KindMatrix {
			name += "-matrix"
		}
		return name
	}, nil
}

// makeDir creates the first of the candidate names under base that does
// not exist yet and returns its path and name.
func makeDir(base, dirName string, candidates func(i int) string) (path, name string, err error) {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", "", fmt.Errorf("create output directory %s: %w", base, err)
	}
	for i := 0; ; i++ {
		name = candidates(i)
		if name == "" {
			return "", "", fmt.Errorf("create run directory: %s already exists (resume it with --resume, or choose another --out)", filepath.Join(base, dirName))
		}
		if i >= 1000 {
			return "", "", fmt.Errorf("create run directory in %s: too many directories named %s already", base, candidates(0))
		}
		path = filepath.Join(base, name)
		err := os.Mkdir(path, 0o755)
		if err == nil {
			return path, name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", "", fmt.Errorf("create run directory %s: %w", path, err)
		}
	}
}

// newNonce is six hex digits from r (crypto/rand when nil).
func newNonce(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [3]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("draw the random part of its name: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func (d *Dir) populate(kind Kind, cfgText []byte) error {
	if kind == KindRun {
		for _, sub := range runLayout {
			if err := os.MkdirAll(filepath.Join(d.Path, sub), 0o755); err != nil {
				return fmt.Errorf("create %s: %w", filepath.Join(d.Path, sub), err)
			}
		}
	}
	if err := durable.WriteFile(filepath.Join(d.Path, ConfigFile), cfgText, 0o644); err != nil {
		return fmt.Errorf("record the configuration: %w", err)
	}
	return d.writeManifest(d.manifest)
}

// Open opens an existing run or matrix directory by its run.json, for
// resume and inspection.
func Open(path string) (*Dir, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open run directory: %s does not exist", path)
		}
		return nil, fmt.Errorf("open run directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("open run directory: %s is not a directory", path)
	}
	mpath := filepath.Join(path, ManifestFile)
	data, err := os.ReadFile(mpath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open run directory: %s has no %s, so it is not a run or matrix directory", path, ManifestFile)
		}
		return nil, fmt.Errorf("open run directory: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("open run directory: %s is not valid JSON: %w", mpath, err)
	}
	if m.Kind != KindRun && m.Kind != KindMatrix {
		return nil, fmt.Errorf("open run directory: %s has unknown kind %q", mpath, m.Kind)
	}
	id := m.ID
	if id == "" {
		id = filepath.Base(filepath.Clean(path))
	}
	d := &Dir{Path: path, ID: id, manifest: m}
	if cfg, err := d.ResolvedConfig(); err == nil {
		d.secrets = secretValues(cfg)
	}
	return d, nil
}

// RecordForcedResume records a resume forced past a configuration change,
// from iteration from on: the earlier config.toml is kept beside it as
// config.before-<UTC time>.toml, cfg becomes config.toml, and run.json gets the
// new fingerprint and a forced_resumes entry, so every iteration can be
// traced to the configuration it ran under. Nothing changes when cfg has
// the recorded fingerprint.
func (d *Dir) RecordForcedResume(cfg *config.Config, meta config.RunMeta, from int) error {
	now := config.Fingerprint(cfg)
	was := d.Manifest().ConfigFingerprint
	if was == now {
		return nil
	}
	var text bytes.Buffer
	if err := config.WriteResolved(&text, cfg, withBuildInfo(meta)); err != nil {
		return fmt.Errorf("record the forced configuration: %w", err)
	}
	// Never overwrite an earlier kept file.
	stamp := time.Now().UTC().Format("20060102T150405Z")
	kept := "config.before-" + stamp + ".toml"
	for i := 2; fileExists(filepath.Join(d.Path, kept)); i++ {
		kept = fmt.Sprintf("config.before-%s-%d.toml", stamp, i)
	}
	if err := os.Rename(filepath.Join(d.Path, ConfigFile), filepath.Join(d.Path, kept)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keep the earlier configuration of %s: %w", d.Path, err)
	}
	if err := durable.WriteFile(filepath.Join(d.Path, ConfigFile), text.Bytes(), 0o644); err != nil {
		return fmt.Errorf("record the forced configuration: %w", err)
	}
	secrets := secretValues(cfg)
	return d.UpdateManifest(func(m *Manifest) {
		d.secrets = append(d.secrets, secrets...) // under d.mu, as UpdateManifest holds it
		m.ConfigFingerprint = now
		m.ForcedResumes = append(m.ForcedResumes, ForcedResume{FromIteration: from, Was: was, Now: now,
			Time: time.Now().UTC(), KeptConfig: kept})
	})
}

// withBuildInfo fills the version and commit of meta that are not set
// with this build's.
func withBuildInfo(meta config.RunMeta) config.RunMeta {
	if meta.Version == "" {
		meta.Version = Version
	}
	if meta.GitCommit == "" {
		meta.GitCommit = GitCommit()
	}
	return meta
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ResolvedConfig reads back the configuration the run recorded.
func (d *Dir) ResolvedConfig() (*config.Config, error) {
	p := filepath.Join(d.Path, ConfigFile)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read the configuration of %s: %w", d.Path, err)
	}
	return config.Parse(data, p)
}

// Manifest returns a copy of the current manifest.
func (d *Dir) Manifest() Manifest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.manifest.clone()
}

// UpdateManifest applies fn to the manifest and rewrites run.json
// atomically. If the write fails, the manifest in memory is unchanged. It
// is safe for concurrent use.
func (d *Dir) UpdateManifest(fn func(*Manifest)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := d.manifest.clone()
	fn(&m)
	m.UpdatedAt = time.Now().UTC()
	if err := d.writeManifest(m); err != nil {
		return err
	}
	d.manifest = m
	return nil
}

func (d *Dir) writeManifest(m Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", ManifestFile, err)
	}
	data = scrub(data, d.secrets)
	path := filepath.Join(d.Path, ManifestFile)
	if err := durable.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}

// Join returns a path inside the directory.
func (d *Dir) Join(elem ...string) string {
	return filepath.Join(append([]string{d.Path}, elem...)...)
}

// MetricsDir is where the Parquet parts of a run go.
func (d *Dir) MetricsDir() string { return d.Join(MetricsDir) }

// RowPath is the directory of a matrix row.
func (d *Dir) RowPath(row string) string { return d.Join(row) }

// OpenRow opens the directory of a matrix row that has been created.
func (d *Dir) OpenRow(row string) (*Dir, error) {
	if err := CheckLabel(row); err != nil {
		return nil, fmt.Errorf("open row: %w", err)
	}
	return Open(d.RowPath(row))
}

// OpenLog opens (creating if needed) an append-only JSONL file at rel, a
// path relative to the directory such as "history/history.jsonl". A path
// leaving the directory is refused.
func (d *Dir) OpenLog(rel string) (*durable.Log, error) {
	p, err := d.inside(rel)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return durable.OpenLog(p)
}

// WriteFileFunc writes the file at rel (relative to the directory)
// atomically; a path leaving the directory is refused.
func (d *Dir) WriteFileFunc(rel string, write func(io.Writer) error) error {
	p, err := d.inside(rel)
	if err != nil {
		return fmt.Errorf("write file: %w", err)
	}
	return durable.WriteFileFunc(p, 0o644, write)
}

// inside resolves rel within the directory, refusing paths that leave it.
func (d *Dir) inside(rel string) (string, error) {
	if rel == "" || filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%q must be a relative path inside the run directory %s", rel, d.Path)
	}
	return d.Join(filepath.Clean(rel)), nil
}

// secretValues lists the values of the API-key variables that c's models
// name. Short values are left out: they cannot be told from ordinary text.
func secretValues(c *config.Config) []string {
	var out []string
	for _, name := range c.APIKeyEnvs() {
		if v := os.Getenv(name); len(v) >= 8 && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// scrub replaces every secret, raw or encoded, by config.Redacted.
func scrub(data []byte, secrets []string) []byte {
	return config.NewRedactor(secrets).Bytes(data)
}
