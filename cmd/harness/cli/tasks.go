package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
)

// NewCmdTasks builds the `harness tasks` group.
func NewCmdTasks(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "List, sync, validate and try benchmark tasks",
		Long: `Work with benchmark tasks (directories in the Harbor task format, see docs/tasks.md):
list the task sets and the tasks available here, fetch tasks into the local cache,
check task directories, and run one trial of a task with its reference solution.`,
		RunE: runGroup,
	}
	cmd.AddCommand(
		NewCmdTasksList(f, nil),
		NewCmdTasksSync(f, nil),
		NewCmdTasksValidate(f, nil),
		NewCmdTasksTry(f, nil),
	)
	return cmd
}

// configDirFlag binds --config-dir as `run` and `matrix` do.
func configDirFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "config-dir", "", "directory whose default.toml is read over the built-in configuration")
	_ = cmd.MarkFlagDirname("config-dir")
}

// noPositional refuses positional arguments as bad usage; hint says where
// the value belongs instead.
func noPositional(hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("%s takes no arguments (got %q)%s", cmd.CommandPath(), strings.Join(args, " "), hint)
		}
		return nil
	}
}

// ResolverFunc builds the task resolver of [executor_runtime].
type ResolverFunc func(rt config.ExecutorRuntime) (*benchmarks.Resolver, error)

// loadTaskConfig reads the configuration of --config-dir and builds the task
// resolver from [executor_runtime]. Both failures are invalid configuration
// (exit 2): nothing has been touched yet.
func loadTaskConfig(configDir string, newResolver ResolverFunc) (*config.Config, *benchmarks.Resolver, error) {
	cfg, err := config.Load(configDir)
	if err != nil {
		return nil, nil, UsageError(fmt.Errorf("invalid configuration: %w", err))
	}
	r, err := newResolver(cfg.ExecutorRuntime)
	if err != nil {
		return nil, nil, UsageError(fmt.Errorf("invalid configuration: %w", err))
	}
	return cfg, r, nil
}

// writeJSON prints v indented, as every --json output here does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// splitErrors lists the errors joined into err (by errors.Join), one per
// entry; each entry keeps its own wrapped detail.
func splitErrors(err error) []string {
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range joined.Unwrap() {
		out = append(out, e.Error())
	}
	return out
}

// orDash shows an empty table cell as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ---- tasks list ----

// TasksListOptions are the flags of `harness tasks list`.
type TasksListOptions struct {
	IO        IOStreams
	ConfigDir string
	Resolver  ResolverFunc
	TaskSet   string // empty: every set, and every task available locally
	JSON      bool
}

