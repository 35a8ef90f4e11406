package inspect

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// tableUpdates reads the updates table of a run directory, or of every row
// of a matrix directory: each committed skill update once. Runs written
// before the table existed have none; their updates are on the metric
// rows, which the scans read.
func tableUpdates(dir string) ([]rundir.UpdateRow, error) {
	var files []string
	for _, metrics := range []string{
		filepath.Join(dir, rundir.MetricsDir),
		filepath.Join(dir, "*", rundir.MetricsDir),
	} {
		dirs, err := filepath.Glob(metrics)
		if err != nil {
			return nil, fmt.Errorf("list skill updates of %s: %w", dir, err)
		}
		for _, d := range dirs {
			matches, err := rundir.UpdatesParts(d)
			if err != nil {
				return nil, fmt.Errorf("list skill updates of %s: %w", dir, err)
			}
			files = append(files, matches...)
		}
	}
	sort.Strings(files)
	var out []rundir.UpdateRow
	for _, f := range files {
		rows, err := rundir.ReadUpdatesFile(f)
		if err != nil {
			return nil, fmt.Errorf("read skill updates: %w", err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// addTableUpdates counts the updates of dir's updates table with those the
// scanned metric rows named (older runs), each (run, provenance id) once.
func (t *totals) addTableUpdates(dir string) error {
	updates, err := tableUpdates(dir)
	if err != nil {
		return err
	}
	t.init()
	for _, u := range updates {
		t.updates[[2]string{u.RunID, u.ProvenanceID}] = true
	}
	return nil
}
