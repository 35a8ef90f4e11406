package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/config"
)

// GCOptions are the flags of `harness gc`.
type GCOptions struct {
	IO        IOStreams
	ConfigDir string
	// RunID limits container removal to one run's containers.
	RunID       string
	Images      bool
	StaleImages bool
	// Task narrows removal to one task's containers and images.
	Task string
	// Force also removes containers of runs whose process is still alive.
	Force  bool
	DryRun bool
	JSON   bool
	// Collector connects to the engine whose leftovers are removed.
	Collector func(ctx context.Context, rt config.ExecutorRuntime) (Collector, error)
}

// Collector removes what harness left on a sandbox engine.
type Collector interface {
	// Host is the engine's address, for messages.
	Host() string
	// Collect removes what req asks for and reports it; it carries on past
	// single failures and returns them joined.
	Collect(ctx context.Context, req GCRequest) (GCRemoved, error)
	Close() error
}

// GCRequest says what a Collector removes (see the flags of `harness gc`).
type GCRequest struct {
	RunID       string
	Images      bool
	StaleImages bool
	Task        string
	Force       bool
	DryRun      bool
}

// GCRemoved lists what a Collector removed (in a dry run: would remove).
type GCRemoved struct {
	Containers, Images []string
	// Kept are containers left alone because their run may be live.
	Kept []string
	// Networks and Volumes are those of compose tasks' trials.
	Networks, Volumes []string
}

