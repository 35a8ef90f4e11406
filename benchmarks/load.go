package benchmarks

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// TaskError is one problem that keeps a task from loading: the file, the
// line when known, and what is wrong.
type TaskError struct {
	Path string
	Line int // 0 when the problem has no single line
	Msg  string
}

func (e *TaskError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// InvalidTaskError is returned by Load when a task has one or more problems.
type InvalidTaskError struct {
	Dir      string
	Problems []*TaskError
}

func (e *InvalidTaskError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Error()
	}
	// Every problem, one per line: fixing one at a time would take as
	// many tries as there are problems.
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap gives errors.Is and errors.As every problem.
func (e *InvalidTaskError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// Load reads the task in dir: task.toml (Harbor schema, leniently: unknown
// keys become warnings), instruction.md and the required files. ${VAR} and
// ${VAR:-default} in env tables are filled from the host environment. It
// makes every check `tasks validate` makes (Validate is the same loader), so
// no command accepts a task that validate rejects; the task's warnings are
// in Task.Warnings.
func Load(dir string) (*Task, error) {
	res := validate(dir, os.LookupEnv)
	if !res.OK() {
		return nil, &InvalidTaskError{Dir: dir, Problems: res.problems}
	}
	return res.Task, nil
}

// loadTask returns the task (nil when dir is not a directory) and every
// problem found. lookup reads the host environment.
func loadTask(dir string, lookup func(string) (string, bool)) (*Task, []*TaskError) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, []*TaskError{{Path: dir, Msg: fmt.Sprintf("resolve path: %v", err)}}
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, []*TaskError{{Path: abs, Msg: "no such task directory"}}
	}
	if !st.IsDir() {
		return nil, []*TaskError{{Path: abs, Msg: "not a directory; a task is a directory holding task.toml"}}
	}

	tomlPath := filepath.Join(abs, "task.toml")
	var p parsedTOML
	if data, err := os.ReadFile(tomlPath); err != nil {
		msg := fmt.Sprintf("read: %v", err)
		if errors.Is(err, os.ErrNotExist) {
			msg = "missing; every task needs a task.toml (it may be as small as `version = \"1.0\"`)"
		}
		p.probs = []*TaskError{{Path: tomlPath, Msg: msg}}
	} else {
		p = parseTaskTOML(tomlPath, data, lookup)
	}
	t := &Task{ID: filepath.Base(abs), Dir: abs, Config: p.cfg, Warnings: p.warnings}
	// Without a decoded task.toml docker_image is unknown, so a missing
	// Dockerfile is not reported: it may well be intended.
	probs := append(p.probs, checkFiles(t, p.imageKnown)...)
	if p.decoded {
		findSkillDirs(t)
	}
	if len(probs) > 0 {
		return t, probs
	}
	return t, nil
}

