package llmtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mediated-coevo/harness/llm"
)

var errBoom = errors.New("boom")

func TestScripted(t *testing.T) {
	usage := llm.Usage{InputTokens: 10, OutputTokens: 5}
	tests := []struct {
		name     string
		replies  []string
		push     []Answer
		usage    llm.Usage
		calls    int
		want     []string // content of each successful answer, in order
		wantErrs []error  // error of each call, in order (nil for success)
	}{
		{name: "answers in order", replies: []string{"one", "two"}, calls: 2,
			want: []string{"one", "two"}, wantErrs: []error{nil, nil}},
		{name: "pushed answers come after the scripted ones", replies: []string{"one"}, push: []Answer{{Content: "two"}}, calls: 2,
			want: []string{"one", "two"}, wantErrs: []error{nil, nil}},
		{name: "an error answer fails that call only", push: []Answer{{Err: errBoom}, {Content: "after"}}, calls: 2,
			want: []string{"after"}, wantErrs: []error{errBoom, nil}},
		{name: "running out fails with ErrNoAnswer", replies: []string{"only"}, calls: 2,
			want: []string{"only"}, wantErrs: []error{nil, ErrNoAnswer}},
		{name: "no answers at all", calls: 1, wantErrs: []error{ErrNoAnswer}},
		{name: "answers report the set usage", replies: []string{"x"}, usage: usage, calls: 1,
			want: []string{"x"}, wantErrs: []error{nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewScripted(tt.replies...)
			s.Usage = tt.usage
			s.Push(tt.push...)
			if s.Offline() {
				t.Errorf("Offline() = true, want false: a scripted provider stands in for a real model")
			}
			var got []string
			for i := range tt.calls {
				req := llm.Request{Caller: fmt.Sprintf("caller-%d", i), Kind: kindPlan}
				resp, err := s.Complete(context.Background(), req)
				if !errors.Is(err, tt.wantErrs[i]) || (err != nil) != (tt.wantErrs[i] != nil) {
					t.Errorf("call %d: err = %v, want %v", i, err, tt.wantErrs[i])
				}
				if err != nil {
					continue
				}
				if resp.Message.Role != llm.RoleAssistant || resp.Usage != tt.usage {
					t.Errorf("call %d: role %q usage %+v, want assistant and %+v", i, resp.Message.Role, resp.Usage, tt.usage)
				}
				got = append(got, resp.Message.Content)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("contents = %q, want %q", got, tt.want)
			}
			reqs := s.Requests()
			if s.Count() != tt.calls || len(reqs) != tt.calls {
				t.Fatalf("Count() = %d, Requests() has %d, want %d", s.Count(), len(reqs), tt.calls)
			}
			for i, r := range reqs {
				if r.Caller != fmt.Sprintf("caller-%d", i) {
					t.Errorf("request %d is from %q: requests are not recorded in order", i, r.Caller)
				}
			}
			if s.Pending() != 0 {
				t.Errorf("Pending() = %d, want 0", s.Pending())
			}
		})
	}
}

func TestScriptedConcurrentCallsTakeEachAnswerOnce(t *testing.T) {
	const n = 32
	var replies []string
	for i := range n {
		replies = append(replies, fmt.Sprint(i))
	}
	s := NewScripted(replies...)
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := s.Complete(context.Background(), llm.Request{Kind: kindAdvice})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			got[i] = resp.Message.Content
		})
	}
	wg.Wait()
	slices.Sort(got)
	want := slices.Clone(replies)
	slices.Sort(want)
	if !slices.Equal(got, want) || s.Count() != n {
		t.Errorf("answers %q after %d calls; want each of %q once", got, s.Count(), want)
	}
}

// fakeTB records what a check reports instead of failing the test.
type fakeTB struct {
	testing.TB
	errors, fatals []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatal(args ...any) { f.fatals = append(f.fatals, fmt.Sprint(args...)) }

func TestScriptedCheck(t *testing.T) {
	tests := []struct {
		name   string
		calls  int
		err    error
		want   Want
		goOn   bool
		errors string // part of the Errorf report, "" for none
		fatal  string // part of the fatal report, "" for none
	}{
		{name: "success as wanted goes on", calls: 1, want: Want{Calls: 1}, goOn: true},
		{name: "wrong call count is reported and the check goes on", calls: 2, want: Want{Calls: 1}, goOn: true,
			errors: "calls = 2, want 1"},
		{name: "wanted error matched with errors.Is stops", err: fmt.Errorf("wrapped: %w", errBoom), want: Want{Err: errBoom}},
		{name: "a different error than wanted is fatal", err: errors.New("other"), want: Want{Err: errBoom}, fatal: "want boom"},
		{name: "no error when one is wanted is fatal", want: Want{Err: errBoom}, fatal: "err = <nil>"},
		{name: "wanted error text matched stops", err: errors.New("no proposals given"), want: Want{ErrText: "no proposals"}},
		{name: "error text missing is fatal", err: errors.New("other"), want: Want{ErrText: "no proposals"},
			fatal: `want one saying "no proposals"`},
		{name: "an unwanted error is fatal", calls: 1, err: errBoom, want: Want{Calls: 1}, fatal: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewScripted(slices.Repeat([]string{"x"}, tt.calls)...)
			for range tt.calls {
				if _, err := s.Complete(context.Background(), llm.Request{}); err != nil {
					t.Fatal(err)
				}
			}
			ftb := &fakeTB{}
			if goOn := s.Check(ftb, tt.err, tt.want); goOn != tt.goOn {
				t.Errorf("Check = %v, want %v", goOn, tt.goOn)
			}
			for _, c := range []struct {
				what, want string
				got        []string
			}{{"Errorf", tt.errors, ftb.errors}, {"fatal", tt.fatal, ftb.fatals}} {
				switch {
				case c.want == "" && len(c.got) > 0:
					t.Errorf("%s reports %q, want none", c.what, c.got)
				case c.want != "" && (len(c.got) != 1 || !strings.Contains(c.got[0], c.want)):
					t.Errorf("%s reports %q, want one saying %q", c.what, c.got, c.want)
				}
			}
		})
	}
}

