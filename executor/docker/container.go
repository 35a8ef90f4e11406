package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/mediated-coevo/harness/benchmarks/compose"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/internal/tartree"
)

// NetworkTask is the runtime network setting that lets a task that allows
// internet access have it; any other value keeps every container offline.
const NetworkTask = "task"

const (
	// killAfter is how long the in-container timeout waits after SIGTERM
	// before SIGKILL.
	killAfter = 5 * time.Second
	// hostGrace is how long past the in-container limit the host waits
	// before it stops reading: enough for SIGTERM, SIGKILL and teardown.
	hostGrace = killAfter + 5*time.Second
	// removeTimeout bounds container removal, which runs even after the
	// trial's context is cancelled.
	removeTimeout = 2 * time.Minute
	// execMarkerEnv tags every process an exec starts, so the host can kill
	// the whole tree when it gives up on the exec.
	execMarkerEnv = "HARNESS_EXEC"
)

// keepAlive is the container's main process (under the engine's init): it
// does nothing until the container is removed. It replaces the image's
// entrypoint, so images with a server or a shell as entrypoint behave alike.
// It ignores HUP, INT and TERM (ignored signals stay ignored across exec),
// so an agent's "pkill sleep" does not stop the container before the
// verifier runs. It is one sleep with no children: the verifier spares it
// and nothing else, and a sleep started later from a binary the agent
// replaced could not pass for it.
var keepAlive = []string{"/bin/sh", "-c", "trap '' HUP INT TERM; exec sleep 2147483647"}

// sandboxCaps are the only capabilities a container keeps (CapDrop ALL
// removes the rest). They are what a root shell in an ordinary image needs to
// install packages and handle files of other users:
//   - CHOWN, FOWNER, FSETID, DAC_OVERRIDE: root may own, chmod, read and
//     write any file in the container (package managers, tar, pip, make);
//   - SETUID, SETGID: drop to another user (apt's _apt sandbox, su, runuser);
//   - KILL: signal processes running as other users (stopping a server);
//   - NET_BIND_SERVICE: a task server may listen on a port below 1024.
//
// Left out on purpose: NET_RAW (raw sockets, spoofing), MKNOD, SYS_CHROOT,
// SETPCAP, SETFCAP and AUDIT_WRITE, which tasks do not need.
var sandboxCaps = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID", "KILL", "NET_BIND_SERVICE"}

// containerLabels are the labels of the container started for s.
func containerLabels(s executor.ContainerSpec) map[string]string {
	l := map[string]string{
		LabelManaged:   "1",
		LabelRun:       s.RunID,
		LabelRow:       s.Row,
		LabelIteration: strconv.Itoa(s.Iteration),
		LabelTrial:     s.TrialID,
	}
	if s.Task != nil {
		l[LabelTask] = s.Task.ID
	}
	return l
}

// containerConfig builds the create request for spec. hostCPUs (0: unknown)
// caps the CPU limit, since the engine refuses more CPUs than it has; the
// warnings say when it did.
func containerConfig(spec executor.ContainerSpec, rt config.ExecutorRuntime, hostCPUs int) (*container.Config, *container.HostConfig, []string) {
	var warnings []string
	env := spec.Task.Config.Environment
	cfg := &container.Config{
		Image:      spec.Image,
		Entrypoint: slices.Clone(keepAlive),
		Cmd:        []string{}, // the image's CMD would be appended to the entrypoint
		WorkingDir: env.Workdir,
		Env:        executor.EnvList(env.Env),
		Labels:     containerLabels(spec),
	}
	cpus := env.CPUs
	if cpus <= 0 {
		cpus = rt.CPUs
	}
	if hostCPUs > 0 && cpus > float64(hostCPUs) {
		warnings = append(warnings, fmt.Sprintf("cpus = %g lowered to %d: the engine has only %d CPUs", cpus, hostCPUs, hostCPUs))
		cpus = float64(hostCPUs)
	}
	memMB := env.MemoryMB
	if memMB <= 0 {
		memMB = rt.MemoryMB
	}
	pids := rt.PidsLimit
	if pids <= 0 {
		pids = DefaultPidsLimit
	}
	netMode := container.NetworkMode(network.NetworkNone)
	if env.AllowInternet && rt.Network == NetworkTask {
		netMode = "" // the engine's default network
	}
	init := true
	hc := &container.HostConfig{
		NetworkMode: netMode,
		Init:        &init,
		SecurityOpt: []string{"no-new-privileges"},
		CapDrop:     []string{"ALL"},
		CapAdd:      slices.Clone(sandboxCaps),
		Resources: container.Resources{
			PidsLimit: &pids,
		},
	}
	if cpus > 0 {
		hc.NanoCPUs = int64(math.Round(cpus * 1e9))
	}
	if memMB > 0 {
		hc.Memory = memMB << 20
		hc.MemorySwap = hc.Memory // no swap on top of the limit
	}
	if env.StorageMB > 0 {
		hc.StorageOpt = map[string]string{"size": fmt.Sprintf("%dM", env.StorageMB)}
	}
	return cfg, hc, warnings
}

