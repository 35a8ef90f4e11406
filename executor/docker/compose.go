package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/benchmarks/compose"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/internal/tartree"
)

// LabelService names the compose service a sidecar container runs.
const LabelService = "io.harness.service"

const (
	// healthWait bounds the wait for a sidecar to become healthy or to
	// finish, beyond what its own health check allows.
	healthWait = 2 * time.Minute
	// sidecarLogTail is how much of a failed sidecar's output an error keeps.
	sidecarLogTail = 2048
)

// loadCompose reads the task's compose file, if any, with the variables
// Harbor defines for it.
func (d *Backend) loadCompose(ctx context.Context, task *benchmarks.Task) (*compose.Project, error) {
	env := task.Config.Environment
	cpus, mem := env.CPUs, env.MemoryMB
	if cpus <= 0 {
		cpus = d.rt.CPUs
	}
	if mem <= 0 {
		mem = d.rt.MemoryMB
	}
	p, err := compose.Load(ctx, filepath.Join(task.Dir, "environment"), compose.Vars(cpus, int64(mem)))
	if err != nil {
		return nil, &executor.EnvError{Op: "read the compose file of task " + task.ID, Err: err}
	}
	return p, nil
}

// stack is what a compose task's trial runs besides the agent's
// container: a private network, named volumes and the sidecars. Everything
// carries the trial's labels, so gc finds what a crash leaves.
type stack struct {
	d          *Backend
	network    string   // id
	volumes    []string // names
	containers []string // ids, in start order
	netName    string
	volNames   map[string]string // compose name -> engine name
}

// startStack creates the trial's network and volumes and starts the
// sidecars in order, each one healthy (or finished, when another waits
// for that) before the next. On error it removes what it made.
func (d *Backend) startStack(ctx context.Context, spec executor.ContainerSpec, proj *compose.Project) (st *stack, err error) {
	st = &stack{d: d, volNames: map[string]string{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, st.close(ctx))
			st = nil
		}
	}()
	labels := containerLabels(spec)
	labels[LabelOwner] = d.owner
	// Made under a context that cancellation cannot cut short, like the
	// containers: the engine may finish after the client gave up.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	prefix := "harness-" + repoComponent(spec.TrialID) + "-" + newMarker()[:8]
	env := spec.Task.Config.Environment
	internet := env.AllowInternet && d.rt.Network == NetworkTask
	st.netName = prefix
	created, err := d.cli.NetworkCreate(cctx, st.netName, network.CreateOptions{Driver: "bridge", Internal: !internet, Labels: labels})
	if err != nil {
		return st, fmt.Errorf("create the trial's network: %w", err)
	}
	st.network = created.ID
	for _, name := range proj.Volumes {
		v, err := d.cli.VolumeCreate(cctx, volume.CreateOptions{Name: prefix + "-" + repoComponent(name), Labels: labels})
		if err != nil {
			return st, fmt.Errorf("create volume %s: %w", name, err)
		}
		st.volumes = append(st.volumes, v.Name)
		st.volNames[name] = v.Name
	}
	for _, s := range proj.Sidecars {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if err := st.startSidecar(ctx, spec, s, labels); err != nil {
			return st, fmt.Errorf("service %s: %w", s.Name, err)
		}
	}
	return st, nil
}

func (st *stack) startSidecar(ctx context.Context, spec executor.ContainerSpec, s *compose.Service, labels map[string]string) error {
	d := st.d
	image, _, err := d.serviceImage(ctx, spec.Task, s)
	if err != nil {
		return err
	}
	cfg := &container.Config{
		Image:       image,
		Env:         slices.Clone(s.Env),
		WorkingDir:  s.WorkingDir,
		User:        s.User,
		Hostname:    s.Name,
		Labels:      map[string]string{LabelService: s.Name},
		Healthcheck: healthConfig(s.Health),
	}
	for k, v := range labels {
		cfg.Labels[k] = v
	}
	if s.Entrypoint != nil {
		cfg.Entrypoint = slices.Clone(s.Entrypoint)
	}
	if s.Command != nil {
		cfg.Cmd = slices.Clone(s.Command)
	}
	hc := st.hostConfig(s, d.rt.CPUs, d.rt.MemoryMB)
	if s.Restart != "" {
		// "on-failure:3" names the mode and the most retries.
		mode, count, _ := strings.Cut(s.Restart, ":")
		hc.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyMode(mode)}
		if n, err := strconv.Atoi(count); err == nil {
			hc.RestartPolicy.MaximumRetryCount = n
		}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	created, err := d.cli.ContainerCreate(cctx, cfg, hc, st.endpoint(s.Name, s.Aliases), nil, "")
	if err != nil {
		return fmt.Errorf("create container: %w", err)
	}
	st.containers = append(st.containers, created.ID)
	if err := copyIn(ctx, d, created.ID, s.Copies); err != nil {
		return err
	}
	if err := d.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	return st.waitReady(ctx, created.ID, s)
}

