package inspect

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// writeJSONLines writes one JSON value per line to dir/rel.
func writeJSONLines(t *testing.T, dir, rel string, values ...any) {
	t.Helper()
	var b bytes.Buffer
	for _, v := range values {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// routedRun writes a run directory whose history holds three routed items
// to student sloppy: one its batch adopted, one its batch rejected, one
// still buffered; and one entry of another kind.
func routedRun(t *testing.T, dir string) {
	t.Helper()
	writeJSONLines(t, dir, rundir.ManifestFile, rundir.Manifest{Kind: rundir.KindRun, Routing: "mediated"})
	route := func(id, task string) rundir.HistoryRecord {
		return rundir.HistoryRecord{Type: "entry", Entry: &rundir.Entry{ID: id, Role: "mediator", Kind: rundir.EntryRoute, TaskID: task,
			Iteration: 2, TrialID: "i0002-" + task, From: "diligent", To: "sloppy", Form: "note", Reason: "it scored", Content: "Write the outputs."}}
	}
	writeJSONLines(t, dir, rundir.HistoryFile,
		rundir.HistoryRecord{Type: "entry", Entry: &rundir.Entry{ID: "row/i0002/a/plan", Role: "planner", Kind: rundir.EntryPlan, TaskID: "a", Iteration: 2}},
		route("r-a", "a"), route("r-b", "b"), route("r-c", "c"))
	writeJSONLines(t, dir, rundir.SkillUpdatesFile, map[string]any{"id": "executor@sloppy/s2b001", "student": "sloppy", "proposal_ids": []string{"r-a"}},
		// The same id adopted into another student's skill says nothing of sloppy's.
		map[string]any{"id": "executor@diligent/s1b001", "student": "diligent", "proposal_ids": []string{"r-c"}})
	writeJSONLines(t, dir, rundir.RejectedFile, map[string]any{"type": "batch", "batch_id": "s2b002", "student": "sloppy", "proposals": []map[string]any{{"id": "r-b"}}})
}

func TestRoutingListsItemsWithProvenanceAndAdoption(t *testing.T) {
	dir := t.TempDir()
	routedRun(t, dir)
	items, err := Routing(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*bool{"r-a": new(true), "r-b": new(false), "r-c": nil}
	if len(items) != len(want) {
		t.Fatalf("items %+v, want the three routed ones", items)
	}
	for _, it := range items {
		w, ok := want[it.ID]
		if !ok || it.From != "diligent" || it.To != "sloppy" || it.Iteration != 2 || it.Task == "" || it.Trial != "i0002-"+it.Task || it.Reason == "" {
			t.Errorf("item %+v lacks its provenance", it)
		}
		if (w == nil) != (it.Adopted == nil) || (w != nil && *w != *it.Adopted) {
			t.Errorf("item %s adopted = %v, want %v", it.ID, it.Adopted, w)
		}
	}
	var text bytes.Buffer
	if err := WriteRoutingText(&text, items); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FROM", "diligent", "yes", "no", "pending"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

func TestRoutingOfAMatrixNamesTheRow(t *testing.T) {
	dir := t.TempDir()
	writeJSONLines(t, dir, rundir.ManifestFile, rundir.Manifest{Kind: rundir.KindMatrix, Rows: []string{"iso", "med"}})
	writeJSONLines(t, filepath.Join(dir, "iso"), rundir.ManifestFile, rundir.Manifest{Kind: rundir.KindRun})
	routedRun(t, filepath.Join(dir, "med"))
	items, err := Routing(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 || items[0].Row != "med" {
		t.Errorf("items %+v, want the med row's three", items)
	}
	empty, err := Routing(filepath.Join(dir, "iso"))
	if err != nil || empty == nil || len(empty) != 0 {
		t.Errorf("a run without routed items lists %v (%v), want an empty list", empty, err)
	}
}

func TestFollowNamesTheStudentsOfARoutedItem(t *testing.T) {
	line, err := json.Marshal(rundir.HistoryRecord{Type: "entry", Entry: &rundir.Entry{ID: "r-a", Role: "mediator", Kind: rundir.EntryRoute,
		TaskID: "a", Iteration: 2, From: "diligent", To: "sloppy"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := describeRecord(rundir.HistoryFile, line); !strings.Contains(got, "from diligent to sloppy") {
		t.Errorf("--follow shows a routed item as %q", got)
	}
}

func TestCountRoutesSumsAdoptionPerPair(t *testing.T) {
	yes, no := true, false
	items := []RoutedItem{
		{Row: "med", From: "a", To: "b", Adopted: &yes},
		{Row: "med", From: "a", To: "b", Adopted: &no},
		{Row: "med", From: "a", To: "b"},
		{Row: "med", From: "b", To: "a", Adopted: &yes},
		// The same pair in another row counts apart.
		{Row: "pool", From: "a", To: "b", Adopted: &yes},
	}
	got := CountRoutes(items)
	want := []RouteCount{
		{Row: "med", From: "a", To: "b", Items: 3, Adopted: 1, Rejected: 1, Pending: 1},
		{Row: "med", From: "b", To: "a", Items: 1, Adopted: 1},
		{Row: "pool", From: "a", To: "b", Items: 1, Adopted: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("count %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if empty := CountRoutes(nil); empty == nil || len(empty) != 0 {
		t.Errorf("no items count %v, want an empty list", empty)
	}
}