// storageOptRefused reports whether the engine refused a create request
// because its storage driver cannot limit a container's writable layer
// (overlay2 outside xfs with pquota, fuse-overlayfs, vfs, ...). Drivers word
// the refusal differently and some report it as a server error, not a bad
// request, but every one names the storage option.
func storageOptRefused(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "storage-opt") || strings.Contains(msg, "storage opt")
}

// Start creates and starts a fresh container for one trial. The caller must
// Close it on every path. With rt.MaxContainers set, Start waits for a free
// slot.
func (d *Backend) Start(ctx context.Context, spec executor.ContainerSpec) (*Container, error) {
	if spec.Task == nil || spec.Image == "" {
		return nil, &executor.EnvError{Op: "start container", Err: errors.New("the spec needs a task and an image")}
	}
	op := "start container for task " + spec.Task.ID
	waitStart := time.Now()
	release, err := d.acquireSlot(ctx)
	queued := time.Since(waitStart)
	if err != nil {
		return nil, &executor.EnvError{Op: op, Err: fmt.Errorf("wait for a free container slot (max_containers %d): %w", d.rt.MaxContainers, err)}
	}
	c, err := d.create(ctx, spec, release)
	if err != nil {
		release()
		var envErr *executor.EnvError
		if errors.As(err, &envErr) {
			return nil, err
		}
		return nil, &executor.EnvError{Op: op, Err: inWords(err)}
	}
	c.queued = queued
	if err := c.boot(ctx); err != nil {
		return nil, &executor.EnvError{Op: op, Err: errors.Join(inWords(err), c.Close(ctx))}
	}
	return c, nil
}

// create makes the container of spec, after a compose task's sidecars,
// network and volumes, so that the agent finds its services up. On error
// nothing is left behind; release is the container's slot, freed by Close.
func (d *Backend) create(ctx context.Context, spec executor.ContainerSpec, release func()) (*Container, error) {
	cfg, hc, warnings := containerConfig(spec, d.rt, d.ncpu)
	cfg.Labels[LabelOwner] = d.owner
	if d.noStorageOpt.Load() {
		hc.StorageOpt = nil
	}
	var st *stack
	var netCfg *network.NetworkingConfig
	var mainCopies []compose.Copy
	proj, err := d.loadCompose(ctx, spec.Task)
	if err == nil && proj != nil {
		st, err = d.startStack(ctx, spec, proj)
		if err == nil {
			netCfg = st.applyMain(cfg, hc, proj.Main, spec.Task.Config.Environment.Env)
			if proj.Main != nil {
				mainCopies = proj.Main.Copies
			}
		}
	}
	if err == nil && proj == nil && spec.ModelGateway {
		if st, err = d.gatewayStack(ctx, spec); err == nil {
			netCfg = st.applyMain(cfg, hc, nil, nil)
		}
	}
	if err != nil {
		return nil, err
	}
	var first *executor.FirstCommand
	if proj == nil && useFirst(spec) {
		first = spec.First
		setFirst(cfg, hc, first)
	}
	// Created under a context that a cancellation cannot cut short: the
	// engine may finish creating a container after the client gave up, and
	// then nobody would know its id to remove it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancel()
	created, err := d.cli.ContainerCreate(cctx, cfg, hc, netCfg, nil, "")
	if hc.StorageOpt != nil && storageOptRefused(err) {
		// The trial still runs, without the disk limit, and says so in
		// its trace; later containers skip the refused option.
		d.noStorageOpt.Store(true)
		hc.StorageOpt = nil
		created, err = d.cli.ContainerCreate(cctx, cfg, hc, netCfg, nil, "")
	}
	if mb := spec.Task.Config.Environment.StorageMB; mb > 0 && hc.StorageOpt == nil {
		warnings = append(warnings, fmt.Sprintf("storage_mb = %d is not enforced: the engine's storage driver cannot limit a container's disk", mb))
	}
	if proj != nil {
		warnings = append(warnings, proj.Warnings...)
	}
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			err = fmt.Errorf("image %s is not present on the engine: %w", spec.Image, err)
		}
		return nil, errors.Join(err, st.close(ctx))
	}
	return &Container{d: d, id: created.ID, keep: d.rt.KeepContainers, release: release, warnings: warnings,
		stack: st, copies: mainCopies, firstCmd: first}, nil
}

