package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// writeLines writes one JSON value per line to path.
func writeLines(t *testing.T, path string, vs ...any) {
	t.Helper()
	var b strings.Builder
	for _, v := range vs {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// route is the history record of one routed item.
func route(id, from, to, task string, it int) rundir.HistoryRecord {
	return rundir.HistoryRecord{Type: "entry", Entry: &rundir.Entry{ID: id, Role: "mediator", Kind: rundir.EntryRoute, TaskID: task,
		Iteration: it, TrialID: fmt.Sprintf("i%04d-%s", it, task), From: from, To: to, Form: "note", Reason: "reason of " + id,
		Content: "Write the outputs."}}
}

// addRouting records, in the run at dir, three items from strong to weak
// (r-a adopted, r-b rejected, r-c pending), r-d from weak to strong
// (adopted) and extra more items from strong to weak, all pending.
func addRouting(t *testing.T, dir string, extra int) {
	t.Helper()
	recs := []any{route("r-a", "strong", "weak", "a", 2), route("r-b", "strong", "weak", "b", 3),
		route("r-c", "strong", "weak", "a", 4), route("r-d", "weak", "strong", "b", 2)}
	for i := range extra {
		recs = append(recs, route(fmt.Sprintf("x-%d", i), "strong", "weak", "a", 4))
	}
	writeLines(t, filepath.Join(dir, rundir.HistoryFile), recs...)
	writeLines(t, filepath.Join(dir, rundir.SkillUpdatesFile),
		map[string]any{"id": "executor@weak/s2b001", "student": "weak", "proposal_ids": []string{"r-a"}},
		map[string]any{"id": "executor@strong/s1b001", "student": "strong", "proposal_ids": []string{"r-d"}})
	writeLines(t, filepath.Join(dir, rundir.RejectedFile),
		map[string]any{"type": "batch", "batch_id": "s2b002", "student": "weak", "proposals": []map[string]any{{"id": "r-b"}}})
}

// The summary shows the items routed between students, with the counts
// per sender and receiver and whether each was adopted; a directory
// without routed items has no Routing section.
func TestReportShowsRouting(t *testing.T) {
	run := studentsFixture(t)
	addRouting(t, run, 0)
	long := studentsFixture(t)
	addRouting(t, long, MaxRoutedListed)
	matrix := matrixFixture(t)
	row := filepath.Join(matrix, "full_coevolution")
	addRouting(t, row, 0)
	tests := []struct {
		name      string
		dir       string
		want, not []string
		counts    []inspect.RouteCount
	}{
		{"run", run, []string{"## Routing", "| `strong` | – | 3 (1) |", "| `weak` | 1 (1) | – |",
			"| 2 | `strong` | `weak` | a | note | yes | reason of r-a |", "| 3 | `strong` | `weak` | b | note | no | reason of r-b |",
			"| 4 | `strong` | `weak` | a | note | pending | reason of r-c |"}, []string{"### Row", "more routed items"},
			[]inspect.RouteCount{{From: "strong", To: "weak", Items: 3, Adopted: 1, Rejected: 1, Pending: 1}, {From: "weak", To: "strong", Items: 1, Adopted: 1}}},
		{"many items are capped", long, []string{"| `strong` | – | 33 (1) |", fmt.Sprintf("| 4 | `strong` | `weak` | a | note | pending | reason of x-%d |", MaxRoutedListed-5),
			"\n4 more routed items"}, []string{fmt.Sprintf("reason of x-%d |", MaxRoutedListed-4)}, nil},
		{"matrix names the row", matrix, []string{"## Routing", "### Row `full_coevolution`", "| `strong` | – | 3 (1) |"}, []string{"### Row `no_feedback`"},
			[]inspect.RouteCount{{Row: "full_coevolution", From: "strong", To: "weak", Items: 3, Adopted: 1, Rejected: 1, Pending: 1},
				{Row: "full_coevolution", From: "weak", To: "strong", Items: 1, Adopted: 1}}},
		{"no routing", studentsFixture(t), nil, []string{"## Routing"}, []inspect.RouteCount{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sum, err := Write(context.Background(), tc.dir, filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			md, err := os.ReadFile(sum.Markdown)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(md), w) {
					t.Errorf("summary lacks %q\n%s", w, md)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(string(md), w) {
					t.Errorf("summary has %q\n%s", w, md)
				}
			}
			if tc.counts == nil {
				return
			}
			if len(sum.Routing) != len(tc.counts) || sum.Routing == nil {
				t.Fatalf("routing counts %+v, want %+v", sum.Routing, tc.counts)
			}
			for i := range tc.counts {
				if sum.Routing[i] != tc.counts[i] {
					t.Errorf("count %d = %+v, want %+v", i, sum.Routing[i], tc.counts[i])
				}
			}
		})
	}
}
