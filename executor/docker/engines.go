package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
)

// Engines is the sandbox backend on several Docker engines
// ([[executor_runtime.docker_hosts]]): each trial is placed on an engine with
// a free place, and its task image is built there (an unchanged one is
// reused, as on a single engine). A base image an engine lacks is copied to
// it from another engine that has it. It is safe for concurrent use.
type Engines struct {
	engines []*engine
	// slots caps containers alive at once across every engine
	// (max_containers); nil means no cap.
	slots chan struct{}
	// copies serializes copying one image to one engine.
	copies keyedMutex

	mu sync.Mutex
	// freed is closed, and replaced, whenever a place frees up.
	freed chan struct{}
}

// engine is one engine of Engines and what runs on it.
type engine struct {
	b        *Backend
	host     string // as configured: what traces and messages name
	capacity int
	busy     int             // trials placed here and not yet closed
	warm     map[string]bool // tasks whose images this engine has had ready
}

// NewEngines connects to every engine of rt.DockerHosts. It fails, naming
// the engine, when one does not answer: a run must not silently lose the
// capacity it was planned with.
func NewEngines(ctx context.Context, rt config.ExecutorRuntime) (*Engines, error) {
	if len(rt.DockerHosts) == 0 {
		return nil, errors.New("no engines: [[executor_runtime.docker_hosts]] lists none")
	}
	p := &Engines{freed: make(chan struct{})}
	if rt.MaxContainers > 0 {
		p.slots = make(chan struct{}, rt.MaxContainers)
	}
	for i, h := range rt.DockerHosts {
		one := rt
		one.DockerHost, one.DockerHosts = h.Host, nil
		// The engine's capacity bounds its containers; Engines itself
		// keeps max_containers across all of them.
		one.MaxContainers = h.Capacity
		b, err := New(ctx, one)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("engine %d of docker_hosts (%s): %w", i+1, h.Host, err)
		}
		b.copyIn = p.copyImage
		p.engines = append(p.engines, &engine{b: b, host: h.Host, capacity: h.Capacity, warm: map[string]bool{}})
	}
	return p, nil
}

// Hosts are the engines' addresses, in configuration order.
func (p *Engines) Hosts() []string {
	out := make([]string, len(p.engines))
	for i, e := range p.engines {
		out[i] = e.host
	}
	return out
}

// Host names the engines, for messages: their addresses joined by ", ".
func (p *Engines) Host() string { return strings.Join(p.Hosts(), ", ") }

// Close releases every engine's connections. Containers are not touched.
func (p *Engines) Close() error {
	var errs []error
	for _, e := range p.engines {
		errs = append(errs, e.b.Close())
	}
	return errors.Join(errs...)
}

// EnsureImage checks only that there is a task: which engine runs a trial
// is decided when its sandbox starts, and StartSandbox gets the image onto
// that engine. The sandbox reports the image (executor.Placed).
func (p *Engines) EnsureImage(ctx context.Context, task *benchmarks.Task) (string, bool, error) {
	if task == nil {
		return "", false, &executor.EnvError{Op: "ensure image", Err: errors.New("no task given")}
	}
	return "", false, nil
}

// StartSandbox places the trial on an engine with a free place (waiting
// for one), gets the task's image there and starts the trial's container on
// it. Failures are *executor.EnvError naming the engine.
func (p *Engines) StartSandbox(ctx context.Context, spec executor.ContainerSpec) (executor.ClosableSandbox, error) {
	if spec.Task == nil {
		return nil, &executor.EnvError{Op: "start container", Err: errors.New("the spec needs a task")}
	}
	op := "start container for task " + spec.Task.ID
	waitStart := time.Now()
	releaseSlot, err := p.acquireSlot(ctx)
	if err != nil {
		return nil, &executor.EnvError{Op: op, Err: fmt.Errorf("wait for a free container slot (max_containers %d): %w", cap(p.slots), err)}
	}
	e, err := p.place(ctx, spec.Task.ID)
	if err != nil {
		releaseSlot()
		return nil, &executor.EnvError{Op: op, Err: fmt.Errorf("wait for an engine with a free place: %w", err)}
	}
	release := func() { p.unplace(e); releaseSlot() }
	queued := time.Since(waitStart)
	t0 := time.Now()
	image, _, err := e.b.EnsureImage(ctx, spec.Task)
	build := time.Since(t0)
	if err == nil {
		p.mu.Lock()
		e.warm[spec.Task.ID] = true
		p.mu.Unlock()
		spec.Image = image
		var c *Container
		if c, err = e.b.Start(ctx, spec); err == nil {
			return &placedContainer{Container: c, release: release, queued: queued,
				placement: executor.Placement{Engine: e.host, Image: image, Build: build}}, nil
		}
	}
	release()
	var envErr *executor.EnvError
	if errors.As(err, &envErr) {
		return nil, &executor.EnvError{Op: envErr.Op + " on engine " + e.host, Err: envErr.Err, Log: envErr.Log}
	}
	return nil, &executor.EnvError{Op: op + " on engine " + e.host, Err: err}
}