// boot copies a compose task's files into the created container and starts
// it.
func (c *Container) boot(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := copyIn(ctx, c.d, c.id, c.copies); err != nil {
		return err
	}
	if c.firstCmd != nil {
		if err := c.attachFirst(ctx, c.firstCmd); err != nil {
			return err
		}
	}
	if c.first != nil {
		// Before the start call, not after: the first command begins while
		// the call is still returning, and timed from later a command its
		// in-container timeout stopped would look as if it ended early by
		// itself, an agent error rather than a timeout.
		c.first.start = time.Now()
	}
	if err := c.d.cli.ContainerStart(ctx, c.id, container.StartOptions{}); err != nil {
		return err
	}
	// A keep-alive that exits at once (no sleep in the image) would
	// otherwise surface later as a puzzling exec failure.
	ins, err := c.d.cli.ContainerInspect(ctx, c.id)
	if err != nil {
		return err
	}
	if ins.State != nil && !ins.State.Running {
		return fmt.Errorf("container exited right after start (exit code %d %s); the image needs /bin/sh and sleep",
			ins.State.ExitCode, ins.State.Error)
	}
	if ins.Config != nil {
		c.rootUser = executor.IsRootUser(ins.Config.User)
	}
	return nil
}

// DefaultUserIsRoot reports whether commands run as root unless an exec
// names another user; the verifier then saves an exec per trial.
func (c *Container) DefaultUserIsRoot() bool { return c.rootUser }

// Warnings lists what the container could not honour of its task's
// configuration, such as a disk limit the storage driver cannot enforce.
func (c *Container) Warnings() []string { return slices.Clone(c.warnings) }

// StartSandbox is Start for the executor.Backend interface.
func (d *Backend) StartSandbox(ctx context.Context, spec executor.ContainerSpec) (executor.ClosableSandbox, error) {
	c, err := d.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (d *Backend) acquireSlot(ctx context.Context) (release func(), err error) {
	if d.slots == nil {
		return func() {}, nil
	}
	select {
	case d.slots <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-d.slots }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Container is one trial's running container. It implements
// executor.Sandbox.
type Container struct {
	d       *Backend
	id      string
	keep    bool
	release func()
	// rootUser is true when commands run as root unless told otherwise.
	rootUser bool
	warnings []string
	// stack holds a compose task's sidecars, network and volumes.
	stack *stack
	// queued is how long Start waited for a container slot.
	queued time.Duration
	// copies are a compose task's files for the main container, copied in
	// before it starts.
	copies []compose.Copy
	// firstCmd is the agent's first command, which the container's main
	// process starts beside the keep-alive; first follows it once attached.
	firstCmd *executor.FirstCommand
	first    *firstRun

	closeOnce sync.Once
	closeErr  error
}

// ID is the container's id.
func (c *Container) ID() string { return c.id }

// QueueWait is how long Start waited for a free container slot
// (max_containers), which the trial records as queue time, not setup.
func (c *Container) QueueWait() time.Duration { return c.queued }

// Close force-removes the container (unless keep_containers is set) and frees
// its slot. It is idempotent and works even when ctx is already cancelled.
func (c *Container) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		defer c.release()
		defer c.first.close()
		if c.keep {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
		err := c.d.cli.ContainerRemove(rctx, c.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			c.closeErr = fmt.Errorf("remove container %s: %w", executor.ShortID(c.id), err)
		}
		// The network goes last: it cannot be removed while a container
		// is still attached.
		c.closeErr = errors.Join(c.closeErr, c.stack.close(ctx))
	})
	return c.closeErr
}

