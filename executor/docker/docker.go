package docker

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/cli/cli/connhelper"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/benchmarks/compose"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/internal/tartree"
)

// Labels on every container and image the harness creates. GC finds
// leftovers by LabelManaged.
const (
	LabelManaged   = "io.harness.managed"
	LabelRun       = "io.harness.run"
	LabelRow       = "io.harness.row"
	LabelTask      = "io.harness.task"
	LabelIteration = "io.harness.iteration"
	LabelTrial     = "io.harness.trial"
	// LabelOwner is "host/pid" of the harness process that made a
	// container; GC keeps containers whose owner is alive.
	LabelOwner = "io.harness.owner"
)

// DefaultPidsLimit caps a container's processes when the runtime
// configuration sets no pids_limit.
const DefaultPidsLimit = 1024

const (
	pingTimeout = 15 * time.Second
	// buildLogTail is how much of a failed build's output an EnvError keeps.
	buildLogTail = 4096
)

// Backend is the sandbox backend on a Docker Engine. It is safe for
// concurrent use by many trials.
type Backend struct {
	cli  *client.Client
	addr string // the engine's address as configured (an ssh:// one too)
	rt   config.ExecutorRuntime
	ncpu int
	// builds serializes builds of one tag, so concurrent trials of a task
	// build its image once.
	builds keyedMutex
	// slots caps live containers at rt.MaxContainers; nil means no cap.
	slots chan struct{}
	// noStorageOpt is set when the engine's storage driver is known not to
	// limit a container's disk (learned from its info when the backend is
	// made) or once the engine refused a disk limit, so no later create
	// asks for one and is refused.
	noStorageOpt atomic.Bool
	// hashes remembers build-context hashes for as long as the backend
	// lives, so the trials of a task, in every row of a matrix, hash its
	// context once while it does not change.
	hashes contextHashes
	// owner is the LabelOwner value of this process's containers.
	owner string
	// copyIn, set when the engine is one of several (Engines), copies an
	// image this engine lacks from another engine that has it, and reports
	// whether one had it; nothing can be pulled.
	copyIn func(ctx context.Context, dst *Backend, ref string) (bool, error)
	// calls receives a line per engine call when CallLogEnv names a file.
	calls *callLog
}