// NewCmdTasksList builds `harness tasks list`.
func NewCmdTasksList(f *Factory, runF func(context.Context, *TasksListOptions) error) *cobra.Command {
	o := &TasksListOptions{}
	cmd := &cobra.Command{
		Use:   "list [--task-set NAME]",
		Short: "List the task sets and the tasks available without the network",
		Long: `List the named task sets (name, whether pinned, number of tasks, description) and
every task available on this machine without the network: the smoke tasks shipped
in harness, the tasks under [executor_runtime] task_dirs, and the tasks synced into
the cache. Each task shows its id, where it comes from, its category, difficulty and
tags (from [metadata] in task.toml) and its directory.

With --task-set only that set's tasks are listed, each with whether it is available
here; 'harness tasks sync --task-set NAME' fetches the missing ones.

Tasks that fail to load, and task_dirs entries that hold no task (with the reason),
are reported on stderr ('harness tasks validate' explains why a task fails).`,
		Example: `  harness tasks list
  harness tasks list --task-set skillsbench-10 --json`,
		Args: noPositional("; name a task set with --task-set"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.IO, o.Resolver = f.IO, f.Resolver
			if o.TaskSet != "" {
				if _, err := benchmarks.LookupTaskSet(o.TaskSet); err != nil {
					return UsageError(err)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runTasksList(cmd.Context(), o)
		},
	}
	configDirFlag(cmd, &o.ConfigDir)
	cmd.Flags().StringVar(&o.TaskSet, "task-set", "", "list only this set's tasks: "+taskSetNames())
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the listing as JSON")
	_ = cmd.RegisterFlagCompletionFunc("task-set", completeTaskSets)
	return cmd
}

// TaskSetInfo is one task set in a listing.
type TaskSetInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Pinned      bool   `json:"pinned"`
	// Count is nil when the set's tasks cannot be known here (an archive set
	// whose archive is not on disk); Note then says why.
	Count *int   `json:"count"`
	Note  string `json:"note,omitempty"`
	// Content says how far the tasks' content is pinned, beyond their ids:
	// "shipped" (inside harness), "tree ids" (every task pinned by its git
	// tree id), "partial" (some are) or "none".
	Content string `json:"content"`
	// Upstream is the repository@commit the content pins were read from.
	Upstream string `json:"upstream,omitempty"`
	// Unverified are the set's tasks whose content is not pinned.
	Unverified []string `json:"unverified,omitempty"`
}

// Content pin levels of a task set (TaskSetInfo.Content).
const (
	contentShipped = "shipped"
	contentTreeIDs = "tree ids"
	contentPartial = "partial"
	contentNone    = "none"
)

// setInfo describes a task set as listings show it, claiming no more
// pinning than the set records.
func setInfo(set benchmarks.TaskSet) TaskSetInfo {
	info := TaskSetInfo{Name: set.Name, Description: set.Description, Pinned: set.Pinned, Content: contentNone}
	switch {
	case set.Name == benchmarks.SetSmoke:
		info.Content = contentShipped
	case len(set.Content) > 0:
		info.Unverified = set.Unverified()
		info.Content = contentTreeIDs
		if len(info.Unverified) > 0 {
			info.Content = contentPartial
		}
	}
	if set.Upstream != nil {
		info.Upstream = set.Upstream.Short()
	}
	return info
}

// pinnedLabel is the PINNED cell of a set: what exactly is fixed.
func pinnedLabel(s TaskSetInfo) string {
	switch {
	case !s.Pinned:
		return "no"
	case s.Content == contentShipped:
		return "ids+content (shipped)"
	case s.Content == contentTreeIDs:
		return "ids+content"
	case s.Content == contentPartial && s.Count != nil:
		return fmt.Sprintf("ids, content %d/%d", *s.Count-len(s.Unverified), *s.Count)
	}
	return "ids only"
}

// unverifiedNote says which tasks of a set have no content pin, or "".
func unverifiedNote(s TaskSetInfo) string {
	if len(s.Unverified) == 0 {
		return ""
	}
	return fmt.Sprintf("content not verified for %s: not in %s, where the other tasks' content is pinned; its id is pinned, its files are whatever your source holds",
		strings.Join(s.Unverified, ", "), s.Upstream)
}

// TaskInfo is one task in a listing.
type TaskInfo struct {
	ID         string   `json:"id"`
	Source     string   `json:"source,omitempty"` // smoke, task_dirs or cache
	Category   string   `json:"category,omitempty"`
	Difficulty string   `json:"difficulty,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	Dir        string   `json:"dir,omitempty"`
	// Available is set with --task-set: whether the task can run here
	// without the network.
	Available *bool `json:"available,omitempty"`
	// Error says why a task of the set is not available.
	Error string `json:"error,omitempty"`
	// Pin is the git tree id the set pins the task's content to, with
	// --task-set; PinMatch says whether the local copy has that content.
	Pin      string `json:"pin,omitempty"`
	PinMatch *bool  `json:"pin_match,omitempty"`
}

// TasksListing is what `harness tasks list` prints.
type TasksListing struct {
	CacheDir string        `json:"cache_dir"`
	TaskDirs []string      `json:"task_dirs"`
	TaskSets []TaskSetInfo `json:"task_sets"`
	Tasks    []TaskInfo    `json:"tasks"`
	// Problems are tasks that were found but do not load, and task_dirs
	// entries that supply no task, with the reason.
	Problems []string `json:"problems,omitempty"`
}

func taskInfo(t *benchmarks.Task) TaskInfo {
	return TaskInfo{ID: t.ID, Source: t.Source, Category: t.Category(), Difficulty: t.Difficulty(), Tags: t.Tags(), Dir: t.Dir}
}

func runTasksList(ctx context.Context, o *TasksListOptions) error {
	_, r, err := loadTaskConfig(o.ConfigDir, o.Resolver)
	if err != nil {
		return err
	}
	// A listing never downloads: with remote_fetch off the resolver only
	// looks at what is on disk.
	r.RemoteFetch = false
	listing := TasksListing{CacheDir: r.CacheDir, TaskDirs: r.TaskDirs, TaskSets: []TaskSetInfo{}, Tasks: []TaskInfo{}}
	if listing.TaskDirs == nil {
		listing.TaskDirs = []string{}
	}

	if o.TaskSet != "" {
		set, err := benchmarks.LookupTaskSet(o.TaskSet)
		if err != nil {
			return UsageError(err)
		}
		ids, err := r.TaskSetIDs(ctx, set.Name)
		if err != nil {
			return &ExitError{Code: ExitFailed, Err: fmt.Errorf("list task set %s: %w", set.Name, err)}
		}
		n := len(ids)
		info := setInfo(set)
		info.Count = &n
		listing.TaskSets = append(listing.TaskSets, info)
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				return err
			}
			listing.Tasks = append(listing.Tasks, withPin(availability(ctx, r, id), set))
		}
	} else {
		for _, set := range benchmarks.TaskSets() {
			info := setInfo(set)
			if ids, err := r.TaskSetIDs(ctx, set.Name); err == nil {
				n := len(ids)
				info.Count = &n
			} else {
				info.Note = err.Error()
			}
			if len(set.IDs) == 0 && r.ArchiveURL != "" && !r.ArchiveOnDisk() {
				info.Note = strings.TrimPrefix(info.Note+"; ", "; ") + fmt.Sprintf("archive %s is not downloaded yet: its tasks are not counted (`harness tasks sync` or a run with remote_fetch = true fetches it)", r.ArchiveURL)
			}
			listing.TaskSets = append(listing.TaskSets, info)
		}
		tasks, err := r.List(ctx)
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		for _, t := range tasks {
			listing.Tasks = append(listing.Tasks, taskInfo(t))
		}
		listing.Problems = splitErrors(err)
	}

	if o.JSON {
		return writeJSON(o.IO.Out, listing)
	}
	if o.TaskSet != "" {
		return writeTaskSetText(o.IO.Out, listing)
	}
	if err := writeTasksListText(o.IO.Out, listing); err != nil {
		return err
	}
	if len(listing.Problems) > 0 {
		fmt.Fprintf(o.IO.ErrOut, "warning: %d problem(s) with the tasks here (tasks that do not load, task_dirs entries without tasks; check folders with 'harness tasks validate DIR'):\n", len(listing.Problems))
		for _, p := range listing.Problems {
			fmt.Fprintln(o.IO.ErrOut, "  "+p)
		}
	}
	return nil
}

// withPin adds the task's content pin in set, and whether its local copy
// matches it.
func withPin(info TaskInfo, set benchmarks.TaskSet) TaskInfo {
	pin, ok := set.Content[info.ID]
	if !ok {
		return info
	}
	info.Pin = pin
	if info.Dir != "" && info.Error == "" {
		got, err := benchmarks.TreeID(info.Dir)
		match := err == nil && got == pin
		info.PinMatch = &match
	}
	return info
}

// pinCell is the CONTENT cell of a task in a set listing.
func pinCell(t TaskInfo) string {
	switch {
	case t.Pin == "":
		return "not-verified"
	case t.PinMatch == nil:
		return "pinned"
	case *t.PinMatch:
		return "matches-pin"
	}
	return "DIFFERS-from-pin"
}

// availability reports whether task id resolves locally.
func availability(ctx context.Context, r *benchmarks.Resolver, id string) TaskInfo {
	no := false
	tasks, err := r.Resolve(ctx, []string{id})
	if err != nil {
		var missing *benchmarks.MissingTasksError
		info := TaskInfo{ID: id, Available: &no}
		if !errors.As(err, &missing) {
			info.Error = err.Error()
		}
		return info
	}
	yes := true
	info := taskInfo(tasks[0])
	info.Available = &yes
	return info
}

func writeTasksListText(w io.Writer, l TasksListing) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Task sets:")
	fmt.Fprintln(tw, "  NAME\tPINNED\tTASKS\tDESCRIPTION")
	for _, s := range l.TaskSets {
		count := "-"
		if s.Count != nil {
			count = strconv.Itoa(*s.Count)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.Name, pinnedLabel(s), count, s.Description)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range l.TaskSets {
		for _, note := range []string{s.Note, unverifiedNote(s)} {
			if note != "" {
				fmt.Fprintf(w, "  (%s: %s)\n", s.Name, note)
			}
		}
	}
	fmt.Fprintf(w, "\nTasks available locally: %d (cache %s)\n", len(l.Tasks), l.CacheDir)
	if len(l.Tasks) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tSOURCE\tCATEGORY\tDIFFICULTY\tTAGS\tDIR")
	for _, t := range l.Tasks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Source, orDash(t.Category), orDash(t.Difficulty),
			orDash(strings.Join(t.Tags, ",")), t.Dir)
	}
	return tw.Flush()
}

func writeTaskSetText(w io.Writer, l TasksListing) error {
	s := l.TaskSets[0]
	pinned := "not pinned"
	if s.Pinned {
		pinned = "pinned: " + pinnedLabel(s)
	}
	if s.Upstream != "" {
		pinned += ", content from " + s.Upstream
	}
	fmt.Fprintf(w, "Task set %s (%s, %d tasks): %s\n", s.Name, pinned, len(l.Tasks), s.Description)
	if note := unverifiedNote(s); note != "" {
		fmt.Fprintf(w, "  (%s)\n", note)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := "  ID\tAVAILABLE\tSOURCE\tCATEGORY\tDIFFICULTY\tDIR"
	withContent := s.Content == contentTreeIDs || s.Content == contentPartial
	if withContent {
		header = "  ID\tAVAILABLE\tSOURCE\tCATEGORY\tDIFFICULTY\tCONTENT\tDIR"
	}
	fmt.Fprintln(tw, header)
	var missing []string
	for _, t := range l.Tasks {
		avail := "yes"
		if t.Available != nil && !*t.Available {
			avail = "no"
			missing = append(missing, t.ID)
		}
		dir := t.Dir
		if t.Error != "" {
			dir = "does not load: " + t.Error
		}
		cells := []string{t.ID, avail, orDash(t.Source), orDash(t.Category), orDash(t.Difficulty)}
		if withContent {
			cells = append(cells, pinCell(t))
		}
		fmt.Fprintln(tw, "  "+strings.Join(append(cells, orDash(dir)), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(missing) > 0 {
		how := "harness tasks sync --task-set " + s.Name
		if s.Name == benchmarks.SetSkillsBenchAll {
			how = "harness tasks sync --tasks " + strings.Join(missing, ",")
		}
		fmt.Fprintf(w, "%d of %d tasks are not available locally; fetch them with: %s\n", len(missing), len(l.Tasks), how)
	}
	return nil
}

// ---- tasks sync ----

// TasksSyncOptions are the flags of `harness tasks sync`.
type TasksSyncOptions struct {
	IO        IOStreams
	ConfigDir string
	Resolver  ResolverFunc
	Tasks     []string
	TaskSet   string
	JSON      bool
}

// NewCmdTasksSync builds `harness tasks sync`.
func NewCmdTasksSync(f *Factory, runF func(context.Context, *TasksSyncOptions) error) *cobra.Command {
	o := &TasksSyncOptions{}
	cmd := &cobra.Command{
		Use:   "sync --tasks a,b | --task-set NAME",
		Short: "Fetch tasks from the configured archive into the local cache",
		Long: `Fetch tasks from the archive named by [executor_runtime] archive_url (pinned by
archive_sha256) into the task cache, replacing cached copies, and print where each
task now is. Requested tasks the archive does not hold are named (exit 1) and the
others are installed; nothing is installed unless every task found in the archive
loads. Smoke tasks ship inside harness and are only written out to the cache.

--tasks wins over --task-set. The skillsbench-all set cannot be synced: name the
tasks you want with --tasks.

Exit codes: 0 synced, 1 the archive or a task was refused (nothing was installed)
or some tasks are not in the archive (the others were installed),
2 bad usage or configuration (no archive configured, unknown set), 130 interrupted.`,
		Example: `  harness tasks sync --task-set skillsbench-10
  harness tasks sync --tasks dialogue-parser,citation-check --json`,
		Args: noPositional("; tasks go in --tasks"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.IO, o.Resolver = f.IO, f.Resolver
			if _, err := syncIDs(o); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runTasksSync(cmd.Context(), o)
		},
	}
	configDirFlag(cmd, &o.ConfigDir)
	fl := cmd.Flags()
	fl.StringSliceVar(&o.Tasks, "tasks", nil, "task ids to sync, comma separated (overrides --task-set)")
	fl.StringVar(&o.TaskSet, "task-set", "", "pinned task set to sync: "+benchmarks.SetSmoke+", "+benchmarks.SetSkillsBench10)
	fl.BoolVar(&o.JSON, "json", false, "print what was synced as JSON")
	_ = cmd.RegisterFlagCompletionFunc("task-set", completeTaskSets)
	registerTaskCompletion(cmd, f, "tasks")
	return cmd
}

// syncIDs returns the task ids to sync, or a usage error.
func syncIDs(o *TasksSyncOptions) ([]string, error) {
	if len(o.Tasks) > 0 {
		var ids []string
		for _, id := range o.Tasks {
			id = strings.TrimSpace(id)
			if id == "" {
				return nil, usagef("--tasks has an empty entry (got %q): give task ids separated by single commas", strings.Join(o.Tasks, ","))
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	if o.TaskSet == "" {
		return nil, usagef("nothing to sync: name tasks with --tasks a,b or a set with --task-set NAME (for example --task-set %s)", benchmarks.SetSkillsBench10)
	}
	set, err := benchmarks.LookupTaskSet(o.TaskSet)
	if err != nil {
		return nil, UsageError(err)
	}
	if len(set.IDs) == 0 {
		return nil, usagef("%s cannot be synced as a set: it is every task in the archive and is not pinned; name the tasks you want with --tasks a,b", set.Name)
	}
	return set.IDs, nil
}

// SyncedTask is one synced task.
type SyncedTask struct {
	ID     string `json:"id"`
	Source string `json:"source"` // smoke (written out from harness) or archive
	Dir    string `json:"dir"`
}

// SyncReport is what `harness tasks sync` prints.
type SyncReport struct {
	CacheDir   string       `json:"cache_dir"`
	ArchiveURL string       `json:"archive_url,omitempty"`
	Tasks      []SyncedTask `json:"tasks"`
	// Missing are the requested tasks the archive does not hold.
	Missing []string `json:"missing,omitempty"`
}

func runTasksSync(ctx context.Context, o *TasksSyncOptions) error {
	ids, err := syncIDs(o)
	if err != nil {
		return err
	}
	_, r, err := loadTaskConfig(o.ConfigDir, o.Resolver)
	if err != nil {
		return err
	}
	smoke := map[string]bool{}
	for _, id := range benchmarks.SmokeIDs() {
		smoke[id] = true
	}
	var remote []string
	for _, id := range ids {
		if !smoke[id] {
			remote = append(remote, id)
		}
	}
	if len(remote) > 0 && r.ArchiveURL == "" {
		return UsageError(noArchiveError(remote, o.ConfigDir))
	}
	if len(remote) > 0 {
		fmt.Fprintf(o.IO.ErrOut, "fetching %d task(s) from %s...\n", len(remote), r.ArchiveURL)
	}
	dirs, err := r.Sync(ctx, ids)
	var absent *benchmarks.NotInArchiveError
	if err != nil && !errors.As(err, &absent) {
		if ctx.Err() != nil {
			return fmt.Errorf("sync interrupted; the cache is unchanged: %w", ctx.Err())
		}
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("sync: %w", err)}
	}
	rep := SyncReport{CacheDir: r.CacheDir, ArchiveURL: r.ArchiveURL, Tasks: []SyncedTask{}}
	if absent != nil {
		rep.Missing = absent.IDs
	}
	seen := map[string]bool{}
	for i, id := range ids {
		if seen[id] || dirs[i] == "" {
			continue
		}
		seen[id] = true
		src := "archive"
		if smoke[id] {
			src = "smoke"
		}
		rep.Tasks = append(rep.Tasks, SyncedTask{ID: id, Source: src, Dir: dirs[i]})
	}
	if o.JSON {
		err = writeJSON(o.IO.Out, rep)
	} else {
		err = writeSyncText(o.IO.Out, rep)
	}
	if err == nil && absent != nil {
		// The tasks the archive holds are installed; the rest are named.
		err = &ExitError{Code: ExitFailed, Err: fmt.Errorf("sync: %w", absent)}
	}
	return err
}

// noArchiveError says which archive to fetch for tasks ids and where to
// configure it: the upstream archive a pinned set names, when every task
// is in such a set, else any archive that holds them.
func noArchiveError(ids []string, configDir string) error {
	where := "a file default.toml in a folder you pass as --config-dir"
	if configDir != "" {
		where = filepath.Join(configDir, "default.toml")
	}
	var up *benchmarks.Upstream
	for i, id := range ids {
		u := upstreamOf(id)
		if u == nil || (i > 0 && (up == nil || *up != *u)) {
			up = nil
			break
		}
		up = u
	}
	if up == nil {
		return fmt.Errorf("cannot sync %s: no task archive is configured; set [executor_runtime] archive_url (an http(s) URL, a file:// URL or the path of a .zip, .tar.gz or .tar holding the task folders) and archive_sha256 in %s (docs/tasks.md, \"Sync and pinning\")",
			strings.Join(ids, ", "), where)
	}
	file := path.Base(strings.TrimPrefix(up.Repo, "github.com/")) + "-" + up.Commit[:7] + ".zip"
	return fmt.Errorf("cannot sync %s: no task archive is configured. Their content is pinned to the folder %s/ of %s at commit %s; fetch that commit's archive and configure it:\n"+
		"  curl -L -o %s %s\n  sha256sum %s\n"+
		"then set, in %s:\n  [executor_runtime]\n  archive_url = \"/absolute/path/to/%s\"   # or the URL above\n  archive_sha256 = \"<the sum sha256sum printed>\"\n"+
		"Each pinned task is also checked against its git tree id, whatever archive carries it (docs/tasks.md, \"Content pins\")",
		strings.Join(ids, ", "), up.TasksPath, up.Repo, up.Commit, file, up.Archive, file, where, file)
}

// upstreamOf is the upstream of the pinned set that lists task id, or nil.
func upstreamOf(id string) *benchmarks.Upstream {
	for _, set := range benchmarks.TaskSets() {
		if set.Upstream != nil && slices.Contains(set.IDs, id) {
			return set.Upstream
		}
	}
	return nil
}

func writeSyncText(w io.Writer, rep SyncReport) error {
	fmt.Fprintf(w, "synced %d task(s) into %s:\n", len(rep.Tasks), rep.CacheDir)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, t := range rep.Tasks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.ID, t.Source, t.Dir)
	}
	return tw.Flush()
}

// ---- tasks validate ----

// TasksValidateOptions are the arguments of `harness tasks validate`.
type TasksValidateOptions struct {
	IO        IOStreams
	ConfigDir string
	Resolver  ResolverFunc
	// Paths are task directories or directories of tasks; empty: the smoke
	// tasks shipped in harness.
	Paths []string
	JSON  bool
}

// NewCmdTasksValidate builds `harness tasks validate [PATH...]`.
func NewCmdTasksValidate(f *Factory, runF func(context.Context, *TasksValidateOptions) error) *cobra.Command {
	o := &TasksValidateOptions{}
	cmd := &cobra.Command{
		Use:   "validate [PATH...]",
		Short: "Check task directories and print each task's errors and warnings",
		Long: `Check that each PATH is a valid task in the Harbor format, or a directory with
tasks up to three levels below it (a SkillsBench checkout, say), and print every
task's errors and warnings, and the skills it ships: where its Dockerfile copies
them in the image, and what is wrong with them. Without PATH the smoke tasks shipped in harness are
checked (as written out into the task cache).

Exit codes: 0 every task is valid (warnings allowed), 1 some task is invalid,
2 bad usage (a PATH that does not exist or is not a directory, an invalid configuration).`,
		Example: `  harness tasks validate path/to/my-task
  harness tasks validate ~/skillsbench/tasks --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IO, o.Resolver = f.IO, f.Resolver
			o.Paths = args
			for _, p := range o.Paths {
				st, err := os.Stat(p)
				if err != nil {
					if errors.Is(err, os.ErrNotExist) {
						return usagef("%s does not exist: give a task directory or a directory of tasks", p)
					}
					return UsageError(err)
				}
				if !st.IsDir() {
					return usagef("%s is not a directory: give a task directory or a directory of tasks", p)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runTasksValidate(cmd.Context(), o)
		},
	}
	configDirFlag(cmd, &o.ConfigDir)
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the results as JSON")
	cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	}
	return cmd
}