// Exec runs req.Cmd under coreutils timeout, so the limit holds inside the
// container; the host stops reading timeout+grace later in case that fails,
// and kills what the command started when it gives up or ctx ends.
func (c *Container) Exec(ctx context.Context, req executor.ExecRequest) (executor.ExecResult, error) {
	return c.exec(ctx, req, true)
}

func (c *Container) exec(ctx context.Context, req executor.ExecRequest, killOnAbandon bool) (executor.ExecResult, error) {
	if len(req.Cmd) == 0 {
		return executor.ExecResult{}, errors.New("exec: empty command")
	}
	if req.Timeout <= 0 {
		return executor.ExecResult{}, fmt.Errorf("exec %s: a timeout is required", req.Cmd[0])
	}
	secs := executor.WholeSeconds(req.Timeout)
	limit := time.Duration(secs) * time.Second
	marker := newMarker()
	what := "exec " + executor.Clip(strings.Join(req.Cmd, " "), 80)
	created, err := c.d.cli.ContainerExecCreate(ctx, c.id, execOptions(req, secs, marker))
	if err != nil {
		return executor.ExecResult{}, fmt.Errorf("%s in container %s: %w", what, executor.ShortID(c.id), inWords(err))
	}
	start := time.Now()
	hj, err := c.d.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return executor.ExecResult{}, fmt.Errorf("%s in container %s: attach: %w", what, executor.ShortID(c.id), inWords(err))
	}
	defer hj.Close()
	// The engine client does not report hijacked calls to its tracer.
	c.d.calls.record("POST /exec/{id}/start", start, time.Now(), 101)
	defer func() {
		first, _, _ := strings.Cut(strings.Join(req.Cmd, " "), "\n")
		c.d.calls.record("RUN "+executor.Clip(first, 40), start, time.Now(), 0)
	}()
	s := startStreams(hj, req)
	end := c.awaitExec(ctx, created.ID, s, limit+hostGrace)
	if end.abandoned || end.exited {
		// The context does not govern a hijacked stream, and after the
		// exit only the command's children can still hold it: close it.
		hj.Close()
		<-s.done
	}
	if end.abandoned && killOnAbandon {
		c.killMarked(ctx, marker, req.User)
	}
	res := s.result(time.Since(start))
	switch {
	case end.ctxErr != nil:
		res.ExitCode = -1
		return res, fmt.Errorf("%s: %w", what, end.ctxErr)
	case end.streamErr != nil:
		return res, fmt.Errorf("%s: read output: %w", what, end.streamErr)
	case end.exited:
		res.ExitCode = end.code
	default:
		wait := 10 * time.Second
		if end.abandoned {
			wait = 2 * time.Second // the process may be beyond reach; do not hang on it
		}
		code, running, err := c.waitExec(ctx, created.ID, wait)
		if err != nil {
			return res, fmt.Errorf("%s: %w", what, err)
		}
		res.ExitCode = code
		if running {
			res.ExitCode = -1
		}
	}
	res.TimedOut = end.abandoned || executor.StoppedByTimeout(res.ExitCode, res.Duration, limit)
	return res, nil
}

// execOptions is the exec of req under coreutils timeout (secs), every
// process it starts tagged with marker.
func execOptions(req executor.ExecRequest, secs int64, marker string) container.ExecOptions {
	return container.ExecOptions{
		User:         req.User,
		Cmd:          append([]string{"timeout", "-k", killAfter.String(), strconv.FormatInt(secs, 10)}, req.Cmd...),
		Env:          append(slices.Clone(req.Env), execMarkerEnv+"="+marker),
		WorkingDir:   req.Dir,
		AttachStdin:  req.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
	}
}

// execStreams copies an exec's input in and its output out.
type execStreams struct {
	stdout, stderr *capWriter
	streamed       *countWriter // req.Stdout, when the caller streams stdout
	done           chan error   // the output ended (or broke)
	// read counts the bytes read from the engine, for drain.
	read atomic.Int64
}

// bytes is how much output arrived so far.
func (s *execStreams) bytes() int64 { return s.read.Load() }

// countingReader counts what passes through it into n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

