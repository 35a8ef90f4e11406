package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mediated-coevo/harness/llm"
)

// Answer is one scripted answer of a Scripted provider: the assistant's
// content, or a failed call when Err is set.
type Answer struct {
	Content string
	Err     error
}

// ErrNoAnswer is what a Scripted provider returns once its answers run out.
var ErrNoAnswer = errors.New("llmtest: no scripted answer left")

// requestLog keeps every request a fake provider received, in order.
type requestLog struct {
	mu   sync.Mutex
	reqs []llm.Request
}

func (l *requestLog) record(req llm.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, req)
}

// Requests returns every request received so far, in order.
func (l *requestLog) Requests() []llm.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]llm.Request(nil), l.reqs...)
}

// Count is the number of requests received so far.
func (l *requestLog) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// Where returns the requests keep accepts, in order.
func (l *requestLog) Where(keep func(llm.Request) bool) []llm.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []llm.Request
	for _, r := range l.reqs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// ByKind returns the requests of one kind, in order.
func (l *requestLog) ByKind(kind llm.Kind) []llm.Request {
	return l.Where(func(r llm.Request) bool { return r.Kind == kind })
}

// ByCaller returns the requests charged to one caller (ledger path), in order.
func (l *requestLog) ByCaller(caller string) []llm.Request {
	return l.Where(func(r llm.Request) bool { return r.Caller == caller })
}

// Scripted is an in-process llm.Provider standing in for a real model: each
// call gets the next scripted answer, and every request is recorded. It is
// safe for concurrent use; concurrent calls take answers in the order their
// requests are recorded.
type Scripted struct {
	requestLog
	// Usage is what every successful answer reports (zero unless set).
	Usage llm.Usage

	mu      sync.Mutex
	answers []Answer
}

// NewScripted is a provider answering with the given contents, in order.
func NewScripted(replies ...string) *Scripted {
	s := &Scripted{}
	for _, r := range replies {
		s.answers = append(s.answers, Answer{Content: r})
	}
	return s
}

// Push queues more answers after those already scripted.
func (s *Scripted) Push(answers ...Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, answers...)
}

// Pending is the number of scripted answers not yet used.
func (s *Scripted) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.answers)
}

// Complete records req and returns the next answer; once the answers run out
// it returns an error wrapping ErrNoAnswer.
func (s *Scripted) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(req)
	if len(s.answers) == 0 {
		return llm.Response{}, fmt.Errorf("%s call from %q: %w", req.Kind, req.Caller, ErrNoAnswer)
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	if a.Err != nil {
		return llm.Response{}, a.Err
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: a.Content}, Usage: s.Usage}, nil
}

// Offline is false: a scripted provider stands in for a real model.
func (s *Scripted) Offline() bool { return false }

// Want is what a test case expects of code that calls a Scripted provider:
// how many calls it makes, and how it fails. Err is matched with errors.Is,
// ErrText as part of the error's text; with neither set the code must succeed.
type Want struct {
	Calls   int
	Err     error
	ErrText string
}

// Check fails t unless the provider received want.Calls requests and err is
// what want expects. It reports whether the code succeeded, so the test goes
// on to check its result; a wanted error ends the check with false.
func (s *Scripted) Check(t testing.TB, err error, want Want) bool {
	t.Helper()
	if n := s.Count(); n != want.Calls {
		t.Errorf("calls = %d, want %d", n, want.Calls)
	}
	switch {
	case want.Err != nil:
		if !errors.Is(err, want.Err) {
			t.Fatalf("err = %v, want %v", err, want.Err)
		}
		return false
	case want.ErrText != "":
		if err == nil || !strings.Contains(err.Error(), want.ErrText) {
			t.Fatalf("err = %v, want one saying %q", err, want.ErrText)
		}
		return false
	case err != nil:
		t.Fatal(err)
		return false
	}
	return true
}

// Recorder wraps a provider and records every request before passing it on.
// It is safe for concurrent use when Inner is.
type Recorder struct {
	requestLog
	Inner llm.Provider
}

// Complete records req and answers it with Inner.
func (r *Recorder) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	r.record(req)
	return r.Inner.Complete(ctx, req)
}

// Offline is Inner's.
func (r *Recorder) Offline() bool { return r.Inner.Offline() }

// SpentClient is a client of p whose ledger is already out of tokens: every
// call is refused with an error wrapping llm.ErrBudgetExhausted before it
// reaches p.
func SpentClient(p llm.Provider, role string) *llm.Client {
	l := llm.NewLedger(llm.Limits{MaxTokens: 1})
	l.Charge("earlier", llm.Usage{InputTokens: 1, Calls: 1})
	return &llm.Client{Provider: p, Ledger: l, Role: role}
}

// RequestText is everything a request shows the model, one message per line.
func RequestText(req llm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

// JSONText is v encoded as JSON, for scripting a structured answer. It
// panics when v cannot be encoded, which is a mistake in the test itself.
func JSONText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("llmtest: encode %T as JSON: %v", v, err))
	}
	return string(b)
}