// New connects to the engine named by rt.DockerHost, or by DOCKER_HOST
// and the other DOCKER_* variables when that is empty, and negotiates the API
// version. It fails with a clear message when no engine answers.
func New(ctx context.Context, rt config.ExecutorRuntime) (*Backend, error) {
	calls, err := openCallLog()
	if err != nil {
		return nil, err
	}
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if calls != nil {
		opts = append(opts, client.WithTraceProvider(&callTracer{log: calls}))
	}
	if rt.DockerHost != "" {
		opts = append(opts, client.WithHost(rt.DockerHost))
	}
	addr := cmp.Or(rt.DockerHost, os.Getenv("DOCKER_HOST"))
	if strings.HasPrefix(addr, "ssh://") {
		// The engine client speaks HTTP over a socket; an ssh:// engine is
		// reached as the docker command reaches it, through
		// `docker system dial-stdio` run on the remote host over ssh.
		helper, err := connhelper.GetConnectionHelper(addr)
		if err != nil {
			calls.Close()
			return nil, fmt.Errorf("configure the Docker client for %s: %w", addr, err)
		}
		opts = append(opts, client.WithHost(helper.Host), client.WithDialContext(helper.Dialer))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		calls.Close()
		return nil, fmt.Errorf("configure the Docker client (docker_host %q, DOCKER_HOST=%q): %w",
			rt.DockerHost, os.Getenv("DOCKER_HOST"), err)
	}
	if !strings.HasPrefix(addr, "ssh://") {
		addr = cli.DaemonHost()
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	ping, err := cli.Ping(pctx)
	if err != nil {
		cli.Close()
		calls.Close()
		env := os.Getenv("DOCKER_HOST")
		if env == "" {
			env = "unset"
		}
		return nil, fmt.Errorf("cannot reach the Docker engine at %s: is it running? (DOCKER_HOST=%s): %w",
			addr, env, err)
	}
	cli.NegotiateAPIVersionPing(ping)
	info, err := cli.Info(pctx)
	if err != nil {
		cli.Close()
		calls.Close()
		return nil, fmt.Errorf("ask the Docker engine at %s for its resources: %w", addr, err)
	}
	host, _ := os.Hostname()
	d := &Backend{cli: cli, rt: rt, addr: addr, ncpu: info.NCPU, owner: ownerLabel(host, os.Getpid()), calls: calls}
	d.noStorageOpt.Store(storageOptUnsupported(info.Driver, info.DriverStatus))
	if rt.MaxContainers > 0 {
		d.slots = make(chan struct{}, rt.MaxContainers)
	}
	return d, nil
}

// storageOptUnsupported reports whether a storage driver, as the engine's
// info names it and its status, is known to refuse a container's size
// option, so that no create is sent only to be refused. It answers only
// where the engine's own drivers always refuse: fuse-overlayfs, aufs and the
// old overlay never take one, overlay2 only on xfs. Any other driver is
// asked, and a refusal is learned on the first create.
func storageOptUnsupported(driver string, status [][2]string) bool {
	switch driver {
	case "fuse-overlayfs", "aufs", "overlay":
		return true
	case "overlay2":
		for _, kv := range status {
			if kv[0] == "Backing Filesystem" {
				return kv[1] != "xfs"
			}
		}
	}
	return false
}

// Host is the engine's address, for messages.
func (d *Backend) Host() string { return d.addr }

// Close releases the client's connections. Containers are not touched.
func (d *Backend) Close() error { return errors.Join(d.cli.Close(), d.calls.Close()) }

// ImageTag is the tag of a task's image: the task id made into a valid
// repository name, and the first 16 hex digits of the build-context hash.
func ImageTag(taskID, contextHash string) string {
	if len(contextHash) > 16 {
		contextHash = contextHash[:16]
	}
	return "harness-task-" + repoComponent(taskID) + ":" + contextHash
}

var repoInvalid = regexp.MustCompile(`[^a-z0-9]+`)

// repoComponent lower-cases id and joins its runs of letters and digits with
// single dashes, which is always a valid repository path component.
func repoComponent(id string) string {
	s := strings.Trim(repoInvalid.ReplaceAllString(strings.ToLower(id), "-"), "-")
	if len(s) > 100 {
		s = strings.TrimRight(s[:100], "-")
	}
	if s == "" {
		return "task"
	}
	return s
}

// ContextHash is the sha256, in hex, over every path, type, permission bits
// and content (or link target) of the build context in dir (what its
// .dockerignore leaves), walked in lexical order.
// Modification times are left out so that a fresh checkout of an unchanged
// task keeps its image.
func ContextHash(dir string) (string, error) {
	h := sha256.New()
	io.WriteString(h, "harness-build-context-v1\x00")
	err := walkBuildContext(dir, func(rel string, d fs.DirEntry, full string) error {
		info, err := d.Info()
		if err != nil {
			return err
		}
		writeField(h, []byte(rel))
		var mode [4]byte
		binary.BigEndian.PutUint32(mode[:], uint32(info.Mode()&(fs.ModeType|fs.ModePerm)))
		h.Write(mode[:])
		switch {
		case info.Mode().IsRegular():
			f, err := os.Open(full)
			if err != nil {
				return err
			}
			defer f.Close()
			var size [8]byte
			binary.BigEndian.PutUint64(size[:], uint64(info.Size()))
			h.Write(size[:])
			if _, err := io.Copy(h, f); err != nil {
				return err
			}
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				return err
			}
			writeField(h, []byte(target))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash build context %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// writeContextTar writes a build context as a tar stream: what its
// .dockerignore excludes is left out.
func writeContextTar(w io.Writer, root string) error {
	return tartree.WriteUnder(w, root, "", walkBuildContext)
}

// EnsureImage returns the image a task's trials run in. As in Harbor, a
// task's docker_image is its environment when the engine has it (nothing is
// ever pulled). Otherwise the image is built: from the build of the main
// service of environment/docker-compose.yaml when it has one, else from
// environment/Dockerfile, and tagged by ImageTag over ContextHash (folded
// with the ids of its base images present on the engine); an existing tag
// is reused (built=false). The images of the compose file's other services
// are built the same way. Failures are *EnvError.
func (d *Backend) EnsureImage(ctx context.Context, task *benchmarks.Task) (image string, built bool, err error) {
	if task == nil {
		return "", false, &executor.EnvError{Op: "ensure image", Err: errors.New("no task given")}
	}
	proj, err := d.loadCompose(ctx, task)
	if err != nil {
		return "", false, err
	}
	image, built, err = d.mainImage(ctx, task, proj)
	if err != nil || proj == nil {
		return image, built, err
	}
	for _, s := range proj.Sidecars {
		if _, b, err := d.serviceImage(ctx, task, s); err != nil {
			return "", false, err
		} else if b {
			built = true
		}
	}
	return image, built, nil
}

// mainImage is EnsureImage for the agent's container.
func (d *Backend) mainImage(ctx context.Context, task *benchmarks.Task, proj *compose.Project) (string, bool, error) {
	envDir := filepath.Join(task.Dir, "environment")
	op := "build image for task " + task.ID
	if ref := task.Config.Environment.DockerImage; ref != "" {
		ok, err := d.haveImage(ctx, ref)
		if err != nil {
			return "", false, &executor.EnvError{Op: "find image for task " + task.ID, Err: err}
		}
		if ok {
			return ref, false, nil
		}
	}
	if proj != nil && proj.Main != nil && proj.Main.Build != nil {
		return d.ensureBuild(ctx, task, task.ID, buildSpecOf(proj.Main.Build))
	}
	if _, err := os.Stat(filepath.Join(envDir, "Dockerfile")); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return "", false, &executor.EnvError{Op: op, Err: err}
		}
		if ref := task.Config.Environment.DockerImage; ref != "" {
			return d.localImage(ctx, task.ID, ref)
		}
		if proj != nil && proj.Main != nil && proj.Main.Image != "" {
			return d.localImage(ctx, task.ID, proj.Main.Image)
		}
		return "", false, &executor.EnvError{Op: op, Err: fmt.Errorf(
			"%s has no environment/Dockerfile and task.toml sets no [environment] docker_image: add one of them", task.Dir)}
	}
	return d.ensureBuild(ctx, task, task.ID, buildSpec{Context: envDir, Dockerfile: "Dockerfile"})
}

// serviceImage is the image of a compose sidecar: built like the main
// image, or named by the file and present on the engine.
func (d *Backend) serviceImage(ctx context.Context, task *benchmarks.Task, s *compose.Service) (string, bool, error) {
	if s.Build != nil {
		return d.ensureBuild(ctx, task, task.ID+"-"+s.Name, buildSpecOf(s.Build))
	}
	img, _, err := d.localImage(ctx, task.ID, s.Image)
	if err != nil {
		return "", false, &executor.EnvError{Op: "find the image of service " + s.Name + " of task " + task.ID, Err: errors.Unwrap(err)}
	}
	return img, false, nil
}

// buildSpec is what one image is built from.
type buildSpec struct {
	Context    string
	Dockerfile string // relative to Context
	Args       map[string]*string
	Target     string
}

func buildSpecOf(b *compose.Build) buildSpec {
	return buildSpec{Context: b.Context, Dockerfile: b.Dockerfile, Args: b.Args, Target: b.Target}
}

// plain reports whether b is a Dockerfile at the root of its context with
// no arguments, the only build there was before compose files: its tag
// stays what it was.
func (b buildSpec) plain() bool {
	return b.Dockerfile == "Dockerfile" && len(b.Args) == 0 && b.Target == ""
}

// hash is the build's content hash: ContextHash of its context (from
// hashes while the context is unchanged), folded with the Dockerfile's
// name, the arguments and the target when the build is not plain.
func (b buildSpec) hash(hashes *contextHashes) (string, error) {
	sum, err := hashes.hash(b.Context)
	if err != nil || b.plain() {
		return sum, err
	}
	h := sha256.New()
	writeField(h, []byte(sum))
	writeField(h, []byte(b.Dockerfile))
	writeField(h, []byte(b.Target))
	for _, k := range slices.Sorted(maps.Keys(b.Args)) {
		writeField(h, []byte(k))
		if v := b.Args[k]; v != nil {
			writeField(h, []byte("="+*v))
		} else {
			writeField(h, nil)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ensureBuild returns the image of b tagged for name, building it unless
// the tag exists. Concurrent trials build one tag once.
func (d *Backend) ensureBuild(ctx context.Context, task *benchmarks.Task, name string, b buildSpec) (string, bool, error) {
	op := "build image for task " + task.ID
	if name != task.ID {
		op = "build image " + name + " for task " + task.ID
	}
	sum, err := b.hash(&d.hashes)
	if err != nil {
		return "", false, &executor.EnvError{Op: op, Err: err}
	}
	bases, err := d.baseImageIDs(ctx, b)
	if err != nil {
		return "", false, &executor.EnvError{Op: op, Err: err}
	}
	tag := ImageTag(name, withBaseImages(sum, bases))
	if ok, err := d.imageExists(ctx, tag); err != nil {
		return "", false, &executor.EnvError{Op: op, Err: err}
	} else if ok {
		return tag, false, nil
	}
	unlock, err := d.builds.lock(ctx, tag)
	if err != nil {
		return "", false, &executor.EnvError{Op: op, Err: fmt.Errorf("wait for another build of %s: %w", tag, err)}
	}
	defer unlock()
	// Another trial may have built it while this one waited.
	if ok, err := d.imageExists(ctx, tag); err != nil {
		return "", false, &executor.EnvError{Op: op, Err: err}
	} else if ok {
		return tag, false, nil
	}
	timeout := executor.BuildTimeout(task, d.rt)
	bctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	logTail, err := d.build(bctx, task.ID, b, tag)
	if err != nil {
		if bctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			err = fmt.Errorf("build did not finish within %s (build_timeout_sec): %w", timeout, err)
		}
		if hint := d.missingBaseImages(ctx, b); hint != "" {
			err = fmt.Errorf("%w; %s", err, hint)
		}
		return "", false, &executor.EnvError{Op: op, Err: err, Log: logTail}
	}
	return tag, true, nil
}

func (d *Backend) localImage(ctx context.Context, taskID, ref string) (string, bool, error) {
	ok, err := d.haveImage(ctx, ref)
	if err != nil {
		return "", false, &executor.EnvError{Op: "find image for task " + taskID, Err: err}
	}
	if !ok {
		return "", false, &executor.EnvError{Op: "find image for task " + taskID, Err: fmt.Errorf(
			"docker_image %q is not present on the engine and images are never pulled: load or build it first (docker load, docker build -t %s)", ref, ref)}
	}
	return ref, false, nil
}

// haveImage is imageExists that, on an engine of several, first copies a
// missing image from another engine that has it.
func (d *Backend) haveImage(ctx context.Context, ref string) (bool, error) {
	ok, err := d.imageExists(ctx, ref)
	if err != nil || ok || d.copyIn == nil {
		return ok, err
	}
	return d.copyIn(ctx, d, ref)
}

func (d *Backend) imageExists(ctx context.Context, ref string) (bool, error) {
	_, err := d.cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
}

// build sends envDir as the context of a classic-builder build and reads
// the progress stream to its end; a failed step arrives as errorDetail in an
// HTTP 200 stream, so the stream decides success. It returns the tail of the
// build output.
func (d *Backend) build(ctx context.Context, taskID string, b buildSpec, tag string) (string, error) {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeContextTar(pw, b.Context)) }()
	// Unblocks the tar writer if the request ends before reading everything.
	defer pr.CloseWithError(errors.New("build request ended"))

	resp, err := d.cli.ImageBuild(ctx, pr, build.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  b.Dockerfile,
		BuildArgs:   b.Args,
		Target:      b.Target,
		Remove:      true,
		ForceRemove: true,
		Labels:      map[string]string{LabelManaged: "1", LabelTask: taskID},
		Version:     build.BuilderV1,
	})
	if err != nil {
		return "", fmt.Errorf("start build of %s: %w", tag, err)
	}
	defer resp.Body.Close()
	log := &tailBuffer{max: buildLogTail}
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	for {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return log.String(), fmt.Errorf("read build output of %s: %w", tag, err)
		}
		if m.Error != nil {
			return log.String(), fmt.Errorf("build of %s failed: %s", tag, strings.TrimSpace(m.Error.Message))
		}
		log.WriteString(plainText(m.Stream))
		if m.Status != "" {
			log.WriteString(plainText(m.Status) + "\n")
		}
	}
	// The stream can end without an error when the connection drops; only
	// the tag's presence proves the build finished.
	ok, err := d.imageExists(ctx, tag)
	if err != nil {
		return log.String(), err
	}
	if !ok {
		return log.String(), fmt.Errorf("build output of %s ended but the image is missing", tag)
	}
	return log.String(), nil
}

