// Package inspect reads run and matrix directories back for people and
// scripts: a listing of directories, the view of one run, a comparison of a
// matrix's rows with bootstrap intervals, and a live tail of a running run.
//
// Everything here reads files only; nothing is written. Metrics are
// streamed from Parquet a batch at a time and aggregated on the fly, so a
// matrix of any size is read in bounded memory.
package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// DefaultRoot is where run and matrix directories live unless told otherwise.
const DefaultRoot = rundir.DefaultRoot

// Success is the reward at or above which a trial counts as a success for
// pass@k and pass^k (rewards are in [0, 1]; the tolerance absorbs rounding).
const Success = 1 - 1e-9

// Kind reports whether dir is a run or a matrix directory, from its run.json.
// The CLI uses it to choose between Run and Compare (or List for a matrix's
// rows).
func Kind(dir string) (rundir.Kind, error) {
	m, err := readManifest(dir)
	if err != nil {
		return "", err
	}
	return m.Kind, nil
}

// readManifest reads dir/run.json. Only the manifest is read: opening the
// directory through rundir.Open would also parse its configuration,
// which inspection does not need.
func readManifest(dir string) (rundir.Manifest, error) {
	var m rundir.Manifest
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return m, fmt.Errorf("%s does not exist: pass a run or matrix directory (see `harness inspect` for a list)", dir)
		}
		return m, fmt.Errorf("inspect %s: %w", dir, err)
	}
	if !st.IsDir() {
		return m, fmt.Errorf("%s is not a directory: pass a run or matrix directory", dir)
	}
	path := filepath.Join(dir, rundir.ManifestFile)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return m, fmt.Errorf("%s has no %s, so it is not a run or matrix directory", dir, rundir.ManifestFile)
		}
		return m, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("%s is not valid JSON (%v): the run that wrote it may have been killed mid-write; restore it from the run's state or remove the directory", path, err)
	}
	switch m.Kind {
	case rundir.KindRun, rundir.KindMatrix:
	case "":
		m.Kind = rundir.KindRun
	default:
		return m, fmt.Errorf("%s has unknown kind %q (want %s or %s)", path, m.Kind, rundir.KindRun, rundir.KindMatrix)
	}
	if m.ID == "" {
		m.ID = filepath.Base(filepath.Clean(dir))
	}
	if m.Status == rundir.StatusRunning && !live(dir, m) {
		m.Status = StatusStopped
	}
	return m, nil
}

// StatusStopped is what a reader shows for a directory whose run.json
// still says running although no process holds its lock: its writer died
// (kill -9, a full disk) before it could record how it ended. It is never
// written; a resume continues such a run.
const StatusStopped rundir.Status = "stopped"

// StoppedReason says why a directory shows as stopped.
const StoppedReason = "no process holds it"

// live reports whether a process works in dir: holds its lock or, for a
// matrix, the lock of one of its rows (an element of a Slurm matrix holds
// only its row's). A lock that cannot be probed counts as held, so an
// unreadable lock never makes a live run look dead.
func live(dir string, m rundir.Manifest) bool {
	if held, err := rundir.Held(dir); err != nil || held {
		return true
	}
	if m.Kind != rundir.KindMatrix {
		return false
	}
	rows, err := rowDirs(dir, m)
	if err != nil {
		return true
	}
	for _, rd := range rows {
		if held, err := rundir.Held(rd); err != nil || held {
			return true
		}
	}
	return false
}

// rowDirs lists the row directories of a matrix: those its manifest names,
// in plan order, then any other subdirectory holding a run.json (a row
// created after the manifest was last written), by name.
func rowDirs(dir string, m rundir.Manifest) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, r := range m.Rows {
		if seen[r] {
			continue
		}
		seen[r] = true
		out = append(out, filepath.Join(dir, r))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list rows of %s: %w", dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() || seen[e.Name()] {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), rundir.ManifestFile)); err == nil {
			seen[e.Name()] = true
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// float returns a pointer to v, or nil when v is not a number, so JSON
// shows null instead of failing on NaN.
func float(v float64) *float64 {
	if v != v { // NaN
		return nil
	}
	return &v
}
