package executor

import (
	"context"
	"testing"
	"time"
)

// placedSandbox is a sandbox a backend of several engines started.
type placedSandbox struct {
	*fakeSandbox
	pl Placement
}

func (s placedSandbox) Placement() Placement { return s.pl }

type placingBackend struct {
	fakeBackend
	pl Placement
}

func (b *placingBackend) StartSandbox(ctx context.Context, spec ContainerSpec) (ClosableSandbox, error) {
	time.Sleep(2 * b.pl.Build) // the build is part of the start
	return placedSandbox{b.sb, b.pl}, nil
}

// The trace records where a placed trial ran and the image it ran there,
// and counts getting that image as build time, not setup.
func TestRunnerRecordsPlacement(t *testing.T) {
	pl := Placement{Engine: "unix:///run/second.sock", Image: "harness-task-fake:0123", Build: 20 * time.Millisecond}
	b := &placingBackend{fakeBackend: fakeBackend{sb: &fakeSandbox{logs: map[string]string{"reward.txt": "1"}}}, pl: pl}
	ok := funcAgent(func(ctx context.Context, in AgentInput) (AgentResult, error) { return AgentResult{}, nil })
	tr := (&Runner{Backend: b}).Run(context.Background(), TrialSpec{Task: fakeTask(t), Agent: ok})
	if tr.Status != StatusScored {
		t.Fatalf("status %s, errors %q", tr.Status, tr.Errors)
	}
	if tr.Engine != pl.Engine || tr.Image != pl.Image {
		t.Errorf("engine %q image %q, want %q and %q", tr.Engine, tr.Image, pl.Engine, pl.Image)
	}
	if tr.Timings.Build < pl.Build || tr.Timings.Setup < pl.Build || tr.Timings.Setup > tr.Timings.Total {
		t.Errorf("timings %+v: build should hold the placement's %s and setup the rest", tr.Timings, pl.Build)
	}
}

// A backend on one engine records no engine: the trace stays as it was.
func TestRunnerWithoutPlacementRecordsNoEngine(t *testing.T) {
	b := &fakeBackend{sb: &fakeSandbox{logs: map[string]string{"reward.txt": "1"}}}
	ok := funcAgent(func(ctx context.Context, in AgentInput) (AgentResult, error) { return AgentResult{}, nil })
	tr := (&Runner{Backend: b}).Run(context.Background(), TrialSpec{Task: fakeTask(t), Agent: ok})
	if tr.Engine != "" || tr.Image != "img:1" {
		t.Errorf("engine %q image %q, want none and img:1", tr.Engine, tr.Image)
	}
}
