package harness

import "github.com/mediated-coevo/harness/harness/rundir"

// openLocked opens an existing run or matrix directory for writing: nothing
// is written into it until this process holds its lock, and a copy of a
// directory that still exists is refused (it shares the original's id).
func openLocked(path string) (*rundir.Dir, error) {
	d, err := rundir.Open(path)
	if err != nil {
		return nil, err
	}
	if err := d.Lock(); err != nil {
		return nil, err
	}
	if err := d.CheckOrigin(); err != nil {
		d.Unlock()
		return nil, err
	}
	return d, nil
}