var fromLine = regexp.MustCompile(`(?im)^\s*FROM\s+(?:--\S+\s+)*(\S+)`)

// fromRefs lists the image references of the Dockerfile's FROM lines,
// leaving out scratch and references built from ARGs.
func fromRefs(b buildSpec) []string {
	data, err := os.ReadFile(filepath.Join(b.Context, filepath.FromSlash(b.Dockerfile)))
	if err != nil {
		return nil
	}
	var refs []string
	for _, m := range fromLine.FindAllStringSubmatch(string(data), -1) {
		ref := m[1]
		if strings.Contains(ref, "$") || strings.EqualFold(ref, "scratch") {
			continue
		}
		refs = append(refs, ref)
	}
	return refs
}

// baseImageIDs returns "ref=id" for each base image present on the engine.
// They go into the tag so that rebuilding a base image (the locally built
// harness-base, say) rebuilds the task images on top of it. Absent refs (to
// be pulled, or names of earlier stages) are left out.
func (d *Backend) baseImageIDs(ctx context.Context, b buildSpec) ([]string, error) {
	var out []string
	for _, ref := range fromRefs(b) {
		ins, err := d.cli.ImageInspect(ctx, ref)
		if cerrdefs.IsNotFound(err) && d.copyIn != nil {
			// A base image missing here is copied from another engine
			// first, when there are several; an earlier stage's name is
			// on none.
			if ok, cerr := d.copyIn(ctx, d, ref); cerr != nil {
				return nil, cerr
			} else if ok {
				ins, err = d.cli.ImageInspect(ctx, ref)
			}
		}
		switch {
		case err == nil:
			out = append(out, ref+"="+ins.ID)
		case cerrdefs.IsNotFound(err):
		default:
			return nil, fmt.Errorf("inspect base image %s: %w", ref, err)
		}
	}
	return out, nil
}