func startStreams(hj types.HijackedResponse, req executor.ExecRequest) *execStreams {
	outCap := req.OutputCap
	if outCap <= 0 {
		outCap = executor.DefaultOutputCap
	}
	s := &execStreams{stdout: &capWriter{max: outCap}, stderr: &capWriter{max: outCap}, done: make(chan error, 1)}
	if req.Stdin != nil {
		go func() {
			io.Copy(hj.Conn, req.Stdin)
			hj.CloseWrite()
		}()
	}
	var outW io.Writer = s.stdout
	if req.Stdout != nil {
		s.streamed = &countWriter{w: req.Stdout}
		outW = s.streamed
	}
	go func() {
		_, err := stdcopy.StdCopy(outW, s.stderr, countingReader{hj.Reader, &s.read})
		s.done <- err
	}()
	return s
}

// result is what the streams kept, once they ended.
func (s *execStreams) result(ran time.Duration) executor.ExecResult {
	res := executor.ExecResult{
		Stdout:      s.stdout.String(),
		Stderr:      s.stderr.String(),
		Truncated:   s.stdout.truncated || s.stderr.truncated,
		StdoutBytes: s.stdout.total,
		StderrBytes: s.stderr.total,
		Duration:    ran,
	}
	if s.streamed != nil {
		res.StdoutBytes = s.streamed.n
	}
	return res
}

// execEnd is how the wait for an exec ended.
type execEnd struct {
	streamErr error // the output ended with this error
	abandoned bool  // the host's limit passed, or ctx ended
	ctxErr    error
	// exited: the command's own process exited (with code) while the
	// output stayed open, held by what it left in the background.
	exited bool
	code   int
}

// exitDrain is how long an exec's output may stay open after its process
// exited: long enough for what the process wrote to arrive, as long as it
// keeps arriving.
const exitDrain = 2 * time.Second

// awaitExec waits for the exec's output to end, its process to exit (then
// for the output to drain), the host limit or ctx.
func (c *Container) awaitExec(ctx context.Context, execID string, s *execStreams, hostLimit time.Duration) execEnd {
	timer := time.NewTimer(hostLimit)
	defer timer.Stop()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	exitC := c.watchExit(wctx, execID)
	for {
		select {
		case err := <-s.done:
			return execEnd{streamErr: err}
		case <-timer.C:
			return execEnd{abandoned: true}
		case <-ctx.Done():
			return execEnd{abandoned: true, ctxErr: ctx.Err()}
		case code := <-exitC:
			if err, ended := s.drain(ctx, timer.C); ended {
				return execEnd{streamErr: err}
			}
			return execEnd{exited: true, code: code}
		}
	}
}

// drain waits for the output to end after the exec's process exited, for
// as long as bytes keep coming and at most until stop; it reports whether
// the output ended by itself.
func (s *execStreams) drain(ctx context.Context, stop <-chan time.Time) (error, bool) {
	tick := time.NewTicker(exitDrain / 4)
	defer tick.Stop()
	last, idleSince := s.bytes(), time.Now()
	for {
		select {
		case err := <-s.done:
			return err, true
		case <-stop:
			return nil, false
		case <-ctx.Done():
			return nil, false
		case now := <-tick.C:
			if n := s.bytes(); n != last {
				last, idleSince = n, now
			} else if now.Sub(idleSince) >= exitDrain {
				return nil, false
			}
		}
	}
}

// watchExit polls the exec until its process has exited and then sends its
// exit code. The output alone cannot tell: children the command left in
// the background keep it open. It gives up silently when ctx ends or the
// engine cannot say, leaving the output and the limits to end the wait.
func (c *Container) watchExit(ctx context.Context, execID string) <-chan int {
	exitC := make(chan int, 1)
	go func() {
		delay := 100 * time.Millisecond
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			ins, err := c.d.cli.ContainerExecInspect(ctx, execID)
			if err != nil {
				return
			}
			if !ins.Running {
				exitC <- ins.ExitCode
				return
			}
			delay = min(2*delay, time.Second)
		}
	}()
	return exitC
}

