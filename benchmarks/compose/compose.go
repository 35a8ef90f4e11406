// Package compose reads a task's environment/docker-compose.yaml, with the
// compose-spec library, into what a sandbox backend needs to start its
// services for one trial, and names the compose features the harness does
// not honour. It knows no container engine.
package compose

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/types"
)

// MainService is the service the agent works in, as in Harbor; every other
// service is a sidecar.
const MainService = "main"

// fileNames are the compose files a task's environment folder may hold,
// in order of preference.
var fileNames = []string{"docker-compose.yaml", "docker-compose.yml"}

// Find returns the compose file in envDir, or "" when there is none.
func Find(envDir string) string {
	for _, name := range fileNames {
		p := filepath.Join(envDir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Project is a compose file as the harness runs it.
type Project struct {
	// Path is the compose file.
	Path string
	// Main is the agent's service; nil when the file has none.
	Main *Service
	// Sidecars are the other services, each after the services it depends on.
	Sidecars []*Service
	// Volumes are the named volumes the services use, sorted; each trial
	// gets fresh ones.
	Volumes []string
	// Warnings name what the file asks for that the harness does not honour.
	Warnings []string
}

// Service is one service of a Project.
type Service struct {
	Name string
	// Build is how to build its image; nil when it runs Image as it is.
	Build *Build
	// Image is the image to run when Build is nil (never pulled).
	Image string
	// Entrypoint and Command replace the image's when not nil.
	Entrypoint, Command []string
	// Env lists KEY=VALUE, sorted.
	Env        []string
	WorkingDir string
	User       string
	// Copies are files and folders of the task's environment folder that
	// the file mounts: each trial gets its own copy, so neither the agent
	// nor a service can change the task on the host.
	Copies  []Copy
	Volumes []VolumeMount
	// Tmpfs are paths mounted as tmpfs.
	Tmpfs []string
	// Health is the service's health check; nil: the image's, if any.
	Health *Health
	// WaitCompleted says another service waits for this one to exit with 0.
	WaitCompleted bool
	// CPUs, MemoryBytes and Pids are the service's own limits (0: the
	// runtime's defaults).
	CPUs        float64
	MemoryBytes int64
	Pids        int64
	// Restart is the restart policy (no, always, on-failure, unless-stopped).
	Restart string
	// Aliases are extra names the service answers to on the trial's network.
	Aliases []string
}

// Build says how to build a service's image.
type Build struct {
	// Context is the absolute path of the build context, inside the
	// task's environment folder.
	Context string
	// Dockerfile is the Dockerfile's path relative to Context.
	Dockerfile string
	Args       map[string]*string
	Target     string
}

// Copy is a host path copied to Target before the container starts.
type Copy struct {
	Source, Target string
}

// VolumeMount mounts a named volume (Name empty: an anonymous one).
type VolumeMount struct {
	Name, Target string
	ReadOnly     bool
}

// Health is a service's health check.
type Health struct {
	Test                                          []string
	Interval, Timeout, StartPeriod, StartInterval time.Duration
	Retries                                       int
	Disable                                       bool
}

// Vars are the variables Harbor defines for its compose files, given the
// task's CPU and memory limits; the harness defines them too, so files
// written for Harbor interpolate as their authors meant.
func Vars(cpus float64, memoryMB int64) map[string]string {
	v := map[string]string{
		"CONTEXT_DIR":             ".",
		"ENV_VERIFIER_LOGS_PATH":  "/logs/verifier",
		"ENV_AGENT_LOGS_PATH":     "/logs/agent",
		"ENV_ARTIFACTS_PATH":      "/logs/artifacts",
		"HOST_VERIFIER_LOGS_PATH": "./logs/verifier",
		"HOST_AGENT_LOGS_PATH":    "./logs/agent",
		"HOST_ARTIFACTS_PATH":     "./logs/artifacts",
	}
	if cpus > 0 {
		v["CPUS"] = strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", cpus), "0"), ".")
	}
	if memoryMB > 0 {
		v["MEMORY"] = fmt.Sprintf("%dM", memoryMB)
	}
	return v
}

// Load reads the compose file in envDir (nil, nil when there is none).
// Variables are filled from vars, then from the host environment, as the
// env tables of task.toml are.
func Load(ctx context.Context, envDir string, vars map[string]string) (*Project, error) {
	p, err := load(ctx, envDir, vars)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// load is Load, except that with an error it still returns what it read
// so far (its warnings above all) when the file was found.
func load(ctx context.Context, envDir string, vars map[string]string) (*Project, error) {
	path := Find(envDir)
	if path == "" {
		return nil, nil
	}
	envDir, err := filepath.Abs(envDir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", envDir, err)
	}
	env := types.Mapping{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for k, v := range vars {
		env[k] = v
	}
	p := &Project{Path: path}
	model, warnings := prepass(path, env)
	p.Warnings = append(p.Warnings, warnings...)
	var unsupported []loader.UnsupportedAttribute
	proj, err := loader.LoadWithContext(ctx, types.ConfigDetails{
		WorkingDir:  envDir,
		ConfigFiles: []types.ConfigFile{{Filename: path, Config: model}},
		Environment: env,
	}, func(o *loader.Options) {
		o.SetProjectName("harness", true)
		o.Interpolate.Substitute = func(s string, m template.Mapping) (string, error) {
			return template.SubstituteWithOptions(s, m, template.WithoutLogging)
		}
	}, loader.WithSupportedAttributes(supportedPaths(), func(found []loader.UnsupportedAttribute) {
		unsupported = found
	}))
	for _, u := range unsupported {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s: %s is not supported by the harness and is ignored", path, u.Path))
	}
	if err != nil {
		return p, fmt.Errorf("read %s: %w", path, err)
	}
	if err := p.convert(proj, envDir); err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Validate reads the compose file in envDir, if any, and returns what
// `tasks validate` reports of it: the features the harness does not honour
// as warnings, and an error when it cannot be used at all. The warnings
// found before an error are returned with it.
func Validate(envDir string) (warnings []string, err error) {
	p, err := load(context.Background(), envDir, Vars(1, 2048))
	if p == nil {
		return nil, err
	}
	if err == nil && p.Main == nil {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s: no service named %q: the agent's container comes from environment/Dockerfile or docker_image, and every service is a sidecar", p.Path, MainService))
	}
	return p.Warnings, err
}

func (p *Project) convert(proj *types.Project, envDir string) error {
	waitCompleted := map[string]bool{}
	for _, s := range proj.Services {
		for dep, d := range s.DependsOn {
			if d.Condition == types.ServiceConditionCompletedSuccessfully {
				waitCompleted[dep] = true
			}
		}
	}
	services := map[string]*Service{}
	for _, name := range slices.Sorted(maps.Keys(proj.Services)) {
		s, err := p.service(proj.Services[name], envDir)
		if err != nil {
			return err
		}
		s.WaitCompleted = waitCompleted[name]
		services[name] = s
	}
	p.Main = services[MainService]
	order, err := startOrder(proj.Services)
	if err != nil {
		return err
	}
	for _, name := range order {
		if name != MainService {
			p.Sidecars = append(p.Sidecars, services[name])
		}
	}
	vols := map[string]bool{}
	for _, s := range services {
		for _, v := range s.Volumes {
			if v.Name != "" {
				vols[v.Name] = true
			}
		}
	}
	p.Volumes = slices.Sorted(maps.Keys(vols))
	nets := map[string]bool{}
	for _, s := range proj.Services {
		for n := range s.Networks {
			nets[n] = true
		}
	}
	if len(nets) > 1 {
		p.warn("the services use %d networks (%s); every service of a trial shares one private network", len(nets), strings.Join(slices.Sorted(maps.Keys(nets)), ", "))
	}
	return nil
}

func (p *Project) warn(format string, args ...any) {
	p.Warnings = append(p.Warnings, p.Path+": "+fmt.Sprintf(format, args...))
}

func (p *Project) service(sc types.ServiceConfig, envDir string) (*Service, error) {
	s := &Service{
		Name:       sc.Name,
		Image:      sc.Image,
		WorkingDir: sc.WorkingDir,
		User:       sc.User,
		Restart:    sc.Restart,
		Pids:       sc.PidsLimit,
		CPUs:       float64(sc.CPUS),
	}
	if sc.Build != nil {
		b, err := build(sc.Name, sc.Build, envDir)
		if err != nil {
			return nil, err
		}
		s.Build = b
	}
	if s.Build == nil && s.Image == "" {
		return nil, fmt.Errorf("service %s has neither build nor image", sc.Name)
	}
	if sc.Entrypoint != nil {
		s.Entrypoint = slices.Clone([]string(sc.Entrypoint))
	}
	if sc.Command != nil {
		s.Command = slices.Clone([]string(sc.Command))
	}
	for k, v := range sc.Environment {
		if v != nil {
			s.Env = append(s.Env, k+"="+*v)
		}
	}
	sort.Strings(s.Env)
	s.MemoryBytes = int64(sc.MemLimit)
	if d := sc.Deploy; d != nil && d.Resources.Limits != nil {
		l := d.Resources.Limits
		if c := float64(l.NanoCPUs.Value()); c > 0 {
			s.CPUs = c
		}
		if l.MemoryBytes > 0 {
			s.MemoryBytes = int64(l.MemoryBytes)
		}
		if l.Pids > 0 {
			s.Pids = l.Pids
		}
	}
	s.Tmpfs = slices.Clone([]string(sc.Tmpfs))
	for _, v := range sc.Volumes {
		p.mount(s, v, envDir)
	}
	for _, n := range slices.Sorted(maps.Keys(sc.Networks)) {
		if cfg := sc.Networks[n]; cfg != nil {
			s.Aliases = append(s.Aliases, cfg.Aliases...)
		}
	}
	if sc.HealthCheck != nil {
		s.Health = health(sc.HealthCheck)
	}
	if sc.Name == MainService {
		p.mainWarnings(sc)
	}
	return s, nil
}

// mainWarnings names what the main service asks for that the harness
// replaces: its container only keeps the sandbox alive for the agent.
func (p *Project) mainWarnings(sc types.ServiceConfig) {
	if cmd := strings.Join(append(slices.Clone([]string(sc.Entrypoint)), sc.Command...), " "); cmd != "" && !strings.Contains(cmd, "sleep") {
		p.warn("service main: its command %q does not run: the harness keeps the agent's container alive with its own", cmd)
	}
	if sc.HealthCheck != nil && !sc.HealthCheck.Disable {
		p.warn("service main: its healthcheck is not waited for: nothing of the task runs in it before the agent")
	}
}

func build(service string, bc *types.BuildConfig, envDir string) (*Build, error) {
	ctxDir := bc.Context
	if ctxDir == "" {
		ctxDir = envDir
	}
	if !filepath.IsAbs(ctxDir) {
		ctxDir = filepath.Join(envDir, ctxDir)
	}
	if !inside(envDir, ctxDir) {
		return nil, fmt.Errorf("service %s: build context %s lies outside the task's environment folder %s; the harness builds only what the task ships there", service, bc.Context, envDir)
	}
	df := bc.Dockerfile
	if df == "" {
		df = "Dockerfile"
	}
	if filepath.IsAbs(df) {
		rel, err := filepath.Rel(ctxDir, df)
		if err != nil || !inside(ctxDir, df) {
			return nil, fmt.Errorf("service %s: dockerfile %s lies outside its build context %s", service, df, ctxDir)
		}
		df = rel
	}
	if bc.DockerfileInline != "" {
		return nil, fmt.Errorf("service %s: dockerfile_inline is not supported; put the Dockerfile in the environment folder", service)
	}
	if st, err := os.Stat(filepath.Join(ctxDir, df)); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("service %s: its build context %s has no %s; add it there, name another with build.dockerfile, or run an image instead", service, ctxDir, df)
	}
	b := &Build{Context: ctxDir, Dockerfile: filepath.ToSlash(df), Target: bc.Target}
	if len(bc.Args) > 0 {
		b.Args = map[string]*string(bc.Args)
	}
	return b, nil
}

// logsDir is where the harness keeps the agent's and the verifier's logs;
// the mounts Harbor's compose files put there are the harness's business.
const logsDir = "/logs"

func (p *Project) mount(s *Service, v types.ServiceVolumeConfig, envDir string) {
	target := filepath.ToSlash(filepath.Clean(v.Target))
	if target == logsDir || strings.HasPrefix(target, logsDir+"/") {
		return
	}
	switch v.Type {
	case types.VolumeTypeBind:
		src := v.Source
		if !filepath.IsAbs(src) {
			src = filepath.Join(envDir, src)
		}
		if !inside(envDir, src) {
			p.warn("service %s: the mount of %s on %s is ignored: only files of the task's environment folder can be mounted", s.Name, v.Source, v.Target)
			return
		}
		if _, err := os.Stat(src); err != nil {
			p.warn("service %s: the mount of %s on %s is ignored: %v", s.Name, v.Source, v.Target, errors.Unwrap(err))
			return
		}
		s.Copies = append(s.Copies, Copy{Source: src, Target: target})
	case types.VolumeTypeVolume:
		s.Volumes = append(s.Volumes, VolumeMount{Name: v.Source, Target: target, ReadOnly: v.ReadOnly})
	case types.VolumeTypeTmpfs:
		s.Tmpfs = append(s.Tmpfs, target)
	default:
		p.warn("service %s: the %s mount on %s is not supported and is ignored", s.Name, v.Type, v.Target)
	}
}

func health(h *types.HealthCheckConfig) *Health {
	out := &Health{Test: slices.Clone([]string(h.Test)), Disable: h.Disable}
	d := func(p *types.Duration) time.Duration {
		if p == nil {
			return 0
		}
		return time.Duration(*p)
	}
	out.Interval, out.Timeout, out.StartPeriod, out.StartInterval = d(h.Interval), d(h.Timeout), d(h.StartPeriod), d(h.StartInterval)
	if h.Retries != nil {
		out.Retries = int(*h.Retries)
	}
	return out
}

// startOrder lists the services so that each comes after those it depends
// on; ties go by name.
func startOrder(services types.Services) ([]string, error) {
	var order []string
	state := map[string]int{} // 1: being visited, 2: done
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("services depend on each other in a cycle: %s", strings.Join(append(path, name), " -> "))
		case 2:
			return nil
		}
		state[name] = 1
		s, ok := services[name]
		if !ok {
			return fmt.Errorf("service %s depends on %s, which the file does not define", path[len(path)-1], name)
		}
		for _, dep := range slices.Sorted(maps.Keys(s.DependsOn)) {
			if err := visit(dep, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, name)
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(services)) {
		if err := visit(name, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// inside reports whether path is dir or lies below it.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