// ValidatedTask is one task's result in `harness tasks validate --json`.
type ValidatedTask struct {
	benchmarks.ValidationResult
	OK bool `json:"ok"`
}

// ValidateReport is what `harness tasks validate --json` prints.
type ValidateReport struct {
	OK    bool            `json:"ok"`
	Tasks []ValidatedTask `json:"tasks"`
}

func runTasksValidate(ctx context.Context, o *TasksValidateOptions) error {
	paths := o.Paths
	if len(paths) == 0 {
		_, r, err := loadTaskConfig(o.ConfigDir, o.Resolver)
		if err != nil {
			return err
		}
		// Sync of smoke tasks only writes them out from the binary.
		if paths, err = r.Sync(ctx, benchmarks.SmokeIDs()); err != nil {
			return &ExitError{Code: ExitFailed, Err: fmt.Errorf("write out the smoke tasks: %w", err)}
		}
	} else if o.ConfigDir != "" {
		// Paths need no configuration, but a bad --config-dir is still
		// reported rather than silently ignored.
		if _, err := config.Load(o.ConfigDir); err != nil {
			return UsageError(fmt.Errorf("invalid configuration: %w", err))
		}
	}
	results := benchmarks.ValidatePaths(paths)
	rep := ValidateReport{OK: true, Tasks: []ValidatedTask{}}
	invalid, warnings := 0, 0
	for _, res := range results {
		rep.Tasks = append(rep.Tasks, ValidatedTask{ValidationResult: res, OK: res.OK()})
		if !res.OK() {
			rep.OK = false
			invalid++
		}
		warnings += len(res.Warnings)
	}
	if o.JSON {
		if err := writeJSON(o.IO.Out, rep); err != nil {
			return err
		}
	} else {
		writeValidateText(o.IO.Out, rep, invalid, warnings)
	}
	if invalid > 0 {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d of %d task(s) invalid (see above)", invalid, len(results))}
	}
	return nil
}