// checkFiles checks the files a task needs besides task.toml, reads the
// instruction, and adds warnings for optional files that are missing.
func checkFiles(t *Task, checkEnvironment bool) []*TaskError {
	var probs []*TaskError
	bad := func(rel, msg string) {
		probs = append(probs, &TaskError{Path: filepath.Join(t.Dir, rel), Msg: msg})
	}

	instr, err := os.ReadFile(filepath.Join(t.Dir, "instruction.md"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		bad("instruction.md", "missing; it holds what the agent is asked to do")
	case err != nil:
		bad("instruction.md", fmt.Sprintf("read: %v", err))
	case strings.TrimSpace(string(instr)) == "":
		bad("instruction.md", "empty; write what the agent is asked to do")
	default:
		t.Instruction = string(instr)
	}

	if !isRegular(filepath.Join(t.Dir, "tests", "test.sh")) {
		bad(filepath.Join("tests", "test.sh"), "missing; the verifier script must write /logs/verifier/reward.txt or reward.json")
	}

	if !isRegular(filepath.Join(t.SolutionDir(), "solve.sh")) {
		t.Warnings = append(t.Warnings, fmt.Sprintf("%s: missing; the oracle agent cannot run this task", filepath.Join(t.SolutionDir(), "solve.sh")))
	}

	if !checkEnvironment {
		return probs
	}
	env := t.EnvironmentDir()
	hasDockerfile := isRegular(filepath.Join(env, "Dockerfile"))
	hasCompose := isRegular(filepath.Join(env, "docker-compose.yaml")) || isRegular(filepath.Join(env, "docker-compose.yml"))
	if img := t.Config.Environment.DockerImage; hasDockerfile && img != "" {
		t.Warnings = append(t.Warnings, fmt.Sprintf("%s: both docker_image %s and a Dockerfile: trials run %s when the Docker engine has it (edits to the Dockerfile then have no effect) and build the Dockerfile otherwise", env, img, img))
	}
	switch {
	case hasDockerfile, t.Config.Environment.DockerImage != "":
	case hasCompose: // its main service names the image; `tasks validate` checks the file
	default:
		bad(filepath.Join("environment", "Dockerfile"), "missing; write environment/Dockerfile (its directory is the build context) or set [environment] docker_image to a prebuilt image")
	}
	return probs
}

func isRegular(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// The raw* types mirror task.toml. Numbers go through small types whose
// UnmarshalTOML checks range, so the TOML decoder attaches the line.
type rawTask struct {
	SchemaVersion *versionString   `toml:"schema_version"`
	Version       *versionString   `toml:"version"`
	Source        *string          `toml:"source"`
	MultiStep     *string          `toml:"multi_step_reward_strategy"`
	Metadata      map[string]any   `toml:"metadata"`
	Task          *rawPackage      `toml:"task"`
	Agent         rawAgent         `toml:"agent"`
	Verifier      rawVerifier      `toml:"verifier"`
	Solution      rawSolution      `toml:"solution"`
	Environment   rawEnv           `toml:"environment"`
	Steps         []map[string]any `toml:"steps"`
	Artifacts     []any            `toml:"artifacts"`
}

type rawPackage struct {
	Name        string   `toml:"name"`
	Description string   `toml:"description"`
	Authors     []Author `toml:"authors"`
	Keywords    []string `toml:"keywords"`
}

type rawAgent struct {
	TimeoutSec seconds   `toml:"timeout_sec"`
	User       userValue `toml:"user"`
}

type rawVerifier struct {
	TimeoutSec      seconds           `toml:"timeout_sec"`
	Env             map[string]string `toml:"env"`
	User            userValue         `toml:"user"`
	EnvironmentMode string            `toml:"environment_mode"`
	Environment     map[string]any    `toml:"environment"`
}

type rawSolution struct {
	Env map[string]string `toml:"env"`
}

type rawEnv struct {
	BuildTimeoutSec seconds           `toml:"build_timeout_sec"`
	DockerImage     string            `toml:"docker_image"`
	OS              string            `toml:"os"`
	CPUs            seconds           `toml:"cpus"` // any non-negative number
	MemoryMB        count             `toml:"memory_mb"`
	StorageMB       count             `toml:"storage_mb"`
	GPUs            count             `toml:"gpus"`
	GPUTypes        []string          `toml:"gpu_types"`
	AllowInternet   *bool             `toml:"allow_internet"`
	Env             map[string]string `toml:"env"`
	Workdir         string            `toml:"workdir"`
	SkillsDir       string            `toml:"skills_dir"`
	Memory          sizeMB            `toml:"memory"`
	Storage         sizeMB            `toml:"storage"`
	MCPServers      []MCPServer       `toml:"mcp_servers"`
	Healthcheck     *rawHealthcheck   `toml:"healthcheck"`
}

type rawHealthcheck struct {
	Command          string  `toml:"command"`
	IntervalSec      seconds `toml:"interval_sec"`
	TimeoutSec       seconds `toml:"timeout_sec"`
	StartPeriodSec   seconds `toml:"start_period_sec"`
	StartIntervalSec seconds `toml:"start_interval_sec"`
	Retries          count   `toml:"retries"`
}

// seconds is a non-negative, finite number (integer or float).
type seconds struct {
	V   float64
	Set bool
}

func (s *seconds) UnmarshalTOML(v any) error {
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		return fmt.Errorf("must be a number, not %s", describeTOML(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("must be a finite number, not %v", f)
	}
	if f < 0 {
		return fmt.Errorf("must not be negative (got %v)", f)
	}
	s.V, s.Set = f, true
	return nil
}

// count is a non-negative integer; a float with no fraction is accepted.
type count struct {
	V   int64
	Set bool
}

func (c *count) UnmarshalTOML(v any) error {
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x) || math.Abs(x) > 1<<53 {
			return fmt.Errorf("must be a whole number, not %v", x)
		}
		n = int64(x)
	default:
		return fmt.Errorf("must be a whole number, not %s", describeTOML(v))
	}
	if n < 0 {
		return fmt.Errorf("must not be negative (got %d)", n)
	}
	c.V, c.Set = n, true
	return nil
}

// versionString is schema_version/version: a string, leniently a number.
type versionString string

func (s *versionString) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		*s = versionString(x)
	case int64:
		*s = versionString(strconv.FormatInt(x, 10))
	case float64:
		*s = versionString(strconv.FormatFloat(x, 'f', -1, 64))
	default:
		return fmt.Errorf("must be a string such as \"1.0\", not %s", describeTOML(v))
	}
	return nil
}