// withBaseImages folds the base image ids into the context hash.
func withBaseImages(contextHash string, bases []string) string {
	if len(bases) == 0 {
		return contextHash
	}
	h := sha256.New()
	writeField(h, []byte(contextHash))
	for _, b := range bases {
		writeField(h, []byte(b))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// missingBaseImages names the Dockerfile's base images that the engine does
// not have, the usual cause of a failed build where nothing can be pulled.
func (d *Backend) missingBaseImages(ctx context.Context, b buildSpec) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var missing []string
	for _, ref := range fromRefs(b) {
		if ok, err := d.imageExists(ctx, ref); err == nil && !ok {
			missing = append(missing, ref)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	if d.copyIn != nil {
		return fmt.Sprintf("base image %s is present on none of the engines of docker_hosts; build or load it on one "+
			"of them and it is copied to the others (harness-base:bookworm comes from benchmarks/baseimage/build.sh)", strings.Join(missing, ", "))
	}
	return fmt.Sprintf("base image %s is not present on the engine; build or load it first "+
		"(harness-base:bookworm comes from benchmarks/baseimage/build.sh)", strings.Join(missing, ", "))
}

// terminalControl matches the escape sequences build steps write for a
// terminal (colours, cursor moves, titles): CSI and OSC sequences and lone
// two-byte escapes.
var terminalControl = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)

// plainText strips terminal control sequences, so build output reads as
// plain text in errors and logs; carriage returns (progress bars redrawing
// a line) become line ends.
func plainText(s string) string {
	s = terminalControl.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max     int
	buf     []byte
	dropped bool
}

func (t *tailBuffer) WriteString(s string) {
	t.buf = append(t.buf, s...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
}

func (t *tailBuffer) String() string {
	s := strings.ToValidUTF8(string(t.buf), "")
	if t.dropped {
		return "…" + s
	}
	return s
}

// keyedMutex is a set of mutexes by key whose Lock respects a context.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	ch   chan struct{}
	refs int
}

func (k *keyedMutex) lock(ctx context.Context, key string) (unlock func(), err error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*keyedEntry)
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{ch: make(chan struct{}, 1)}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
