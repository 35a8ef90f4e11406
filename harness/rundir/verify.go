package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrDamaged is wrapped by the error of a resume refused because the
// directory does not hold what its checkpoint promises: a metrics part, or
// a line of an append-only file, that the checkpoint counts is missing or
// unreadable. Continuing would report a completed run with a hole in it.
var ErrDamaged = errors.New("the run directory does not hold what its checkpoint promises")

// Promised is what a checkpoint promises is on disk: the metrics parts of
// iterations 1..Completed, and the first Lines[f] lines of each append-only
// file f (a path relative to the run directory), each a JSON value.
type Promised struct {
	Completed int
	Lines     map[string]int
}

// VerifyCheckpoint checks that the run directory dir holds what p promises.
// It only reads. Whatever lies beyond the promise (a torn last line, the
// parts and lines of an iteration the checkpoint does not count) is not its
// concern: a resume cuts it back. The error names every problem, its file
// and the fix, and wraps ErrDamaged.
func VerifyCheckpoint(dir string, p Promised) error {
	var problems []string
	for it := 1; it <= p.Completed; it++ {
		rel := filepath.Join(MetricsDir, MetricsPartName(it))
		rows, err := ReadMetricsFile(filepath.Join(dir, rel))
		switch {
		case errors.Is(err, os.ErrNotExist):
			problems = append(problems, fmt.Sprintf("%s, the metrics of iteration %d, is missing", rel, it))
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s, the metrics of iteration %d, cannot be read: %v", rel, it, err))
		case len(rows) == 0:
			problems = append(problems, fmt.Sprintf("%s, the metrics of iteration %d, has no rows", rel, it))
		case int(rows[0].Iteration) != it:
			problems = append(problems, fmt.Sprintf("%s holds iteration %d, not %d", rel, rows[0].Iteration, it))
		}
	}
	for _, rel := range []string{HistoryFile, RejectedFile, SkillUpdatesFile, ReflectionsFile, TournamentFile, MetaReviewsFile} {
		if n := p.Lines[rel]; n > 0 {
			if msg := checkLines(filepath.Join(dir, rel), n); msg != "" {
				problems = append(problems, rel+": "+msg)
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s (state.json counts %d completed iterations). Put the files back as they were (from a backup or a copy of "+
		"the directory) and resume again, or start a new run; nothing was changed, and inspect still reads this one",
		ErrDamaged, strings.Join(problems, "; "), p.Completed)
}

// checkLines says what is wrong with the first n lines of the file at
// path, or "" when each is a complete line holding one JSON value.
func checkLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Sprintf("missing, though the checkpoint counts %d lines in it", n)
		}
		return err.Error()
	}
	for i := 1; i <= n; i++ {
		end := bytes.IndexByte(data, '\n')
		if end < 0 {
			return fmt.Sprintf("has %d complete lines, fewer than the %d the checkpoint counts", i-1, n)
		}
		if line := data[:end]; !json.Valid(line) {
			return fmt.Sprintf("line %d of the %d the checkpoint counts is torn or not JSON (%q)", i, n, clip(string(line), 80))
		}
		data = data[end+1:]
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
