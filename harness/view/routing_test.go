package view

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// writeRouting records, in the run at dir, three items from strong to
// weak (r-a adopted, r-b rejected, r-c pending) and r-d from weak to
// strong (adopted).
func writeRouting(t *testing.T, dir string) {
	t.Helper()
	route := func(id, from, to, task string, it int) rundir.HistoryRecord {
		return rundir.HistoryRecord{Type: "entry", Entry: &rundir.Entry{ID: id, Role: "mediator", Kind: rundir.EntryRoute, TaskID: task,
			Iteration: it, TrialID: fmt.Sprintf("i%04d-%s", it, task), From: from, To: to, Form: "proposal", Reason: "reason of " + id}}
	}
	jsonl(t, filepath.Join(dir, rundir.HistoryFile), route("r-a", "strong", "weak", "a", 2), route("r-b", "strong", "weak", "b", 1),
		route("r-c", "strong", "weak", "a", 2), route("r-d", "weak", "strong", "b", 2))
	jsonl(t, filepath.Join(dir, rundir.SkillUpdatesFile),
		map[string]any{"id": "executor@weak/s2b001", "role": "executor", "student": "weak", "iteration": 2, "proposal_ids": []string{"r-a"}},
		map[string]any{"id": "executor@strong/s1b001", "role": "executor", "student": "strong", "iteration": 2, "proposal_ids": []string{"r-d"}})
	jsonl(t, filepath.Join(dir, rundir.RejectedFile),
		map[string]any{"type": "batch", "batch_id": "s2b002", "student": "weak", "iteration": 2, "proposals": []map[string]any{{"id": "r-b"}}})
}

// The run and matrix pages show the items routed between students, with
// the counts by sender and receiver and whether each was adopted; pages of
// runs without routed items have no such section.
func TestViewShowsRouting(t *testing.T) {
	s, root := newTestServer(t)
	run := writeStudentsRun(t, root)
	writeRouting(t, filepath.Join(root, run))
	matrix := "20250301T130000Z-7-routed-matrix"
	row := writeStudentsRun(t, filepath.Join(root, matrix))
	manifest(t, filepath.Join(root, matrix), rundir.Manifest{Kind: rundir.KindMatrix, Name: "routed", Status: rundir.StatusCompleted,
		Rows: []string{row}, Tasks: []string{"a", "b"}, Iterations: 2})
	writeRouting(t, filepath.Join(root, matrix, row))
	h := s.Handler()
	counts := func(pre string) string {
		return pre + `<td>strong</td><td>weak</td><td class="n">3</td><td class="n">1</td><td class="n">1</td><td class="n">1</td>`
	}
	tests := []struct {
		name, path string
		want, not  []string
	}{
		{"run", "/run/" + run, []string{"Routing between students", counts("<tr>"),
			`<td>weak</td><td>strong</td><td class="n">1</td><td class="n">1</td><td class="n">0</td><td class="n">0</td>`,
			`<a href="/iteration/` + run + `?i=2">2</a></td><td>strong</td><td>weak</td><td>a</td><td>i0002-a</td><td>proposal</td>`,
			`class="good">yes`, `class="bad">no`, "<td>pending</td>", "reason of r-b"}, []string{"<th>row</th>"}},
		{"matrix names the row", "/matrix/" + matrix, []string{"Routing between students", "<th>row</th>", counts("<tr><td>" + row + "</td>"),
			`<a href="/iteration/` + matrix + "/" + row + `?i=1">1</a>`, "reason of r-d"}, nil},
		{"run without routing", "/run/" + fixtureMatrix + "/" + fixtureRow, []string{"Skill updates"}, []string{"Routing between students"}},
		{"matrix without routing", "/matrix/" + fixtureMatrix, []string{"Estimands"}, []string{"Routing between students"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, h, tc.path)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d: %s", tc.path, code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s lacks %q", tc.path, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(body, w) {
					t.Errorf("GET %s has %q", tc.path, w)
				}
			}
		})
	}
}
