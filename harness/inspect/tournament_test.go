package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// tournamentLine is one tournament record with the validated candidates
// given as (elo, gain) pairs and one pooled candidate besides.
func tournamentLine(t *testing.T, batch string, validated ...[2]float64) string {
	t.Helper()
	rec := rundir.TournamentRecord{BatchID: batch, ValidateTop: len(validated), TrialsSpent: 10 * len(validated), TrialsSaved: 10,
		Matches: []rundir.TournamentMatch{{First: batch + "c1", Second: batch + "c9", Winner: batch + "c1"}}}
	for i, v := range validated {
		rec.Candidates = append(rec.Candidates, rundir.TournamentCandidate{ID: fmt.Sprintf("%sc%d", batch, i+1), BatchID: batch,
			Operator: "refine", Parents: []string{"skill:abc"}, Elo: v[0], Rank: i + 1, Validated: true, Gain: ptr(v[1])})
	}
	rec.Candidates = append(rec.Candidates, rundir.TournamentCandidate{ID: batch + "c9", BatchID: batch, Operator: "combine",
		Parents: []string{"skill:abc", batch + "c1"}, Elo: 990})
	line, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return string(line)
}

func TestTournamentReport(t *testing.T) {
	tests := []struct {
		name      string
		lines     func(t *testing.T) []string
		wantCorr  bool
		rho       float64
		wantNote  string
		validated int
	}{
		{"no tournament", func(t *testing.T) []string { return nil }, false, 0, "no tournament ran", 0},
		{"too few validated", func(t *testing.T) []string {
			return []string{tournamentLine(t, "b001", [2]float64{1016, 0.1}), tournamentLine(t, "b002", [2]float64{1010, 0})}
		}, false, 0, "too few validated candidates", 2},
		{"ratings foretell gains", func(t *testing.T) []string {
			return []string{
				tournamentLine(t, "b001", [2]float64{1030, 0.3}, [2]float64{1010, 0.1}),
				tournamentLine(t, "b002", [2]float64{1020, 0.2}, [2]float64{1000, 0}),
				tournamentLine(t, "b003", [2]float64{990, -0.1}),
			}
		}, true, 1, "only 5 validated candidates", 5},
		{"ratings tell nothing of gains", func(t *testing.T) []string {
			return []string{
				tournamentLine(t, "b001", [2]float64{1030, -0.3}, [2]float64{1010, -0.1}),
				tournamentLine(t, "b002", [2]float64{1020, -0.2}, [2]float64{1000, 0}),
			}
		}, true, -1, "only 4", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeManifest(t, dir, rundir.Manifest{Kind: rundir.KindRun})
			if lines := tt.lines(t); lines != nil {
				writeLines(t, filepath.Join(dir, rundir.TournamentFile), lines...)
			}
			rep, err := Tournament(dir)
			if err != nil {
				t.Fatal(err)
			}
			if (rep.Correlation != nil) != tt.wantCorr {
				t.Fatalf("correlation %+v, want one: %v", rep.Correlation, tt.wantCorr)
			}
			if c := rep.Correlation; c != nil && (c.Rho != tt.rho || c.Low > c.Rho || c.High < c.Rho) {
				t.Errorf("correlation %+v, want rho %v inside its interval", c, tt.rho)
			}
			if !strings.Contains(rep.Note, tt.wantNote) {
				t.Errorf("note %q, want one saying %q", rep.Note, tt.wantNote)
			}
			if rep.Validated != tt.validated {
				t.Errorf("%d validated, want %d", rep.Validated, tt.validated)
			}
			var buf bytes.Buffer
			if err := WriteJSON(&buf, rep); err != nil {
				t.Fatal(err)
			}
			var generic struct {
				Candidates []map[string]any `json:"candidates"`
			}
			if err := json.Unmarshal(buf.Bytes(), &generic); err != nil || generic.Candidates == nil {
				t.Fatalf("JSON %s has no candidates list (%v)", buf.String(), err)
			}
			for _, c := range generic.Candidates {
				for _, k := range []string{"operator", "parents", "elo"} {
					if _, ok := c[k]; !ok {
						t.Errorf("candidate %v lacks %s", c, k)
					}
				}
			}
			buf.Reset()
			if err := rep.WriteText(&buf, false); err != nil || !strings.Contains(buf.String(), "validation trials:") {
				t.Errorf("text %q (%v) does not report the validation trials", buf.String(), err)
			}
		})
	}
}