// userValue is a user name or a numeric uid.
type userValue string

func (u *userValue) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		*u = userValue(x)
	case int64:
		if x < 0 {
			return fmt.Errorf("must be a user name or a non-negative uid (got %d)", x)
		}
		*u = userValue(strconv.FormatInt(x, 10))
	default:
		return fmt.Errorf("must be a user name or a uid, not %s", describeTOML(v))
	}
	return nil
}

// sizeMB is a deprecated size string such as "4G", "512M" or "1024K", in MiB.
type sizeMB struct {
	V   int64
	Set bool
}

var sizeRE = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([KkMmGgTt])(?:[iI]?[bB]?)\s*$`)

func (s *sizeMB) UnmarshalTOML(v any) error {
	str, ok := v.(string)
	if !ok {
		return fmt.Errorf("must be a size string such as \"4G\", not %s", describeTOML(v))
	}
	m := sizeRE.FindStringSubmatch(str)
	if m == nil {
		return fmt.Errorf("cannot read size %q: write a number with a unit K, M, G or T, such as \"4G\"", str)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return fmt.Errorf("cannot read size %q: %v", str, err)
	}
	switch strings.ToUpper(m[2]) {
	case "K":
		n /= 1024
	case "G":
		n *= 1024
	case "T":
		n *= 1024 * 1024
	}
	if n > 1<<40 {
		return fmt.Errorf("size %q is too large", str)
	}
	s.V, s.Set = int64(n), true
	return nil
}

func describeTOML(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case int64, float64:
		return fmt.Sprintf("the number %v", x)
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "an array"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

// freeForm are keys whose contents are not checked (nested tables in
// map[string]any fields would otherwise be reported as unknown).
var freeForm = []string{"metadata", "steps", "artifacts", "verifier.environment"}

// keyHints explain unknown keys that real tasks are known to carry, and
// likely slips.
var keyHints = map[string]string{
	"environment.image":         "Harbor's key for a prebuilt image is docker_image",
	"environment.network_mode":  "newer Harbor network policy; this harness uses allow_internet",
	"environment.allowed_hosts": "newer Harbor network policy; this harness uses allow_internet",
	"agent.network_mode":        "newer Harbor network policy; this harness uses allow_internet",
	"agent.allowed_hosts":       "newer Harbor network policy; this harness uses allow_internet",
	"verifier.network_mode":     "newer Harbor network policy; this harness uses allow_internet",
	"verifier.allowed_hosts":    "newer Harbor network policy; this harness uses allow_internet",
	"solution.timeout_sec":      "the oracle runs under [agent] timeout_sec",
	"environment.tpu":           "TPUs are not available here",
	"agent.timeout":             "the key is timeout_sec",
	"verifier.timeout":          "the key is timeout_sec",
	"environment.build_timeout": "the key is build_timeout_sec",
	"environment.cpu":           "the key is cpus",
}

var envRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// parsedTOML is the outcome of parseTaskTOML.
type parsedTOML struct {
	cfg      TaskConfig
	warnings []string
	probs    []*TaskError
	decoded  bool // false when the TOML itself could not be decoded
	// imageKnown is false when docker_image was not read (undecoded file,
	// or a value of the wrong type).
	imageKnown bool
}

// parseTaskTOML decodes task.toml into a TaskConfig. It never panics on any
// input; problems carry the file and, where the decoder knows it, the line.
func parseTaskTOML(path string, data []byte, lookup func(string) (string, bool)) parsedTOML {
	doc := string(data)
	p := &taskParser{path: path, lines: keyLines(doc), lookup: lookup}
	var top map[string]toml.Primitive
	md, err := toml.Decode(doc, &top)
	if err != nil {
		return parsedTOML{probs: []*TaskError{decodeError(path, doc, err)}}
	}
	var raw rawTask
	d := &tableDecoder{md: md, path: path, doc: doc, lines: p.lines}
	d.table(top, reflect.ValueOf(&raw).Elem(), nil)
	p.probs = append(p.probs, d.probs...)
	p.unknownKeys(d.unknownKeys())

	var cfg TaskConfig
	cfg.SchemaVersion = p.schemaVersion(raw.SchemaVersion, raw.Version)
	if raw.Source != nil {
		cfg.Origin = *raw.Source
	}
	cfg.Metadata = raw.Metadata
	cfg.Package = p.packageInfo(raw.Task)
	p.steps(&cfg, &raw)
	cfg.Agent = AgentConfig{TimeoutSec: raw.Agent.TimeoutSec.V, User: string(raw.Agent.User)}
	cfg.Verifier = p.verifier(raw.Verifier)
	cfg.Solution = SolutionConfig{Env: p.expandEnv(raw.Solution.Env, "solution.env")}
	cfg.Environment = p.environment(raw.Environment)
	// A docker_image that did not decode is unknown, as in an undecoded file.
	imageKnown := !hasPrefixKey("environment.docker_image", d.failed...)
	return parsedTOML{cfg: cfg, warnings: p.warnings, probs: p.probs, decoded: true, imageKnown: imageKnown}
}

// taskParser gathers the warnings and problems of one task.toml while its
// methods read the decoded sections one by one.
type taskParser struct {
	path     string
	lines    map[string]int // dotted key -> line, for messages
	lookup   func(string) (string, bool)
	warnings []string
	probs    []*TaskError
}

// warn records a warning at the line of key when it is known.
func (p *taskParser) warn(key, msg string) {
	if l := p.lines[key]; l > 0 {
		p.warnings = append(p.warnings, fmt.Sprintf("%s:%d: %s", p.path, l, msg))
	} else {
		p.warnings = append(p.warnings, fmt.Sprintf("%s: %s", p.path, msg))
	}
}

// fail records a problem that keeps the task from loading.
func (p *taskParser) fail(key, msg string) {
	p.probs = append(p.probs, &TaskError{Path: p.path, Line: p.lines[key], Msg: msg})
}

func (p *taskParser) expandEnv(in map[string]string, table string) map[string]string {
	return expandEnv(in, table, p.lookup, p.warn)
}

// unknownKeys warns about keys the decoder did not use. Only the outermost
// one is reported ([reward] rather than [reward] and reward.x), and
// free-form tables are skipped.
func (p *taskParser) unknownKeys(keys []string) {
	var unknown []string
	for _, ks := range keys {
		if hasPrefixKey(ks, freeForm...) {
			continue
		}
		if inside := slices.ContainsFunc(keys, func(o string) bool { return strings.HasPrefix(ks, o+".") }); inside {
			continue
		}
		unknown = append(unknown, ks)
	}
	sort.Strings(unknown)
	for _, ks := range unknown {
		msg := fmt.Sprintf("unknown key %s (ignored)", ks)
		if h, ok := keyHints[ks]; ok {
			msg = fmt.Sprintf("unknown key %s (ignored; %s)", ks, h)
		}
		p.warn(ks, msg)
	}
}

// schemaVersion picks schema_version, falling back to the legacy version.
func (p *taskParser) schemaVersion(schema, legacy *versionString) string {
	switch {
	case schema != nil && legacy != nil && *schema != *legacy:
		p.warn("version", fmt.Sprintf("both schema_version (%q) and legacy version (%q) are set; using schema_version", *schema, *legacy))
		return string(*schema)
	case schema != nil:
		return string(*schema)
	case legacy != nil:
		return string(*legacy)
	}
	p.warn("", "no schema_version (or legacy version); add schema_version = \"1.1\"")
	return ""
}

// packageInfo reads [task]; nil when the file has none.
func (p *taskParser) packageInfo(raw *rawPackage) *PackageInfo {
	if raw == nil {
		return nil
	}
	info := PackageInfo(*raw)
	if info.Name == "" {
		p.warn("task", "[task] has no name; Harbor needs name = \"org/name\" to publish the task")
	} else if !strings.Contains(info.Name, "/") {
		p.warn("task.name", fmt.Sprintf("[task] name %q is not of the form org/name", info.Name))
	}
	return &info
}

// steps copies the multi-step keys and artifacts into cfg. They are kept
// for the record only: this harness runs neither.
func (p *taskParser) steps(cfg *TaskConfig, raw *rawTask) {
	if raw.MultiStep != nil {
		cfg.MultiStepRewardStrategy = *raw.MultiStep
		if s := *raw.MultiStep; s != "mean" && s != "final" {
			p.warn("multi_step_reward_strategy", fmt.Sprintf("multi_step_reward_strategy %q is neither \"mean\" nor \"final\"", s))
		}
	}
	if len(raw.Steps) > 0 {
		cfg.Steps = raw.Steps
		p.warn("steps", "multi-step task: this harness runs the top-level instruction.md and tests only")
	}
	if len(raw.Artifacts) > 0 {
		cfg.Artifacts = raw.Artifacts
		p.warn("artifacts", "artifacts are not collected by this harness")
	}
}

// verifier reads [verifier]. The tests always run in the agent's container.
func (p *taskParser) verifier(raw rawVerifier) VerifierConfig {
	v := VerifierConfig{
		TimeoutSec:      raw.TimeoutSec.V,
		Env:             p.expandEnv(raw.Env, "verifier.env"),
		User:            string(raw.User),
		EnvironmentMode: raw.EnvironmentMode,
	}
	switch raw.EnvironmentMode {
	case "", "shared":
		if raw.Environment != nil {
			p.warn("verifier.environment", "a separate verifier environment is not supported; the tests run in the agent's container")
		}
	case "separate":
		p.warn("verifier.environment_mode", "environment_mode = \"separate\" is not supported; the tests run in the agent's container")
	default:
		p.fail("verifier.environment_mode", fmt.Sprintf("verifier.environment_mode: must be \"shared\" or \"separate\", not %q", raw.EnvironmentMode))
	}
	return v
}

// environment reads [environment], folding the deprecated size strings
// into their _mb keys.
func (p *taskParser) environment(re rawEnv) EnvConfig {
	env := EnvConfig{
		BuildTimeoutSec: re.BuildTimeoutSec.V,
		DockerImage:     re.DockerImage,
		CPUs:            re.CPUs.V,
		MemoryMB:        re.MemoryMB.V,
		StorageMB:       re.StorageMB.V,
		AllowInternet:   true, // Harbor's default
		Env:             p.expandEnv(re.Env, "environment.env"),
		Workdir:         re.Workdir,
		GPUs:            re.GPUs.V,
		GPUTypes:        re.GPUTypes,
		SkillsDir:       re.SkillsDir,
		MCPServers:      re.MCPServers,
	}
	if re.AllowInternet != nil {
		env.AllowInternet = *re.AllowInternet
	}
	env.OS = p.containerOS(re.OS)
	if env.GPUs > 0 {
		p.warn("environment.gpus", fmt.Sprintf("gpus = %d requested; containers here get no GPUs", env.GPUs))
	}
	if re.Workdir != "" && !strings.HasPrefix(re.Workdir, "/") {
		p.fail("environment.workdir", fmt.Sprintf("environment.workdir: must be an absolute path in the container, not %q", re.Workdir))
	}
	env.MemoryMB = p.legacySize("memory", re.Memory, re.MemoryMB)
	env.StorageMB = p.legacySize("storage", re.Storage, re.StorageMB)
	p.mcpServers(env.MCPServers)
	env.Healthcheck = p.healthcheck(re.Healthcheck)
	return env
}

// containerOS checks environment.os; empty means linux.
func (p *taskParser) containerOS(name string) string {
	switch name {
	case "":
		return "linux"
	case "linux":
	case "windows":
		p.warn("environment.os", "os = \"windows\": this harness runs Linux containers only")
	default:
		p.fail("environment.os", fmt.Sprintf("environment.os: must be \"linux\" or \"windows\", not %q", name))
	}
	return name
}

// legacySize reconciles the deprecated size string environment.<name>
// (memory, storage) with <name>_mb and returns the size in MB to use.
func (p *taskParser) legacySize(name string, legacy sizeMB, mb count) int64 {
	if !legacy.Set {
		return mb.V
	}
	key := "environment." + name
	if mb.Set && mb.V != legacy.V {
		p.fail(key, fmt.Sprintf("environment: %s (%d MB) and %s_mb (%d) disagree; keep %s_mb only", name, legacy.V, name, mb.V, name))
		return mb.V
	}
	p.warn(key, fmt.Sprintf("environment.%s is deprecated; write %s_mb = %d", name, name, legacy.V))
	return legacy.V
}

// mcpServers checks each server's transport in place, reading Harbor's
// "http" as streamable-http.
func (p *taskParser) mcpServers(servers []MCPServer) {
	for i, s := range servers {
		switch s.Transport {
		case "", "sse", "streamable-http", "stdio":
		case "http":
			servers[i].Transport = "streamable-http"
		default:
			p.fail("environment.mcp_servers", fmt.Sprintf("environment.mcp_servers[%d]: transport must be sse, streamable-http or stdio, not %q", i, s.Transport))
		}
	}
	if len(servers) > 0 {
		p.warn("environment.mcp_servers", "MCP servers are not started by this harness")
	}
}

// healthcheck reads [environment.healthcheck]; nil when absent.
func (p *taskParser) healthcheck(h *rawHealthcheck) *Healthcheck {
	if h == nil {
		return nil
	}
	p.warn("environment.healthcheck", "environment healthchecks are not run by this harness")
	return &Healthcheck{
		Command:          h.Command,
		IntervalSec:      h.IntervalSec.V,
		TimeoutSec:       h.TimeoutSec.V,
		StartPeriodSec:   h.StartPeriodSec.V,
		StartIntervalSec: h.StartIntervalSec.V,
		Retries:          h.Retries.V,
	}
}

// expandEnv fills ${VAR} and ${VAR:-default} from the host. An unset
// variable without a default becomes empty, with a warning.
func expandEnv(in map[string]string, table string, lookup func(string) (string, bool), warn func(key, msg string)) map[string]string {
	if in == nil {
		return nil
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, len(in))
	for _, k := range keys {
		out[k] = envRefRE.ReplaceAllStringFunc(in[k], func(ref string) string {
			m := envRefRE.FindStringSubmatch(ref)
			val, ok := lookup(m[1])
			if m[2] != "" { // ${VAR:-default}: unset or empty takes the default
				if !ok || val == "" {
					return m[3]
				}
				return val
			}
			if !ok {
				warn(table+"."+k, fmt.Sprintf("%s.%s: ${%s} is not set in the host environment; using an empty value", table, k, m[1]))
			}
			return val
		})
	}
	return out
}

func hasPrefixKey(key string, prefixes ...string) bool {
	for _, p := range prefixes {
		if key == p || strings.HasPrefix(key, p+".") {
			return true
		}
	}
	return false
}

var (
	tomlLineErrRE = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)
	tomlKeyErrRE  = regexp.MustCompile(`^toml: \(last key "([^"]*)"\): (.*)$`)
	tomlTypeRE    = regexp.MustCompile(`^incompatible types: TOML value has type ([^;]+); destination has type (.+)$`)
	tomlTableRE   = regexp.MustCompile(`^type mismatch for .*: expected table but found (.+)$`)
)

