package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/parquet-go/parquet-go"
)

// UpdateRow is one row of the updates table: a skill update committed in
// an iteration, recorded once (not on every metric row of the iteration).
// The Parquet column names are the snake_case tags; docs/outputs.md
// documents every column.
type UpdateRow struct {
	RunID        string  `parquet:"run_id,dict" json:"run_id"`
	MatrixID     *string `parquet:"matrix_id,optional,dict" json:"matrix_id"`
	Row          string  `parquet:"row,dict" json:"row"`
	Seed         int64   `parquet:"seed" json:"seed"`
	Iteration    int32   `parquet:"iteration" json:"iteration"`
	Role         string  `parquet:"role,dict" json:"role"`
	ProvenanceID string  `parquet:"provenance_id" json:"provenance_id"`
	OldHash      string  `parquet:"old_hash" json:"old_hash"`
	NewHash      string  `parquet:"new_hash" json:"new_hash"`
}

// UpdatesPath is the updates part of an iteration in a run's metrics folder.
func UpdatesPath(metricsDir string, iteration int) string {
	return filepath.Join(metricsDir, UpdatesDir, UpdatesPartName(iteration))
}

// UpdatesParts lists the updates parts in a run's metrics folder, those
// written under the old extension included, sorted by name.
func UpdatesParts(metricsDir string) ([]string, error) {
	return globAll(filepath.Join(metricsDir, UpdatesDir), UpdatesPartPattern, OldUpdatesPartPattern)
}

// globAll is the sorted union of the matches of patterns in dir.
func globAll(dir string, patterns ...string) ([]string, error) {
	var out []string
	for _, p := range patterns {
		m, err := filepath.Glob(filepath.Join(dir, p))
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	sort.Strings(out)
	return out, nil
}

// WriteUpdatesPart records the skill updates committed in one iteration,
// atomically, in metricsDir (a run's metrics folder). An iteration that
// committed none has no part: one an earlier attempt of the iteration left
// is removed, so a redone iteration never keeps updates it did not commit.
func WriteUpdatesPart(metricsDir string, iteration int, rows []UpdateRow) error {
	path := UpdatesPath(metricsDir, iteration)
	// A part of this iteration under the old extension (a resumed old run
	// redoing it) would repeat or contradict the new one.
	old := filepath.Join(metricsDir, UpdatesDir, fmt.Sprintf(oldUpdatesPartFormat, iteration))
	if err := os.Remove(old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale updates part: %w", err)
	}
	if len(rows) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale updates part: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create updates folder: %w", err)
	}
	return writeParquet(path, rows)
}

// ReadSkillUpdates reads the committed skill updates of one run directory,
// each once, by iteration: the updates table, and the skill_updates column
// that metric parts written before the table existed repeat on every row
// (a resumed old run may hold both).
func ReadSkillUpdates(runDir string) ([]UpdateRow, error) {
	metrics := filepath.Join(runDir, MetricsDir)
	tableFiles, err := UpdatesParts(metrics)
	if err != nil {
		return nil, fmt.Errorf("list updates of %s: %w", runDir, err)
	}
	parts, err := filepath.Glob(filepath.Join(metrics, MetricsPartPattern))
	if err != nil {
		return nil, fmt.Errorf("list metrics of %s: %w", runDir, err)
	}
	seen := map[string]bool{}
	var out []UpdateRow
	add := func(rows []UpdateRow) {
		for _, u := range rows {
			if !seen[u.ProvenanceID] {
				seen[u.ProvenanceID] = true
				out = append(out, u)
			}
		}
	}
	for _, f := range tableFiles {
		rows, err := ReadUpdatesFile(f)
		if err != nil {
			return nil, err
		}
		add(rows)
	}
	for _, f := range parts {
		rows, err := readLegacyUpdates(f)
		if err != nil {
			return nil, err
		}
		add(rows)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Iteration < out[j].Iteration })
	return out, nil
}

// ReadUpdatesFile reads one updates part.
func ReadUpdatesFile(path string) ([]UpdateRow, error) {
	return readParquetFile[UpdateRow](path, "updates")
}

// legacyRow is what a metric part written before the updates table holds
// about updates.
type legacyRow struct {
	RunID        string        `parquet:"run_id"`
	MatrixID     string        `parquet:"matrix_id"`
	Row          string        `parquet:"row"`
	Seed         int64         `parquet:"seed"`
	Iteration    int32         `parquet:"iteration"`
	SkillUpdates []SkillUpdate `parquet:"skill_updates,list"`
}

// readLegacyUpdates reads the skill_updates column of a metric part; a part
// without it (written since the updates table exists) holds none.
func readLegacyUpdates(path string) ([]UpdateRow, error) {
	has, err := hasColumn(path, "skill_updates")
	if err != nil || !has {
		return nil, err
	}
	rows, err := readParquetFile[legacyRow](path, "metrics")
	if err != nil {
		return nil, err
	}
	var out []UpdateRow
	for _, r := range rows {
		for _, u := range r.SkillUpdates {
			out = append(out, UpdateRow{RunID: RunID(r.MatrixID, r.RunID), MatrixID: Nullable(r.MatrixID), Row: r.Row,
				Seed: r.Seed, Iteration: r.Iteration, Role: u.Role, ProvenanceID: u.ProvenanceID,
				OldHash: u.OldHash, NewHash: u.NewHash})
		}
	}
	return out, nil
}

func hasColumn(path, name string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return false, fmt.Errorf("open metrics file %s: %w", path, err)
	}
	for _, f := range pf.Schema().Fields() {
		if f.Name() == name {
			return true, nil
		}
	}
	return false, nil
}