// NewCmdGC builds `harness gc`.
func NewCmdGC(f *Factory, runF func(context.Context, *GCOptions) error) *cobra.Command {
	o := &GCOptions{}
	cmd := &cobra.Command{
		Use:   "gc [--images | --stale-images] [--task ID] [--run ID] [--force] [--dry-run]",
		Short: "Remove containers (and images) that crashed or kept runs left behind",
		Long: `Remove the Docker containers harness created, found by the label
io.harness.managed=1, in any state: a crashed run can leave them running, and
keep_containers (or 'harness tasks try --keep') leaves them on purpose.
--run ID removes only the containers of that run (label io.harness.run): a run
directory's id, or a matrix directory's id for the containers of all its rows.
--images also removes the task images harness built; they are shared by all runs,
so --run does not narrow it, and the next trial of a task builds its image again.
--stale-images removes only what earlier versions of a task's environment left
behind: every image of a task but its newest, and never one a container uses.
--task ID narrows containers and images to that task. The base image
(harness-base:bookworm) is never removed.

Each container records the harness process that made it (label
io.harness.owner, host/pid). gc keeps the containers of a process that is still
running, and of one on another host that it cannot check, and lists them with
the reason; --force removes them too. --dry-run lists what would go and removes
nothing.

The engine is the one [executor_runtime] docker_host names, else DOCKER_HOST
or the local socket. Exit codes: 0 done, 1 no engine answered or something could
not be removed, 2 bad usage.`,
		Example: `  harness gc --dry-run
  harness gc --run tasks-try-20260101T120000Z-csv-parser
  harness gc --stale-images
  harness gc --images --task csv-parser --json`,
		Args: noPositional("; name a run with --run ID"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.IO, o.Collector = f.IO, f.Collector
			if cmd.Flags().Changed("run") && strings.TrimSpace(o.RunID) == "" {
				return usagef("--run needs a run id (the io.harness.run label of its containers)")
			}
			if o.Images && o.StaleImages {
				return usagef("--images already removes every task image; give --images or --stale-images, not both")
			}
			if cmd.Flags().Changed("task") && strings.TrimSpace(o.Task) == "" {
				return usagef("--task needs a task id (the io.harness.task label of its containers and images)")
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runGC(cmd.Context(), o)
		},
	}
	configDirFlag(cmd, &o.ConfigDir)
	fl := cmd.Flags()
	fl.StringVar(&o.RunID, "run", "", "remove only the containers of this run")
	fl.BoolVar(&o.Images, "images", false, "also remove the task images harness built (shared by every run)")
	fl.BoolVar(&o.StaleImages, "stale-images", false, "also remove every task image but the newest of each task, keeping images in use")
	fl.StringVar(&o.Task, "task", "", "remove only this task's containers (and images)")
	fl.BoolVar(&o.Force, "force", false, "also remove containers whose harness process is still running")
	fl.BoolVar(&o.DryRun, "dry-run", false, "list what would be removed and remove nothing")
	fl.BoolVar(&o.JSON, "json", false, "print what was removed as JSON")
	registerTaskCompletion(cmd, f, "task")
	return cmd
}

// GCResult is what `harness gc` prints.
type GCResult struct {
	DryRun     bool     `json:"dry_run"`
	RunID      string   `json:"run,omitempty"`
	Engine     string   `json:"engine"`
	Containers []string `json:"containers"`
	Images     []string `json:"images"`
	// Kept are containers left alone because their run may be live.
	Kept     []string `json:"kept"`
	Networks []string `json:"networks"`
	Volumes  []string `json:"volumes"`
	Errors   []string `json:"errors,omitempty"`
}

func runGC(ctx context.Context, o *GCOptions) error {
	cfg, err := config.Load(o.ConfigDir)
	if err != nil {
		return UsageError(fmt.Errorf("invalid configuration: %w", err))
	}
	if o.Collector == nil {
		return &ExitError{Code: ExitFailed, Err: errors.New("no sandbox engine is available in this build; nothing was removed")}
	}
	d, err := o.Collector(ctx, cfg.ExecutorRuntime)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%w; nothing was removed", err)}
	}
	defer d.Close()

	rep, gcErr := d.Collect(ctx, GCRequest{RunID: o.RunID, Images: o.Images, StaleImages: o.StaleImages,
		Task: o.Task, Force: o.Force, DryRun: o.DryRun})
	res := GCResult{DryRun: o.DryRun, RunID: o.RunID, Engine: d.Host(),
		Containers: nonNil(rep.Containers), Images: nonNil(rep.Images), Kept: nonNil(rep.Kept),
		Networks: nonNil(rep.Networks), Volumes: nonNil(rep.Volumes), Errors: splitErrors(gcErr)}
	if o.JSON {
		if err := writeJSON(o.IO.Out, res); err != nil {
			return err
		}
	} else {
		writeGCText(o.IO.Out, res, o.Images || o.StaleImages)
	}
	switch {
	case gcErr != nil && ctx.Err() != nil:
		return fmt.Errorf("interrupted: %w", ctx.Err())
	case gcErr != nil:
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("gc: %w", gcErr)}
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func writeGCText(w io.Writer, r GCResult, images bool) {
	verb := "removed"
	if r.DryRun {
		verb = "would remove"
	}
	of := ""
	if r.RunID != "" {
		of = " of run " + r.RunID
	}
	switch {
	case len(r.Containers) == 0 && len(r.Kept) == 0:
		fmt.Fprintf(w, "no harness containers%s on %s\n", of, r.Engine)
	case len(r.Containers) == 0:
		fmt.Fprintf(w, "%s no container%s\n", verb, of)
	default:
		fmt.Fprintf(w, "%s %d container(s)%s:\n", verb, len(r.Containers), of)
		for _, c := range r.Containers {
			fmt.Fprintln(w, "  "+c)
		}
	}
	for _, l := range []struct {
		what  string
		names []string
	}{{"network", r.Networks}, {"volume", r.Volumes}} {
		if len(l.names) > 0 {
			fmt.Fprintf(w, "%s %d %s(s) of compose trials: %s\n", verb, len(l.names), l.what, strings.Join(l.names, ", "))
		}
	}
	if len(r.Kept) > 0 {
		fmt.Fprintf(w, "kept %d container(s) whose run may still be going:\n", len(r.Kept))
		for _, c := range r.Kept {
			fmt.Fprintln(w, "  "+c)
		}
	}
	if !images {
		return
	}
	if len(r.Images) == 0 {
		fmt.Fprintln(w, "no harness task images to remove")
		return
	}
	fmt.Fprintf(w, "%s %d task image(s):\n", verb, len(r.Images))
	for _, i := range r.Images {
		fmt.Fprintln(w, "  "+i)
	}
}
