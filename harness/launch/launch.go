// Package launch runs the rows of a planned matrix outside the process
// that planned it: as the elements of a Slurm job array, one element per
// (row, seed), each running its row with the same harness binary into the
// shared matrix directory (`harness matrix --resume DIR --row NAME`).
//
// It drives Slurm only through its own commands (sbatch, squeue, scontrol,
// scancel) behind Runner, so the scheduling is Slurm's and tests can hand
// in a fake. What it submits is recorded in the matrix directory
// (rundir.SlurmJobsFile); how far each row got is read from the rows' own
// run.json, as inspect reads it.
package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Runner runs one command and returns its standard output. The error of a
// command that fails includes what it wrote to standard error.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// Exec runs commands on this machine, found on PATH, with this process's
// environment (SLURM_CONF among it).
type Exec struct{}

// Run runs name with args.
func (Exec) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return out, fmt.Errorf("%s: %w: is Slurm's client (Debian: slurm-client) installed and on PATH?", name, err)
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return out, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
		}
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return out, nil
}