// Kinds these tests label calls with; llm leaves kinds to its callers.
const (
	kindPlan   llm.Kind = "plan"
	kindAdvice llm.Kind = "advice"
)

func TestRecorder(t *testing.T) {
	tests := []struct {
		name        string
		inner       llm.Provider
		kinds       []llm.Kind
		wantOffline bool
		wantPlans   int
	}{
		{name: "passes offline answers through and keeps each request", inner: llm.NewOffline(1),
			kinds: []llm.Kind{kindPlan, kindAdvice, kindPlan}, wantOffline: true, wantPlans: 2},
		{name: "passes scripted answers through", inner: NewScripted("a", "b"),
			kinds: []llm.Kind{kindAdvice, kindAdvice}, wantOffline: false, wantPlans: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Recorder{Inner: tt.inner}
			if r.Offline() != tt.wantOffline {
				t.Errorf("Offline() = %v, want the inner provider's %v", r.Offline(), tt.wantOffline)
			}
			// The offline provider answers through the player the client attaches.
			c := (&llm.Client{Provider: r}).WithPlayer(func(int64, llm.Request) (llm.Message, error) { return llm.JSONAnswer(map[string]string{}) })
			for i, k := range tt.kinds {
				req := llm.Request{Kind: k, Caller: fmt.Sprintf("c%d", i), Seed: 1,
					Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
				if _, err := c.Complete(context.Background(), req); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			if r.Count() != len(tt.kinds) || len(r.Requests()) != len(tt.kinds) {
				t.Errorf("recorded %d requests, want %d", r.Count(), len(tt.kinds))
			}
			plans := r.ByKind(kindPlan)
			if len(plans) != tt.wantPlans {
				t.Errorf("ByKind(plan) has %d requests, want %d", len(plans), tt.wantPlans)
			}
			for _, p := range plans {
				if p.Kind != kindPlan {
					t.Errorf("ByKind(plan) returned a %s request", p.Kind)
				}
			}
			if got := r.ByCaller("c1"); len(got) != 1 || got[0].Kind != tt.kinds[1] {
				t.Errorf("ByCaller(c1) = %+v, want only the second request", got)
			}
			if got := r.ByCaller("nobody"); len(got) != 0 {
				t.Errorf("ByCaller(nobody) has %d requests, want none", len(got))
			}
			if got := r.Where(func(q llm.Request) bool { return q.Caller != "c0" }); len(got) != len(tt.kinds)-1 || got[0].Caller != "c1" {
				t.Errorf("Where(caller != c0) = %+v, want the requests after the first, in order", got)
			}
			if s, ok := tt.inner.(*Scripted); ok && s.Count() != len(tt.kinds) {
				t.Errorf("inner provider got %d requests, want %d", s.Count(), len(tt.kinds))
			}
		})
	}
}

func TestSpentClientRefusesBeforeTheProvider(t *testing.T) {
	for _, role := range []string{"planner", "mediator"} {
		t.Run(role, func(t *testing.T) {
			s := NewScripted("never used")
			c := SpentClient(s, role)
			_, err := c.Complete(context.Background(), llm.Request{Kind: kindPlan})
			if !errors.Is(err, llm.ErrBudgetExhausted) {
				t.Errorf("err = %v, want one wrapping llm.ErrBudgetExhausted", err)
			}
			if s.Count() != 0 || c.Role != role {
				t.Errorf("provider got %d calls, client role %q; want 0 calls and role %q", s.Count(), c.Role, role)
			}
		})
	}
}

func TestRequestText(t *testing.T) {
	tests := []struct {
		name string
		req  llm.Request
		want []string
	}{
		{name: "empty request", want: []string{""}},
		{name: "messages one per line", req: llm.Request{Messages: []llm.Message{{Content: "system"}, {Content: "user"}}},
			want: []string{"system\nuser\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RequestText(tt.req); !slices.Contains(tt.want, got) {
				t.Errorf("RequestText = %q, want one of %q", got, tt.want)
			}
		})
	}
}

func TestJSONText(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{name: "struct with tags", v: struct {
			Content string `json:"content"`
		}{Content: "c"}, want: `{"content":"c"}`},
		{name: "map", v: map[string]int{"a": 1}, want: `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JSONText(tt.v); got != tt.want {
				t.Errorf("JSONText = %s, want %s", got, tt.want)
			}
			if got := JSON(tt.v).Content; got != tt.want {
				t.Errorf("JSON(v).Content = %s, want %s", got, tt.want)
			}
		})
	}
	t.Run("unencodable value panics", func(t *testing.T) {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "chan int") {
				t.Errorf("recovered %v, want a panic naming the type", r)
			}
		}()
		JSONText(make(chan int))
	})
}
