package docker

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/mediated-coevo/harness/executor"
)

// RemoveLeftovers removes the containers (with their anonymous volumes),
// networks and volumes labelled with runID (and row, when not empty) that
// another process made: what earlier processes of a run left when they
// were killed. The caller must own the run (its directory lock). This
// process's own containers are kept, and so is everything whose owner
// process may still be alive: a run id shared by mistake (a copied
// directory, another engine's client) must never cost another run its
// trials.
func (d *Backend) RemoveLeftovers(ctx context.Context, runID, row string) (executor.Leftovers, error) {
	var out executor.Leftovers
	if runID == "" {
		return out, errors.New("remove leftovers: no run id")
	}
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=1"), filters.Arg("label", LabelRun+"="+runID))
	if row != "" {
		f.Add("label", LabelRow+"="+row)
	}
	var errs []error
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return out, fmt.Errorf("list the containers of run %s: %w", runID, err)
	}
	host, _ := os.Hostname()
	keep := func(labels map[string]string) bool {
		return sweepKeeps(labels[LabelOwner], d.owner, host, processAlive)
	}
	for _, c := range list {
		if keep(c.Labels) {
			continue
		}
		err := d.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !removalUnderway(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", executor.ShortID(c.ID), err))
			continue
		}
		out.Containers++
	}
	nets, err := d.cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("list the networks of run %s: %w", runID, err))
	}
	for _, n := range nets {
		if keep(n.Labels) {
			continue
		}
		if err := d.cli.NetworkRemove(ctx, n.ID); err != nil && !removalUnderway(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
			continue
		}
		out.Networks++
	}
	vols, err := d.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("list the volumes of run %s: %w", runID, err))
	}
	for _, v := range vols.Volumes {
		if keep(v.Labels) {
			continue
		}
		if err := d.cli.VolumeRemove(ctx, v.Name, true); err != nil && !removalUnderway(err) {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
			continue
		}
		out.Volumes++
	}
	return out, errors.Join(errs...)
}

// sweepKeeps reports whether the leftover sweep must keep what the process
// owner made: this process (self) made it, or its owner may be alive (on
// this host and running, or on another host, where it cannot be checked).
func sweepKeeps(owner, self, host string, alive func(pid int) (bool, error)) bool {
	return owner == self || ownerMayBeAlive(owner, host, alive) != ""
}