// decodeError turns a TOML decoder error on doc into a TaskError with the
// line.
func decodeError(path, doc string, err error) *TaskError {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		// Our own value checks do not know their key; the decoder does.
		if pe.LastKey != "" && isValueError(msg) {
			msg = pe.LastKey + ": " + msg
		}
		line := errorLine(doc, pe.Position)
		if line == 0 {
			return &TaskError{Path: path, Msg: "invalid TOML: " + msg}
		}
		return &TaskError{Path: path, Line: line, Msg: msg}
	}
	s := err.Error()
	if m := tomlLineErrRE.FindStringSubmatch(s); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &TaskError{Path: path, Line: line, Msg: m[2] + ": " + friendlyType(m[3])}
	}
	if m := tomlKeyErrRE.FindStringSubmatch(s); m != nil {
		return &TaskError{Path: path, Msg: m[1] + ": " + friendlyType(m[2])}
	}
	return &TaskError{Path: path, Msg: strings.TrimPrefix(s, "toml: ")}
}

// errorLine is the line of an error's first byte. The decoder's own line
// count has already moved on when the error is the newline that ends a
// line (an unclosed table header), so the byte offset decides.
func errorLine(doc string, pos toml.Position) int {
	if pos.Line == 0 || pos.Start < 0 || pos.Start > len(doc) {
		return pos.Line
	}
	return strings.Count(doc[:pos.Start], "\n") + 1
}

