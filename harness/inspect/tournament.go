package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/harness/stats"
	"github.com/mediated-coevo/harness/internal/durable"
)

// TournamentReport is what `harness inspect RUN --tournament` shows: every
// candidate of the run's tournaments, how well the judge's ratings
// foretold the validated gains, and the validation trials the tournaments
// spent and saved.
type TournamentReport struct {
	Tournaments int `json:"tournaments"`
	// Candidates are in the order they were drafted, each as it stood
	// after its last tournament.
	Candidates []TournamentCandidate `json:"candidates"`
	Matches    int                   `json:"matches"`
	Validated  int                   `json:"validated"`
	// Correlation is Spearman's rank correlation between the rating a
	// validated candidate had when it was validated and its validated
	// gain, with a 95% interval; nil when it cannot be estimated, and
	// then Note says why.
	Correlation *RankCorrelation `json:"rating_gain_correlation"`
	Note        string           `json:"note,omitempty"`
	// TrialsSpent are the validation trials of the tournaments;
	// TrialsSaved the trials validating every competitor would have added.
	TrialsSpent int     `json:"validation_trials_spent"`
	TrialsSaved float64 `json:"validation_trials_saved"`
}

// TournamentCandidate is one candidate of a run's tournaments.
type TournamentCandidate struct {
	ID        string   `json:"id"`
	BatchID   string   `json:"batch_id"`
	Student   string   `json:"student,omitempty"`
	Operator  string   `json:"operator"`
	Parents   []string `json:"parents"`
	Elo       float64  `json:"elo"`
	Rank      int      `json:"rank,omitempty"`
	Validated bool     `json:"validated"`
	Accepted  bool     `json:"accepted,omitempty"`
	Adopted   bool     `json:"adopted,omitempty"`
	Gain      *float64 `json:"gain,omitempty"`
	Dropped   string   `json:"dropped,omitempty"`
}

// RankCorrelation is a rank correlation with its interval.
type RankCorrelation struct {
	Rho   float64 `json:"rho"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	Level float64 `json:"level"`
	N     int     `json:"n"`
}

// fewRankPairs is the number of validated candidates below which the
// interval's coverage falls short of its level in the simulation
// docs/statistics.md reports; fewer get a note.
const fewRankPairs = 10

// Tournament reads a run's history/tournament.jsonl.
func Tournament(dir string) (*TournamentReport, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	if m.Kind == rundir.KindMatrix {
		return nil, fmt.Errorf("%s is a matrix: each row keeps its own tournaments, pass a row directory", dir)
	}
	rep := &TournamentReport{Candidates: []TournamentCandidate{}}
	at := map[string]int{}
	var elo, gain []float64
	err = durable.ReadLog(filepath.Join(dir, rundir.TournamentFile), func(line []byte) error {
		var rec rundir.TournamentRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("read %s: %w", rundir.TournamentFile, err)
		}
		rep.Tournaments++
		rep.Matches += len(rec.Matches)
		rep.TrialsSpent += rec.TrialsSpent
		rep.TrialsSaved += rec.TrialsSaved
		for _, c := range rec.Candidates {
			v := TournamentCandidate{ID: c.ID, BatchID: c.BatchID, Student: rec.Student, Operator: c.Operator, Parents: c.Parents,
				Elo: c.Elo, Rank: c.Rank, Validated: c.Validated, Accepted: c.Accepted, Adopted: c.Adopted, Gain: c.Gain, Dropped: c.Dropped}
			if i, ok := at[c.ID]; ok {
				rep.Candidates[i] = v
			} else {
				at[c.ID] = len(rep.Candidates)
				rep.Candidates = append(rep.Candidates, v)
			}
			if c.Validated {
				rep.Validated++
				if c.Gain != nil {
					elo, gain = append(elo, c.Elo), append(gain, *c.Gain)
				}
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	rep.correlate(elo, gain)
	return rep, nil
}

// correlate fills the rating-gain correlation, or the note that says why
// there is none or how far to trust it.
func (rep *TournamentReport) correlate(elo, gain []float64) {
	if rep.Tournaments == 0 {
		rep.Note = "no tournament ran: set [tournament] n_candidates above 1"
		return
	}
	rc, err := stats.RankCorrelationCI(elo, gain, 0.95)
	switch {
	case errors.Is(err, stats.ErrTooFew):
		rep.Note = fmt.Sprintf("too few validated candidates to estimate the rating-gain correlation: %d with a measured gain, need at least %d "+
			"(a longer run, or a larger [tournament] validate_top, validates more)", len(elo), stats.MinRankPairs)
		return
	case err != nil:
		rep.Note = "the rating-gain correlation cannot be estimated: " + err.Error()
		return
	}
	rep.Correlation = &RankCorrelation{Rho: rc.Rho, Low: rc.Low, High: rc.High, Level: rc.Level, N: rc.N}
	if rc.N < fewRankPairs {
		rep.Note = fmt.Sprintf("only %d validated candidates: the interval is wide, and below %d its coverage may fall a little short of 95%% (docs/statistics.md)",
			rc.N, fewRankPairs)
	}
}

// WriteText prints the report: the candidates, then the judge's record.
func (rep *TournamentReport) WriteText(w io.Writer, tty bool) error {
	t := newTable(tty, "candidate", "batch", "operator", "parents", "elo", "rank", "validated", "gain", "outcome")
	for _, c := range rep.Candidates {
		outcome := ""
		switch {
		case c.Dropped != "":
			outcome = "dropped: " + c.Dropped
		case c.Adopted:
			outcome = "adopted"
		case c.Validated && c.Accepted:
			outcome = "accepted, not adopted"
		case c.Validated:
			outcome = "rejected by the gate"
		default:
			outcome = "pooled"
		}
		rank := "-"
		if c.Rank > 0 {
			rank = strconv.Itoa(c.Rank)
		}
		t.add(c.ID, c.BatchID, c.Operator, strings.Join(c.Parents, " "), strconv.FormatFloat(c.Elo, 'f', 1, 64), rank,
			strconv.FormatBool(c.Validated), num(c.Gain), outcome)
	}
	if err := t.write(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d tournaments, %d judged matches, %d candidates validated\n", rep.Tournaments, rep.Matches, rep.Validated)
	if c := rep.Correlation; c != nil {
		fmt.Fprintf(w, "rating-gain rank correlation: %s (%.0f%% interval %s to %s, %d candidates)\n",
			signed(c.Rho), 100*c.Level, signed(c.Low), signed(c.High), c.N)
	}
	if rep.Note != "" {
		fmt.Fprintf(w, "note: %s\n", rep.Note)
	}
	_, err := fmt.Fprintf(w, "validation trials: %d spent, about %.0f saved against validating every candidate\n", rep.TrialsSpent, rep.TrialsSaved)
	return err
}
