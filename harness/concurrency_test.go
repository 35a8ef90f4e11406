package harness

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// spanTrials records when each trial of its inner runner started and ended.
type spanTrials struct {
	inner TrialRunner
	mu    sync.Mutex
	spans [][2]time.Time
}

func (s *spanTrials) Run(ctx context.Context, spec executor.TrialSpec) *executor.Trace {
	start := time.Now()
	tr := s.inner.Run(ctx, spec)
	s.mu.Lock()
	s.spans = append(s.spans, [2]time.Time{start, time.Now()})
	s.mu.Unlock()
	return tr
}

// maxOverlap is the most spans open at one instant; an end at the same
// instant as a start closes first.
func maxOverlap(spans [][2]time.Time) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, s := range spans {
		edges = append(edges, edge{s[0], 1}, edge{s[1], -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	open, most := 0, 0
	for _, e := range edges {
		open += e.delta
		most = max(most, open)
	}
	return most
}

func TestMaxOverlap(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name  string
		spans [][2]time.Time
		want  int
	}{
		{"none", nil, 0},
		{"one after another", [][2]time.Time{{at(0), at(10)}, {at(10), at(20)}}, 1},
		{"three nested", [][2]time.Time{{at(0), at(30)}, {at(5), at(25)}, {at(10), at(20)}}, 3},
		{"two pairs", [][2]time.Time{{at(0), at(10)}, {at(5), at(15)}, {at(20), at(30)}, {at(25), at(35)}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := maxOverlap(tt.spans); got != tt.want {
				t.Errorf("maxOverlap = %d; want %d", got, tt.want)
			}
		})
	}
}

// A matrix at -j N runs up to N rows of up to N tasks each, but never more
// than N trials at once, across all its rows.
func TestMatrixCapsTrialsInFlight(t *testing.T) {
	for _, j := range []int{1, 2} {
		cfg := testConfig(t, nil)
		o := PlanOptions{Tasks: []string{"a", "b", "c"}, Rows: BaselineRows()[:3], Iterations: 2, Seeds: []int64{7},
			Concurrency: j, OutDir: t.TempDir()}
		ex, ft := testMatrix(t, cfg, o, false)
		ft.delay = 30 * time.Millisecond
		spans := &spanTrials{inner: ft}
		ex.trials = spans
		// The progress events count what the status line shows as trials
		// in flight: a trial still waiting for its turn is not one.
		var mu sync.Mutex
		started, reported := 0, 0
		ex.opts.Events = func(e Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e.Kind {
			case EventTrialStart:
				started++
				reported = max(reported, started)
			case EventTrialEnd:
				started--
			}
		}
		out, err := ex.matrix(context.Background())
		if err != nil || out.Err != nil {
			t.Fatalf("-j %d: matrix: %v, %v", j, err, out.Err)
		}
		if len(spans.spans) != 3*3*2 {
			t.Fatalf("-j %d: %d trials ran; want 18", j, len(spans.spans))
		}
		if got := maxOverlap(spans.spans); got > j {
			t.Errorf("-j %d: %d trials in flight at once", j, got)
		}
		if reported > j || reported == 0 {
			t.Errorf("-j %d: progress events reported up to %d trials in flight", j, reported)
		}
	}
}

// heldTrials holds each trial until released and reports the wait it
// was handed, as executor.Runner does.
type heldTrials struct{ release chan struct{} }

func (h heldTrials) Run(ctx context.Context, spec executor.TrialSpec) *executor.Trace {
	<-h.release
	return &executor.Trace{TaskID: spec.Task.ID, Timings: executor.Timings{Queue: spec.Queued}}
}

// A trial that waits for the budget of trials in flight records the wait
// as its queue time, and its metric row carries it as queue_ms.
func TestCappedTrialsRecordQueueTime(t *testing.T) {
	const held = 60 * time.Millisecond
	inner := heldTrials{release: make(chan struct{})}
	capped := capTrials(inner, 1)
	task := &benchmarks.Task{ID: "a"}
	first := make(chan *executor.Trace)
	go func() { first <- capped.Run(context.Background(), executor.TrialSpec{Task: task}) }()
	// The first trial holds the only slot before the second asks for it.
	for len(capped.(*cappedTrials).slots) == 0 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan *executor.Trace)
	asked := make(chan struct{})
	go func() {
		close(asked)
		second <- capped.Run(context.Background(), executor.TrialSpec{Task: task})
	}()
	<-asked
	time.Sleep(held)
	inner.release <- struct{}{} // the first trial ends
	if q := (<-first).Timings.Queue; q > held/2 {
		t.Errorf("first trial queued %v; it had a slot at once", q)
	}
	inner.release <- struct{}{}
	tr := <-second
	if tr.Timings.Queue < held*3/4 {
		t.Errorf("second trial queued %v; want about %v, the time the first held the slot", tr.Timings.Queue, held)
	}
	var row rundir.MetricRow
	fillTraceColumns(&row, tr)
	if row.QueueMS == nil || row.TrialMS == nil || *row.QueueMS != tr.Timings.Queue.Milliseconds() || *row.TrialMS != 0 {
		t.Errorf("metric row queue_ms %v, trial_ms %v; want %d and 0", row.QueueMS, row.TrialMS, tr.Timings.Queue.Milliseconds())
	}
}
