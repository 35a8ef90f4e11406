package docker

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// CallLogEnv names a file that, when set, receives one line for every call
// the backend makes to the Docker engine: when it started (Unix time in
// milliseconds), how long it took until its response was read to the end
// (milliseconds), the HTTP status and the call, with ids shortened to {id}.
// It is for measuring where a trial's time goes (docs/performance.md); the
// harness never reads it.
const CallLogEnv = "HARNESS_DOCKER_CALL_LOG"

// callLog writes the call lines. A nil *callLog records nothing.
type callLog struct {
	mu  sync.Mutex
	w   io.WriteCloser
	err error
}

// openCallLog opens the file CallLogEnv names for appending; with the
// variable unset it returns nil.
func openCallLog() (*callLog, error) {
	p := os.Getenv(CallLogEnv)
	if p == "" {
		return nil, nil
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the Docker call log %s (%s): %w", p, CallLogEnv, err)
	}
	return &callLog{w: f}, nil
}

// apiVersion and hexID make call names comparable across engines and
// containers.
var (
	apiVersion = regexp.MustCompile(`^/v[0-9.]+/`)
	hexID      = regexp.MustCompile(`[0-9a-f]{64}|sha256:[0-9a-f]{64}`)
)

// record writes one line for the call name that ran from start to end; a
// status of 0 means none arrived (an error, or a hijacked stream).
func (l *callLog) record(name string, start, end time.Time, status int) {
	if l == nil {
		return
	}
	if method, p, ok := strings.Cut(name, " "); ok {
		name = method + " " + hexID.ReplaceAllString(apiVersion.ReplaceAllString(p, "/"), "{id}")
	}
	line := fmt.Sprintf("%.1f %.1f %d %s\n", float64(start.UnixMicro())/1000,
		float64(end.Sub(start).Microseconds())/1000, status, name)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		_, l.err = io.WriteString(l.w, line)
	}
}

// Close closes the file and reports the first failed write.
func (l *callLog) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.w.Close(); l.err == nil && err != nil {
		l.err = err
	}
	if l.err != nil {
		return fmt.Errorf("write the Docker call log (%s): %w", CallLogEnv, l.err)
	}
	return nil
}

// callTracer is the tracer provider the engine client reports its requests
// to: each span is one call, ended when the response body is read or
// closed. Only the call log uses it.
type callTracer struct {
	embedded.TracerProvider
	log *callLog
}

func (t *callTracer) Tracer(string, ...trace.TracerOption) trace.Tracer { return callSpans{log: t.log} }

// callSpans starts the spans of callTracer.
type callSpans struct {
	embedded.Tracer
	log *callLog
}

func (t callSpans) Start(ctx context.Context, name string, _ ...trace.SpanStartOption) (context.Context, trace.Span) {
	s := &callSpan{log: t.log, name: name, start: time.Now()}
	return trace.ContextWithSpan(ctx, s), s
}

// callSpan is one call in flight.
type callSpan struct {
	noop.Span
	log   *callLog
	start time.Time

	mu     sync.Mutex
	name   string
	status int
	ended  bool
}

func (s *callSpan) IsRecording() bool { return true }

func (s *callSpan) SetName(name string) {
	s.mu.Lock()
	s.name = name
	s.mu.Unlock()
}

// SetAttributes keeps the response's status code.
func (s *callSpan) SetAttributes(kv ...attribute.KeyValue) {
	for _, a := range kv {
		if a.Key == "http.response.status_code" || a.Key == "http.status_code" {
			s.mu.Lock()
			s.status = int(a.Value.AsInt64())
			s.mu.Unlock()
		}
	}
}

func (s *callSpan) End(...trace.SpanEndOption) {
	end := time.Now()
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	name, status := s.name, s.status
	s.mu.Unlock()
	s.log.record(name, s.start, end, status)
}