// isValueError reports whether a ParseError message came from one of the
// UnmarshalTOML checks above rather than from the TOML syntax.
func isValueError(msg string) bool {
	for _, p := range []string{"must ", "cannot read size", "size "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func friendlyType(msg string) string {
	var want, got string
	if m := tomlTypeRE.FindStringSubmatch(msg); m != nil {
		want = map[string]string{"string": "a string", "boolean": "true or false", "integer": "a whole number", "float": "a number"}[m[2]]
		if want == "" {
			want = m[2]
		}
		got = m[1]
	} else if m := tomlTableRE.FindStringSubmatch(msg); m != nil {
		want, got = "a table", m[1]
	} else {
		return msg
	}
	if g, ok := goTypeNames[got]; ok {
		got = g
	}
	return fmt.Sprintf("must be %s, not %s", want, got)
}

// goTypeNames names the Go types of decoded TOML values in TOML's words.
var goTypeNames = map[string]string{
	"string":             "a string",
	"bool":               "a boolean",
	"int64":              "an integer",
	"float64":            "a float",
	"map[string]any":     "a table",
	"[]any":              "an array",
	"[]map[string]any":   "an array of tables",
	"time.Time":          "a date-time",
	"toml.LocalDate":     "a date",
	"toml.LocalTime":     "a time",
	"toml.LocalDatetime": "a date-time",
}

// keyLines maps each dotted key (and table header) of a TOML document to
// the line where it first appears. It is a light scan for messages only:
// the decoder has already checked the syntax.
func keyLines(doc string) map[string]int {
	out := map[string]int{}
	table := ""
	for i, line := range strings.Split(doc, "\n") {
		s := strings.TrimSpace(stripComment(line))
		if s == "" {
			continue
		}
		if strings.HasPrefix(s, "[") {
			name := strings.Trim(s, "[] \t")
			table = joinKey(splitKey(name))
			if _, ok := out[table]; !ok {
				out[table] = i + 1
			}
			continue
		}
		eq := strings.Index(s, "=")
		if eq <= 0 {
			continue
		}
		parts := splitKey(strings.TrimSpace(s[:eq]))
		if len(parts) == 0 {
			continue
		}
		full := joinKey(parts)
		if table != "" {
			full = table + "." + full
		}
		if _, ok := out[full]; !ok {
			out[full] = i + 1
		}
	}
	return out
}

func stripComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '#':
			return line[:i]
		}
	}
	return line
}

func splitKey(s string) []string {
	var parts []string
	for _, p := range strings.Split(s, ".") {
		p = strings.TrimSpace(p)
		p = strings.Trim(p, `"'`)
		if p == "" {
			return nil
		}
		parts = append(parts, p)
	}
	return parts
}

func joinKey(parts []string) string { return strings.Join(parts, ".") }
