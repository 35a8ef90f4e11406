package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/mediated-coevo/harness/executor"
)

// firstMarker, followed by the command's token and its exit code (or
// "skipped"), ends the first command's stdout and stderr. Both streams
// carry it: each is ordered in itself, so once both markers arrived,
// everything the command wrote before them has too.
const firstMarker = "harness: first command"

// firstScript is the container's main process when an agent's first
// command starts with it. It does what keepAlive does, and beside it, in a
// subshell, runs the command ($1 is the token, then KEY=VALUE entries up
// to "--", then the command under timeout) with the container's stdin.
//
// The subshell waits until the main process has become the keep-alive
// sleep, so that sleep comes from the image as it was built, before the
// command can replace anything (the verifier spares that process), and
// runs the command only as root; otherwise it says "skipped" and the agent
// runs its command as an exec. Builtins only, until the command starts.
// Ignored signals are no concern for the command: timeout catches HUP,
// INT, QUIT and TERM, and the command it starts gets them back.
const firstScript = `trap '' HUP INT TERM
exec 3<&0
(
  n=0
  until read -r c < /proc/$$/comm && [ "$c" = sleep ]; do
    n=$((n + 1))
    [ $n -lt 100000 ] || break
  done
  t=$1 u=
  shift
  while read -r k v r; do [ "$k" = Uid: ] && { u=$v; break; }; done < /proc/self/status
  if [ "$c" != sleep ] || [ "$u" != 0 ]; then
    printf '\n%s %s skipped\n' "` + firstMarker + `" "$t"
    printf '\n%s %s skipped\n' "` + firstMarker + `" "$t" >&2
    exit 0
  fi
  while [ "$1" != -- ]; do export "$1"; shift; done
  shift
  "$@" <&3 3<&-
  c=$?
  printf '\n%s %s %d\n' "` + firstMarker + `" "$t" "$c"
  printf '\n%s %s %d\n' "` + firstMarker + `" "$t" "$c" >&2
) &
exec sleep 2147483647 </dev/null >/dev/null 2>&1 3<&-`

// firstEntrypoint is the main process that runs first beside the
// keep-alive, under timeout as an exec would run it.
func firstEntrypoint(first *executor.FirstCommand) []string {
	secs := executor.WholeSeconds(first.Timeout)
	args := []string{"/bin/sh", "-c", firstScript, "harness-first", first.Token}
	args = append(args, first.Env...)
	args = append(args, "--", "timeout", "-k", killAfter.String(), strconv.FormatInt(secs, 10))
	return append(args, first.Cmd...)
}

// firstRun is a first command started with its container: its output, as
// read from the container's attached streams, and how it ended.
type firstRun struct {
	cmd   *executor.FirstCommand
	hj    types.HijackedResponse
	start time.Time
	limit time.Duration
	out   *markWriter
	errW  *markWriter
	// marked is closed when both streams carried the marker.
	marked chan struct{}
	// ended receives the error the streams ended with.
	ended chan error
	once  sync.Once
}

// useFirst reports whether the container of spec starts the agent's first
// command: not for compose tasks and model gateways, whose main container
// the compose file and the gateway set up.
func useFirst(spec executor.ContainerSpec) bool {
	return spec.First != nil && len(spec.First.Cmd) > 0 && spec.First.Token != "" && !spec.ModelGateway
}

// setFirst makes cfg's main process run first beside the keep-alive, with
// the container's stdin open for it once. The engine keeps no log of the
// container's output: the host reads it, capped, from the attachment, and
// a log file would grow with whatever the command writes.
func setFirst(cfg *container.Config, hc *container.HostConfig, first *executor.FirstCommand) {
	cfg.Entrypoint = firstEntrypoint(first)
	cfg.OpenStdin, cfg.StdinOnce = true, true
	cfg.AttachStdin, cfg.AttachStdout, cfg.AttachStderr = true, true, true
	hc.LogConfig = container.LogConfig{Type: "none"}
}

// attachFirst attaches to the created container's streams before it
// starts, so nothing the first command writes is lost, and feeds its
// stdin.
func (c *Container) attachFirst(ctx context.Context, first *executor.FirstCommand) error {
	t0 := time.Now()
	hj, err := c.d.cli.ContainerAttach(ctx, c.id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return fmt.Errorf("attach to the container for the agent's first command: %w", err)
	}
	// The engine client does not report hijacked calls to its tracer.
	c.d.calls.record("POST /containers/{id}/attach", t0, time.Now(), 101)
	outCap := first.OutputCap
	if outCap <= 0 {
		outCap = executor.DefaultOutputCap
	}
	f := &firstRun{cmd: first, hj: hj, limit: time.Duration(executor.WholeSeconds(first.Timeout)) * time.Second,
		marked: make(chan struct{}), ended: make(chan error, 1)}
	pat := "\n" + firstMarker + " " + first.Token + " "
	var mu sync.Mutex
	seen := 0
	mark := func() {
		mu.Lock()
		defer mu.Unlock()
		if seen++; seen == 2 {
			close(f.marked)
		}
	}
	f.out = &markWriter{w: &capWriter{max: outCap}, pat: []byte(pat), marked: mark}
	f.errW = &markWriter{w: &capWriter{max: outCap}, pat: []byte(pat), marked: mark}
	go func() {
		_, err := stdcopy.StdCopy(f.out, f.errW, hj.Reader)
		f.ended <- err
	}()
	go func() {
		if first.WriteStdin != nil {
			first.WriteStdin(hj.Conn)
		}
		hj.CloseWrite()
	}()
	c.first = f
	return nil
}