// skillsLine names a task's skills and where they are in its image.
func skillsLine(r benchmarks.ValidationResult) string {
	if len(r.Skills) == 0 && len(r.SkillDirs) == 0 {
		return ""
	}
	names := make([]string, 0, len(r.Skills))
	for _, s := range r.Skills {
		names = append(names, orDash(s.Name))
	}
	where := "not copied into the image"
	if len(r.SkillDirs) > 0 {
		where = "in the image at " + strings.Join(r.SkillDirs, ", ")
	}
	return fmt.Sprintf("skills: %s (%s)", orDash(strings.Join(names, ", ")), where)
}

func writeValidateText(w io.Writer, rep ValidateReport, invalid, warnings int) {
	name := func(t ValidatedTask) string {
		if t.ID == "" {
			return "(not a task)"
		}
		return t.ID
	}
	width := 0
	for _, t := range rep.Tasks {
		width = max(width, len(name(t)))
	}
	for _, t := range rep.Tasks {
		mark := "ok"
		if !t.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%-4s  %-*s  %s\n", mark, width, name(t), t.Path)
		if line := skillsLine(t.ValidationResult); line != "" {
			fmt.Fprintln(w, "      "+line)
		}
		for _, e := range t.Errors {
			fmt.Fprintln(w, "      error: "+e)
		}
		for _, e := range t.Warnings {
			fmt.Fprintln(w, "      warning: "+e)
		}
	}
	fmt.Fprintf(w, "%d task(s): %d valid, %d invalid, %d warning(s)\n", len(rep.Tasks), len(rep.Tasks)-invalid, invalid, warnings)
}
