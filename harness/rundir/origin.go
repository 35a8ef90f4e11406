package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// originOf is the Origin a directory at path records: this host and the
// absolute path ("" parts when they cannot be known).
func originOf(path string) string {
	host, _ := os.Hostname()
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return host + ":" + path
}

// CheckOrigin refuses a copied directory before anything in it is resumed:
// a copy keeps the original's id, which labels the original's containers
// and rows, so resuming it beside the original would mix the two. It is a
// copy when the directory its run.json says it was made in (on this host)
// still exists, is another directory and records the same id. A directory
// found elsewhere for any other reason (moved, or brought from another
// host) records its new place and goes on. The caller holds the lock.
func (d *Dir) CheckOrigin() error {
	m := d.Manifest()
	here := originOf(d.Path)
	if m.Origin == here {
		return nil
	}
	host, path, ok := strings.Cut(m.Origin, ":")
	thisHost, _ := os.Hostname()
	if ok && host == thisHost && path != "" && isOtherCopy(path, d.Path, m.ID) {
		return fmt.Errorf("resume %s: it is a copy of %s, which still holds run %s: a copy shares the original's run id, "+
			"which labels the original's containers, so the two cannot both be resumed; resume the original, "+
			"or remove (or move) the original and resume the copy", d.Path, path, m.ID)
	}
	if err := d.UpdateManifest(func(m *Manifest) { m.Origin = here }); err != nil {
		return fmt.Errorf("record where %s now is: %w", d.Path, err)
	}
	return nil
}

// isOtherCopy reports whether origin is a directory other than dir whose
// run.json records the run id id.
func isOtherCopy(origin, dir, id string) bool {
	a, err := os.Stat(origin)
	if err != nil {
		return false
	}
	if b, err := os.Stat(dir); err == nil && os.SameFile(a, b) {
		return false // the same directory, reached by another path
	}
	data, err := os.ReadFile(filepath.Join(origin, ManifestFile))
	if err != nil {
		return false
	}
	var m Manifest
	return json.Unmarshal(data, &m) == nil && m.ID == id
}