// FirstResult waits for the first command started with the container; a
// nil command means it did not run one (none was asked, or its default
// user is not root).
func (c *Container) FirstResult(ctx context.Context) (executor.ExecResult, *executor.FirstCommand, error) {
	f := c.first
	if f == nil {
		return executor.ExecResult{}, nil, nil
	}
	timer := time.NewTimer(time.Until(f.start.Add(f.limit + hostGrace)))
	defer timer.Stop()
	var ended error
	select {
	case <-f.marked:
	case ended = <-f.ended:
		f.ended <- ended
		select { // the markers may have come just before the end
		case <-f.marked:
			ended = nil
		default:
		}
	case <-timer.C:
		c.d.calls.record("RUN (first) "+executor.Clip(strings.Join(f.cmd.Cmd, " "), 40), f.start, time.Now(), 0)
		return f.result(-1, true), f.cmd, nil
	case <-ctx.Done():
		return f.result(-1, true), f.cmd, fmt.Errorf("the agent's first command: %w", ctx.Err())
	}
	c.d.calls.record("RUN (first) "+executor.Clip(strings.Join(f.cmd.Cmd, " "), 40), f.start, time.Now(), 0)
	if ended != nil || !f.out.done() || !f.errW.done() {
		if ended == nil {
			ended = errors.New("end of stream")
		}
		return f.result(-1, false), f.cmd, fmt.Errorf("the container's output ended before the agent's first command reported its exit (%v): did the container stop?", ended)
	}
	if f.out.value == "skipped" {
		return executor.ExecResult{}, nil, nil
	}
	code, err := strconv.Atoi(f.out.value)
	if err != nil {
		code = -1
	}
	return f.result(code, false), f.cmd, nil
}

// result is the first command's result once its streams said all they
// will (both markers, or the end), or when the host gave up on it.
func (f *firstRun) result(code int, abandoned bool) executor.ExecResult {
	if abandoned {
		// The streams are still being written: stop them, so the
		// buffers can be read.
		f.close()
		f.ended <- <-f.ended
	}
	if !f.out.done() || !f.errW.done() {
		f.out.flush()
		f.errW.flush()
	}
	out, errW := f.out.w.(*capWriter), f.errW.w.(*capWriter)
	res := executor.ExecResult{
		ExitCode:    code,
		Stdout:      out.String(),
		Stderr:      errW.String(),
		Truncated:   out.truncated || errW.truncated,
		StdoutBytes: out.total,
		StderrBytes: errW.total,
		Duration:    time.Since(f.start),
	}
	res.TimedOut = abandoned || executor.StoppedByTimeout(code, res.Duration, f.limit)
	return res
}

// close ends the attachment to the container's streams.
func (f *firstRun) close() {
	if f != nil {
		f.once.Do(func() { f.hj.Close() })
	}
}

// markWriter passes a stream on to w up to the line that carries pat,
// reads that line's value and drops what follows, which is not the first
// command's (processes it left in the background).
type markWriter struct {
	w      io.Writer
	pat    []byte
	marked func()
	// pend holds bytes that may begin the marker, not yet passed on.
	pend   []byte
	inMark bool
	ended  bool
	value  string
}

func (m *markWriter) done() bool { return m.ended }

// flush passes on what was held back as a possible start of the marker,
// once the stream ended without one.
func (m *markWriter) flush() {
	if !m.ended && !m.inMark {
		m.w.Write(m.pend)
	}
	m.pend = nil
}

func (m *markWriter) Write(p []byte) (int, error) {
	n := len(p)
	if m.ended {
		return n, nil
	}
	m.pend = append(m.pend, p...)
	for {
		if m.inMark {
			i := bytes.IndexByte(m.pend, '\n')
			if i < 0 {
				if len(m.pend) > 64 { // no value of ours is this long
					i = len(m.pend)
				} else {
					return n, nil
				}
			}
			m.value, m.ended, m.pend = string(m.pend[:i]), true, nil
			m.marked()
			return n, nil
		}
		if i := bytes.Index(m.pend, m.pat); i >= 0 {
			m.w.Write(m.pend[:i])
			m.pend = slices.Clone(m.pend[i+len(m.pat):])
			m.inMark = true
			continue
		}
		keep := partialSuffix(m.pend, m.pat)
		m.w.Write(m.pend[:len(m.pend)-keep])
		m.pend = slices.Clone(m.pend[len(m.pend)-keep:])
		return n, nil
	}
}

// partialSuffix is the length of the longest end of b that begins pat
// (shorter than pat).
func partialSuffix(b, pat []byte) int {
	for k := min(len(b), len(pat)-1); k > 0; k-- {
		if bytes.HasPrefix(pat, b[len(b)-k:]) {
			return k
		}
	}
	return 0
}