// hostConfig gives a service the same lockdown as the agent's container,
// with its own limits where the file sets them and the runtime's otherwise.
func (st *stack) hostConfig(s *compose.Service, cpus float64, memMB int64) *container.HostConfig {
	pids := st.d.rt.PidsLimit
	if pids <= 0 {
		pids = DefaultPidsLimit
	}
	if s.Pids > 0 && s.Pids < pids {
		pids = s.Pids
	}
	init := true
	hc := &container.HostConfig{
		NetworkMode: container.NetworkMode(st.netName),
		Init:        &init,
		SecurityOpt: []string{"no-new-privileges"},
		CapDrop:     []string{"ALL"},
		CapAdd:      slices.Clone(sandboxCaps),
		Resources:   container.Resources{PidsLimit: &pids},
	}
	if s.CPUs > 0 {
		cpus = s.CPUs
	}
	if st.d.ncpu > 0 && cpus > float64(st.d.ncpu) {
		cpus = float64(st.d.ncpu)
	}
	if cpus > 0 {
		hc.NanoCPUs = int64(cpus * 1e9)
	}
	mem := memMB << 20
	if s.MemoryBytes > 0 {
		mem = s.MemoryBytes
	}
	if mem > 0 {
		hc.Memory, hc.MemorySwap = mem, mem
	}
	st.addMounts(hc, s)
	return hc
}

func (st *stack) addMounts(hc *container.HostConfig, s *compose.Service) {
	for _, v := range s.Volumes {
		m := mount.Mount{Type: mount.TypeVolume, Target: v.Target, ReadOnly: v.ReadOnly}
		if v.Name != "" {
			m.Source = st.volNames[v.Name]
		}
		hc.Mounts = append(hc.Mounts, m)
	}
	for _, t := range s.Tmpfs {
		if hc.Tmpfs == nil {
			hc.Tmpfs = map[string]string{}
		}
		target, opts, _ := strings.Cut(t, ":")
		hc.Tmpfs[target] = opts
	}
}

// endpoint puts a container on the trial's network under its service
// name and aliases.
func (st *stack) endpoint(name string, aliases []string) *network.NetworkingConfig {
	return &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
		st.netName: {Aliases: append([]string{name}, aliases...)},
	}}
}

// applyMain puts the agent's container on the trial's network and gives it
// the environment, mounts and settings the compose file's main service
// asks for. task.toml's [environment] env wins over the file's.
func (st *stack) applyMain(cfg *container.Config, hc *container.HostConfig, main *compose.Service, taskEnv map[string]string) *network.NetworkingConfig {
	hc.NetworkMode = container.NetworkMode(st.netName)
	if main == nil {
		return st.endpoint(compose.MainService, nil)
	}
	env := map[string]string{}
	for _, kv := range main.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, v := range taskEnv {
		env[k] = v
	}
	cfg.Env = executor.EnvList(env)
	if cfg.WorkingDir == "" {
		cfg.WorkingDir = main.WorkingDir
	}
	if main.User != "" {
		cfg.User = main.User
	}
	st.addMounts(hc, main)
	return st.endpoint(compose.MainService, main.Aliases)
}

