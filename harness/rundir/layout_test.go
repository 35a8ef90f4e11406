package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The names are part of the on-disk format: readers of older directories
// depend on them, so they are spelled out here once more.
func TestLayoutNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{MetricsPartName(3), "part-00003.parquet"},
		{TracePath("a", 7), filepath.Join("artifacts", "traces", "a", "0007.json")},
		{ReportPath("a", 7), filepath.Join("artifacts", "reports", "a", "0007.json")},
		{JobDir("a", 12), filepath.Join("jobs", "a", "0012")},
		{ValidationBatchDir("b001"), filepath.Join("artifacts", "validation", "b001")},
		{ValidationTrialDir("candidate", "a", 2), filepath.Join("candidate", "a", "k2")},
		{NotePath("steer.md"), filepath.Join("notes", "steer.md")},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestParseMetricsPart(t *testing.T) {
	if it, ok := ParseMetricsPart(MetricsPartName(42)); !ok || it != 42 {
		t.Errorf("ParseMetricsPart(%q) = %d, %v", MetricsPartName(42), it, ok)
	}
	if m, _ := filepath.Match(MetricsPartPattern, MetricsPartName(1)); !m {
		t.Errorf("%q does not match %q", MetricsPartName(1), MetricsPartPattern)
	}
	if _, ok := ParseMetricsPart("summary.parquet"); ok {
		t.Error("ParseMetricsPart accepted a name it never gives")
	}
}

type rawState = State[json.RawMessage, json.RawMessage, json.RawMessage]

func TestStateRoundTripAndCorruption(t *testing.T) {
	dir := t.TempDir()
	if st, err := LoadState[json.RawMessage, json.RawMessage, json.RawMessage](dir); st != nil || err != nil {
		t.Fatalf("LoadState of an empty directory = %v, %v; want nil, nil", st, err)
	}
	st := &rawState{Version: StateVersion, RunID: "r", CompletedIteration: 2, Feedback: json.RawMessage(`{"traces":{}}`)}
	if err := st.Save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := LoadState[json.RawMessage, json.RawMessage, json.RawMessage](dir)
	var book bytes.Buffer
	if err == nil {
		err = json.Compact(&book, got.Feedback)
	}
	if err != nil || got.CompletedIteration != 2 || book.String() != `{"traces":{}}` || got.Counts == nil {
		t.Fatalf("LoadState = %+v, %v", got, err)
	}
	if p := PeekState[json.RawMessage, json.RawMessage, json.RawMessage](dir); p == nil || p.RunID != "r" {
		t.Errorf("PeekState = %+v", p)
	}

	if err := os.WriteFile(filepath.Join(dir, StateFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		if _, err := LoadState[json.RawMessage, json.RawMessage, json.RawMessage](dir); !errors.Is(err, ErrCorruptState) {
			t.Fatalf("attempt %d: LoadState = %v, want ErrCorruptState", attempt, err)
		}
	}
	if aside, _ := filepath.Glob(filepath.Join(dir, StateFile+".corrupt-*")); len(aside) != 1 {
		t.Errorf("files moved aside: %v, want one", aside)
	}
}