func (p *Engines) acquireSlot(ctx context.Context) (release func(), err error) {
	if p.slots == nil {
		return func() {}, nil
	}
	select {
	case p.slots <- struct{}{}:
		return func() { <-p.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// place takes a place on an engine for a trial of task, waiting until one
// is free.
func (p *Engines) place(ctx context.Context, task string) (*engine, error) {
	for {
		p.mu.Lock()
		e := pick(p.engines, task)
		if e != nil {
			e.busy++
			p.mu.Unlock()
			return e, nil
		}
		freed := p.freed
		p.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// unplace frees a trial's place and wakes the trials waiting for one.
func (p *Engines) unplace(e *engine) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.busy--
	close(p.freed)
	p.freed = make(chan struct{})
}

// pick chooses among the engines with a free place: one that already has
// the task's image ready (no build), else the least loaded by the share of
// its capacity in use, the first listed on a tie. Nil when all are full.
func pick(engines []*engine, task string) *engine {
	var best *engine
	for _, e := range engines {
		if e.busy >= e.capacity {
			continue
		}
		switch {
		case best == nil:
			best = e
		case e.warm[task] != best.warm[task]:
			if e.warm[task] {
				best = e
			}
		case e.busy*best.capacity < best.busy*e.capacity:
			best = e
		}
	}
	return best
}

// copyImage copies ref to dst from the first other engine that has it,
// streaming the image as `docker save | docker load` would, through the
// API. It reports whether an engine had it.
func (p *Engines) copyImage(ctx context.Context, dst *Backend, ref string) (bool, error) {
	unlock, err := p.copies.lock(ctx, dst.addr+"\x00"+ref)
	if err != nil {
		return false, fmt.Errorf("wait for another copy of image %s to %s: %w", ref, dst.addr, err)
	}
	defer unlock()
	// Another trial may have copied it while this one waited.
	if ok, err := dst.imageExists(ctx, ref); err != nil || ok {
		return ok, err
	}
	for _, e := range p.engines {
		if e.b == dst {
			continue
		}
		if ok, err := e.b.imageExists(ctx, ref); err != nil || !ok {
			continue // an engine that cannot be asked has nothing to give
		}
		if err := transferImage(ctx, e.b.cli, dst.cli, ref); err != nil {
			return false, fmt.Errorf("copy image %s from engine %s to engine %s: %w", ref, e.host, dst.addr, err)
		}
		ok, err := dst.imageExists(ctx, ref)
		if err == nil && !ok {
			err = fmt.Errorf("copy image %s from engine %s to engine %s: the load ended but the image is missing", ref, e.host, dst.addr)
		}
		return ok, err
	}
	return false, nil
}

// transferImage streams ref from one engine's image store into another's.
// A failed load arrives as an error message in the response stream.
func transferImage(ctx context.Context, from, to *client.Client, ref string) error {
	rc, err := from.ImageSave(ctx, []string{ref})
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	defer rc.Close()
	resp, err := to.ImageLoad(ctx, rc, client.ImageLoadWithQuiet(true))
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read the load's output: %w", err)
		}
		if m.Error != nil {
			return fmt.Errorf("load: %s", m.Error.Message)
		}
	}
}

// placedContainer is a container on one engine of Engines: closing it
// frees its place there.
type placedContainer struct {
	*Container
	once      sync.Once
	release   func()
	placement executor.Placement
	queued    time.Duration // waiting for a container slot and an engine's place
}

// QueueWait is how long the trial waited for a container slot and a place
// on an engine, plus any wait inside the engine's own backend: queueing,
// which the trace records apart from setup.
func (c *placedContainer) QueueWait() time.Duration { return c.queued + c.Container.QueueWait() }

// Placement says where the container runs (executor.Placed).
func (c *placedContainer) Placement() executor.Placement { return c.placement }

// Close removes the container and frees its place; it is idempotent.
func (c *placedContainer) Close(ctx context.Context) error {
	err := c.Container.Close(ctx)
	c.once.Do(c.release)
	return err
}

// RemoveLeftovers removes, on every engine, what earlier processes of a run
// left (see Backend.RemoveLeftovers).
func (p *Engines) RemoveLeftovers(ctx context.Context, runID, row string) (executor.Leftovers, error) {
	var total executor.Leftovers
	var errs []error
	for _, e := range p.engines {
		n, err := e.b.RemoveLeftovers(ctx, runID, row)
		total.Containers += n.Containers
		total.Networks += n.Networks
		total.Volumes += n.Volumes
		if err != nil {
			errs = append(errs, fmt.Errorf("engine %s: %w", e.host, err))
		}
	}
	return total, errors.Join(errs...)
}

// GC runs Backend.GC on every engine. With more than one engine, each entry
// of the report starts with the engine's address.
func (p *Engines) GC(ctx context.Context, opts GCOptions) (GCReport, error) {
	var out GCReport
	var errs []error
	for _, e := range p.engines {
		rep, err := e.b.GC(ctx, opts)
		prefix := ""
		if len(p.engines) > 1 {
			prefix = e.host + ": "
		}
		for _, l := range []struct{ dst, src *[]string }{{&out.Containers, &rep.Containers}, {&out.Images, &rep.Images},
			{&out.Kept, &rep.Kept}, {&out.Networks, &rep.Networks}, {&out.Volumes, &rep.Volumes}} {
			for _, s := range *l.src {
				*l.dst = append(*l.dst, prefix+s)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("engine %s: %w", e.host, err))
		}
	}
	return out, errors.Join(errs...)
}