// waitReady waits until a started sidecar is ready: finished with exit
// code 0 when another service waits for that, healthy when it has a health
// check (its own or its image's), else running.
func (st *stack) waitReady(ctx context.Context, id string, s *compose.Service) error {
	limit := healthWait
	if h := s.Health; h != nil {
		limit += h.StartPeriod + time.Duration(max(h.Retries, 3))*(max(h.Interval, time.Second)+max(h.Timeout, time.Second))
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	delay := 100 * time.Millisecond
	for {
		ins, err := st.d.cli.ContainerInspect(wctx, id)
		if err != nil {
			return st.notReady(ctx, id, fmt.Errorf("inspect container: %w", err))
		}
		state := ins.State
		switch {
		case state == nil:
		case s.WaitCompleted && !state.Running && state.Status != "created":
			if state.ExitCode != 0 {
				return st.notReady(ctx, id, fmt.Errorf("exited with code %d; a service waits for it to succeed", state.ExitCode))
			}
			return nil
		case s.WaitCompleted:
		case !state.Running:
			return st.notReady(ctx, id, fmt.Errorf("exited with code %d right after it started", state.ExitCode))
		case state.Health == nil || state.Health.Status == "healthy":
			return nil
		case state.Health.Status == "unhealthy":
			return st.notReady(ctx, id, errors.New("its health check failed"))
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return st.notReady(ctx, id, fmt.Errorf("not ready within %s", limit))
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

// notReady adds the tail of a sidecar's output to err.
func (st *stack) notReady(ctx context.Context, id string, err error) error {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	rc, lerr := st.d.cli.ContainerLogs(lctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "20"})
	if lerr != nil {
		return err
	}
	defer rc.Close()
	data, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
	tail := strings.TrimSpace(strings.ToValidUTF8(stripLogFrames(data), ""))
	if len(tail) > sidecarLogTail {
		tail = "…" + tail[len(tail)-sidecarLogTail:]
	}
	if tail == "" {
		return err
	}
	return fmt.Errorf("%w\n--- its output (tail) ---\n%s", err, tail)
}

// stripLogFrames drops the 8-byte headers the engine puts before each
// chunk of a container's log when it has no terminal.
func stripLogFrames(b []byte) string {
	var out strings.Builder
	for len(b) >= 8 && b[0] <= 2 && b[1] == 0 && b[2] == 0 && b[3] == 0 {
		n := int(b[4])<<24 | int(b[5])<<16 | int(b[6])<<8 | int(b[7])
		b = b[8:]
		n = min(n, len(b))
		out.Write(b[:n])
		b = b[n:]
	}
	out.Write(b)
	return out.String()
}

// close removes the sidecars, the volumes and the network; it works with
// a cancelled context and is safe to call on a partly made stack.
func (st *stack) close(ctx context.Context) error {
	if st == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	var errs []error
	for _, id := range slices.Backward(st.containers) {
		err := st.d.cli.ContainerRemove(rctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !removalUnderway(err) {
			errs = append(errs, fmt.Errorf("remove sidecar %s: %w", executor.ShortID(id), err))
		}
	}
	st.containers = nil
	for _, v := range st.volumes {
		if err := st.d.cli.VolumeRemove(rctx, v, true); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", v, err))
		}
	}
	st.volumes = nil
	if st.network != "" {
		if err := st.d.cli.NetworkRemove(rctx, st.network); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", st.netName, err))
		}
		st.network = ""
	}
	return errors.Join(errs...)
}

func healthConfig(h *compose.Health) *container.HealthConfig {
	if h == nil {
		return nil
	}
	if h.Disable {
		return &container.HealthConfig{Test: []string{"NONE"}}
	}
	return &container.HealthConfig{Test: slices.Clone(h.Test), Interval: h.Interval, Timeout: h.Timeout,
		StartPeriod: h.StartPeriod, StartInterval: h.StartInterval, Retries: h.Retries}
}

// copyIn copies each file or folder of copies into the created container
// id at its target, before the container starts.
func copyIn(ctx context.Context, d *Backend, id string, copies []compose.Copy) error {
	for _, c := range copies {
		name := strings.TrimPrefix(path.Clean(c.Target), "/")
		if name == "" {
			return fmt.Errorf("copy %s: the target %q names no path", c.Source, c.Target)
		}
		info, err := os.Lstat(c.Source)
		if err != nil {
			return fmt.Errorf("copy %s: %w", c.Source, err)
		}
		walk := tartree.Walk
		prefix := name
		if !info.IsDir() {
			// One file, written under its target's name.
			walk = func(root string, fn tartree.WalkFunc) error {
				return fn(name, fs.FileInfoToDirEntry(info), root)
			}
			prefix = ""
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(tartree.WriteUnder(pw, c.Source, prefix, walk)) }()
		err = d.cli.CopyToContainer(ctx, id, "/", pr, container.CopyToContainerOptions{})
		pr.CloseWithError(errors.New("copy request ended"))
		if err != nil {
			return fmt.Errorf("copy %s to %s: %w", c.Source, c.Target, err)
		}
	}
	return nil
}