// waitExec polls until the exec has stopped: right after its stream ends
// the engine can still report it running.
func (c *Container) waitExec(ctx context.Context, execID string, wait time.Duration) (code int, running bool, err error) {
	deadline := time.Now().Add(wait)
	// Polled even after ctx ends, as the exec already ran; bounded so that a
	// stuck engine cannot hold the caller.
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait+30*time.Second)
	defer cancel()
	delay := 5 * time.Millisecond
	for {
		ins, err := c.d.cli.ContainerExecInspect(ictx, execID)
		if err != nil {
			return 0, false, fmt.Errorf("inspect exec: %w", err)
		}
		if !ins.Running {
			return ins.ExitCode, false, nil
		}
		if time.Now().After(deadline) {
			return 0, true, nil
		}
		time.Sleep(delay)
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// killMarkedScript kills every process whose environment carries the
// marker: the command, its children and anything it put in the background.
const killMarkedScript = `for d in /proc/[0-9]*; do
  if tr '\0' '\n' < "$d/environ" 2>/dev/null | grep -qx "$1"; then kill -9 "${d#/proc/}" 2>/dev/null; fi
done; exit 0`

// killMarked is best effort: there is no API to kill an exec, and a failure
// here leaves the in-container timeout to finish the job. It runs as the
// exec's user: reading another user's /proc/<pid>/environ needs
// CAP_SYS_PTRACE, which containers do not get, even as root.
func (c *Container) killMarked(ctx context.Context, marker, user string) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	c.exec(kctx, executor.ExecRequest{
		Cmd:     []string{"sh", "-c", killMarkedScript, "harness-kill", execMarkerEnv + "=" + marker},
		Timeout: 10 * time.Second,
		User:    user,
	}, false)
}

func newMarker() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// capWriter keeps the first max bytes written to it and counts the rest as
// dropped, so the stream is always drained.
type capWriter struct {
	buf       bytes.Buffer
	max       int
	truncated bool
	total     int64 // bytes written, kept or not
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.total += int64(len(p))
	room := w.max - w.buf.Len()
	if len(p) > room {
		w.truncated = true
		if room > 0 {
			w.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return w.buf.Write(p)
}

func (w *capWriter) String() string { return w.buf.String() }

// countWriter passes writes on and counts their bytes.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// helper runs a small file-handling command and turns a failure into an error.
func (c *Container) helper(ctx context.Context, what string, req executor.ExecRequest) (executor.ExecResult, error) {
	if req.Timeout == 0 {
		req.Timeout = executor.FileOpTimeout
	}
	res, err := c.Exec(ctx, req)
	if err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	if res.TimedOut {
		return res, fmt.Errorf("%s: timed out after %s", what, req.Timeout)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(res.Stderr)
		if msg == "" {
			msg = "exit code " + strconv.Itoa(res.ExitCode)
		}
		return res, fmt.Errorf("%s: %s", what, executor.Clip(msg, 500))
	}
	return res, nil
}

// ReadFile returns at most max bytes of the file at p (relative paths start
// at the container's working directory), read as user.
func (c *Container) ReadFile(ctx context.Context, user, p string, max int) ([]byte, error) {
	if max <= 0 {
		max = executor.DefaultReadCap
	}
	res, err := c.helper(ctx, "read "+p, executor.ExecRequest{
		Cmd:       []string{"head", "-c", strconv.Itoa(max), "--", p},
		OutputCap: max,
		User:      user,
	})
	if err != nil {
		return nil, err
	}
	return []byte(res.Stdout), nil
}

// writeFileScript writes stdin to $1 and sets mode $2; with no $2 a file
// that exists keeps its mode (cat truncates it in place) and a new one gets
// 0644, whatever the umask.
const writeFileScript = `set -e
mkdir -p -- "$(dirname -- "$1")"
mode=$2
[ -n "$mode" ] || [ -e "$1" ] || mode=644
cat > "$1"
[ -z "$mode" ] || chmod -- "$mode" "$1"`

// WriteFile creates or replaces the file at p with data as user, creating
// parent directories, which then belong to user. A mode <= 0 keeps the mode
// of a file it replaces (an executable stays one) and gives a new file
// 0644. It streams through an exec, so it works wherever user can write.
func (c *Container) WriteFile(ctx context.Context, user, p string, data []byte, mode int64) error {
	perm := ""
	if mode > 0 {
		perm = strconv.FormatInt(mode&0o7777, 8)
	}
	_, err := c.helper(ctx, "write "+p, executor.ExecRequest{
		Cmd:   []string{"sh", "-c", writeFileScript, "harness-write", p, perm},
		Stdin: bytes.NewReader(data),
		User:  user,
	})
	return err
}

// CopyDirIn copies the contents of hostDir into dst (absolute), creating dst.
func (c *Container) CopyDirIn(ctx context.Context, hostDir, dst string) error {
	if !path.IsAbs(dst) {
		return fmt.Errorf("copy %s into the container: destination %q must be absolute", hostDir, dst)
	}
	// The stream carries dst itself as its top directory and is unpacked in
	// dst's parent, which saves an exec per copy; only a missing parent
	// (rare: /tests and /solution sit at the root) costs a mkdir, as root
	// because an image's own user may not create anything there.
	parent, name := path.Split(path.Clean(dst))
	if name == "" {
		return fmt.Errorf("copy %s into the container: destination %q names no directory", hostDir, dst)
	}
	err := c.copyTreeInto(ctx, hostDir, parent, name)
	if cerrdefs.IsNotFound(err) {
		if _, err := c.helper(ctx, "create "+parent, executor.ExecRequest{Cmd: []string{"mkdir", "-p", "--", parent}, User: "0"}); err != nil {
			return err
		}
		err = c.copyTreeInto(ctx, hostDir, parent, name)
	}
	if err != nil {
		return fmt.Errorf("copy %s into %s: %w", hostDir, dst, err)
	}
	return nil
}

func (c *Container) copyTreeInto(ctx context.Context, hostDir, parent, name string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tartree.WriteUnder(pw, hostDir, name, tartree.Walk)) }()
	err := c.d.cli.CopyToContainer(ctx, c.id, parent, pr, container.CopyToContainerOptions{})
	pr.CloseWithError(errors.New("copy request ended"))
	return err
}

