package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// element runs the one row a plan restricts a matrix to (or the rows of
// one seed, side by side), beside other processes running its other rows
// (the elements of a Slurm job array). It never takes the matrix
// directory's lock, only its rows', and never
// writes the matrix's own run.json: whoever launched the elements settles
// the matrix's status once they are done.
//
// The budget: the matrix ledger starts from what every row of the matrix
// had checkpointed when this element started, so a budget already spent
// stops it at once; what concurrent elements spend afterwards is not seen
// until they checkpoint and another element starts (docs/scale.md).
func (ex *planExecution) element(ctx context.Context) (*Outcome, error) {
	p := ex.opts.Plan
	md, err := rundir.Open(p.ResumeDir)
	if err != nil {
		return nil, err
	}
	if md.Manifest().Kind != rundir.KindMatrix {
		return nil, fmt.Errorf("--row needs a matrix directory; %s is a %s", md.Path, md.Manifest().Kind)
	}
	if err := ex.checkFingerprint(md); err != nil {
		return &Outcome{Dir: md.Path, Status: rundir.StatusFailed, Resumed: true, Err: err}, nil
	}
	// The other rows are known here by name only; their checkpoints are
	// read as they are.
	rows := p.Rows
	for _, name := range md.Manifest().Rows {
		if !slices.ContainsFunc(rows, func(r RowSpec) bool { return r.Name == name }) {
			rows = append(slices.Clip(rows), RowSpec{Name: name})
		}
	}
	if err := ex.restoreMatrixLedger(md, rows); err != nil {
		return nil, err
	}
	if ex.opts.OnStart != nil {
		ex.opts.OnStart(md.Path)
	}
	for _, r := range p.Rows {
		if err := ex.removeRowLeftovers(ctx, md, r.Name); err != nil {
			return nil, err
		}
	}
	out := &Outcome{Dir: md.Path, Rows: ex.runRows(ctx, md), Resumed: true}
	out.tally()
	return out, nil
}

// removeRowLeftovers removes what an earlier process of the row left
// running, holding the row's lock meanwhile so that a process still
// running the row is never robbed of its containers.
func (ex *planExecution) removeRowLeftovers(ctx context.Context, md *rundir.Dir, row string) error {
	if _, err := os.Stat(filepath.Join(md.RowPath(row), rundir.ManifestFile)); err != nil {
		return nil // a new row: nothing of it can be running
	}
	d, err := md.OpenRow(row)
	if err != nil {
		return nil // the row reports it when it is opened to run
	}
	if err := d.Lock(); err != nil {
		return err
	}
	defer d.Unlock()
	return ex.removeLeftovers(ctx, d, false)
}

// OpenMatrix creates a matrix plan's directory, or reopens it for a resume
// with the same checks a resume makes, without running any row: a launcher
// then runs the rows in other processes. The directory is returned locked;
// a refused resume returns its outcome and no directory.
func OpenMatrix(o ExecOptions) (*rundir.Dir, *Outcome, error) {
	p := o.Plan
	if p == nil || p.Config() == nil || p.Kind != rundir.KindMatrix {
		return nil, nil, errors.New("open matrix: the plan is not a matrix plan; build it with BuildMatrixPlan")
	}
	ex := &planExecution{opts: o, cfg: p.Config(), ledger: newLedger(p.Config())}
	md, refused, err := ex.openMatrix()
	if refused != nil {
		return nil, refused, err
	}
	return md, nil, err
}