// CopyOut writes the file or directory at p as a tar stream to w.
func (c *Container) CopyOut(ctx context.Context, p string, w io.Writer) error {
	rc, _, err := c.d.cli.CopyFromContainer(ctx, c.id, p)
	if err != nil {
		return fmt.Errorf("copy %s out of container %s: %w", p, executor.ShortID(c.id), err)
	}
	defer rc.Close()
	if _, err := io.Copy(w, rc); err != nil {
		return fmt.Errorf("copy %s out of container %s: %w", p, executor.ShortID(c.id), err)
	}
	return nil
}

// stopTimeout bounds stopping a container's processes before the verifier.
const stopTimeout = 2 * time.Minute

// StopProcesses stops every process in the container from outside and
// starts the container again, with its filesystem as the agent left it
// (only tmpfs mounts and /dev/shm start empty). The engine kills the
// container's init, and with it the kernel kills everything else in the
// container's process namespace: no process has to start inside, so it
// works when the agent's processes hold every process slot (a fork bomb)
// or all the memory, and none of them can dodge it by changing its name,
// user or environment. Restarting the same container is cheaper than
// committing its filesystem to an image for a fresh one, and it keeps the
// container's network, mounts and limits.
func (c *Container) StopProcesses(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	short := executor.ShortID(c.id)
	// Waiting starts before the kill so that the exit cannot be missed.
	waitC, errC := c.d.cli.ContainerWait(ctx, c.id, container.WaitConditionNotRunning)
	if err := c.d.cli.ContainerKill(ctx, c.id, "KILL"); err != nil && !killPending(err) && !cerrdefs.IsConflict(err) {
		// Conflict: it is not running (its init died), which start repairs.
		return fmt.Errorf("kill container %s: %w", short, inWords(err))
	}
	select {
	case <-waitC:
	case err := <-errC:
		if ctx.Err() != nil {
			return fmt.Errorf("container %s did not stop within %s of its kill: %w", short, stopTimeout, inWords(err))
		}
		return fmt.Errorf("wait for container %s to stop: %w", short, inWords(err))
	}
	if err := c.d.cli.ContainerStart(ctx, c.id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container %s again: %w", short, inWords(err))
	}
	ins, err := c.d.cli.ContainerInspect(ctx, c.id)
	if err != nil {
		return fmt.Errorf("inspect container %s: %w", short, inWords(err))
	}
	if ins.State == nil || !ins.State.Running {
		return fmt.Errorf("container %s did not keep running after its restart", short)
	}
	return nil
}

// killPending reports whether the engine sent the kill but gave up waiting
// for the container's exit: it waits only a couple of seconds, which a
// loaded machine tearing down a thousand processes can exceed. The exit
// still comes, and the caller's own wait, bounded by stopTimeout, sees it.
func killPending(err error) bool {
	return err != nil && strings.Contains(err.Error(), "did not receive an exit event")
}
