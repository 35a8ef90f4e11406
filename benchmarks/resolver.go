package benchmarks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/mediated-coevo/harness/config"
)

// Resolver finds tasks by id: the shipped smoke tasks first, then the
// configured task directories, then the local cache, then (only when
// RemoteFetch is on) the task archive.
type Resolver struct {
	// CacheDir holds materialised smoke tasks (smoke-<hash>/<id>), synced
	// tasks (tasks/<id>) and pinned archives (archives/<sha256>.archive).
	CacheDir string
	// TaskDirs are folders holding tasks, up to MaxTaskDepth levels below.
	TaskDirs []string
	// ArchiveURL is an http(s) URL, a file:// URL or a local path of a
	// .zip, .tar.gz or .tar holding task directories (anywhere inside).
	// ArchiveSHA256, when set, pins its content: any other content is
	// refused before use, and the archive is kept in the cache.
	ArchiveURL    string
	ArchiveSHA256 string
	// RemoteFetch lets Resolve fetch missing tasks from the archive. Sync
	// fetches regardless.
	RemoteFetch bool
	HTTPClient  *http.Client

	// maxExtract caps the bytes one extraction writes (0: a large default).
	maxExtract int64
	// contentPin finds a task's pinned tree id; nil: ContentPin, the
	// pins of the task sets.
	contentPin func(id string) (tree string, set TaskSet, ok bool)
}

// NewResolver builds a Resolver from [executor_runtime]. An empty
// task_cache_dir means <user cache dir>/harness/tasks.
func NewResolver(rt config.ExecutorRuntime) (*Resolver, error) {
	cache := rt.TaskCacheDir
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("find a task cache directory (set executor_runtime.task_cache_dir): %w", err)
		}
		cache = filepath.Join(base, "harness", "tasks")
	}
	cache, err := absPath(cache)
	if err != nil {
		return nil, fmt.Errorf("executor_runtime.task_cache_dir: %w", err)
	}
	var dirs []string
	for _, d := range rt.TaskDirs {
		a, err := absPath(d)
		if err != nil {
			return nil, fmt.Errorf("executor_runtime.task_dirs: %w", err)
		}
		dirs = append(dirs, a)
	}
	sum := strings.ToLower(strings.TrimSpace(rt.ArchiveSHA256))
	if sum != "" && !sha256RE.MatchString(sum) {
		return nil, fmt.Errorf("executor_runtime.archive_sha256: %q is not a sha256 (64 hex digits); compute it with `sha256sum ARCHIVE`", rt.ArchiveSHA256)
	}
	if sum != "" && rt.ArchiveURL == "" {
		return nil, errors.New("executor_runtime.archive_sha256 is set but archive_url is empty; set archive_url to the archive it pins")
	}
	return &Resolver{
		CacheDir:      cache,
		TaskDirs:      dirs,
		ArchiveURL:    rt.ArchiveURL,
		ArchiveSHA256: sum,
		RemoteFetch:   rt.RemoteFetch,
		HTTPClient:    &http.Client{},
	}, nil
}

var (
	sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	taskIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`)
)

func absPath(p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	return filepath.Abs(p)
}

// MissingTasksError says which tasks were found nowhere and how to get them.
type MissingTasksError struct {
	IDs []string
	// ArchiveConfigured is false when no archive_url is set.
	ArchiveConfigured bool
	// TaskDirNotes say why a task_dirs entry supplied no task.
	TaskDirNotes []string
}

func (e *MissingTasksError) Error() string {
	list := strings.Join(e.IDs, ", ")
	var msg string
	if !e.ArchiveConfigured {
		msg = fmt.Sprintf("task(s) not found: %s; add a directory that holds them to [executor_runtime] task_dirs, or set archive_url and run `harness tasks sync --tasks %s`", list, strings.Join(e.IDs, ","))
	} else {
		msg = fmt.Sprintf("task(s) not found locally: %s; run `harness tasks sync --tasks %s`, add a directory that holds them to [executor_runtime] task_dirs, or set remote_fetch = true to fetch them from archive_url on demand", list, strings.Join(e.IDs, ","))
	}
	for _, n := range e.TaskDirNotes {
		msg += "\n  task_dirs: " + n
	}
	return msg
}

// NotInArchiveError names tasks that the archive does not hold. The other
// tasks asked for were installed.
type NotInArchiveError struct {
	IDs     []string
	Archive string
	// Held counts the tasks the archive holds.
	Held int
	// Synced counts the tasks that were installed all the same.
	Synced int
}

func (e *NotInArchiveError) Error() string {
	msg := fmt.Sprintf("task(s) not in archive %s: %s (it holds %d tasks; check the ids, or point archive_url at another archive)", e.Archive, strings.Join(e.IDs, ", "), e.Held)
	if e.Synced > 0 {
		msg += fmt.Sprintf("; the other %d task(s) were synced", e.Synced)
	}
	return msg
}

func checkIDs(ids []string) error {
	if len(ids) == 0 {
		return errors.New("no task ids given")
	}
	for _, id := range ids {
		if !taskIDRE.MatchString(id) || id == "." || id == ".." {
			return fmt.Errorf("invalid task id %q: use letters, digits, '.', '_' and '-' only", id)
		}
	}
	return nil
}

// Resolve finds and loads the tasks, in the order given. Missing tasks are
// fetched from the archive only when RemoteFetch is on; otherwise the error
// is a *MissingTasksError naming all of them. Tasks the archive lacks make
// a *NotInArchiveError.
func (r *Resolver) Resolve(ctx context.Context, ids []string) ([]*Task, error) {
	if err := checkIDs(ids); err != nil {
		return nil, err
	}
	index, notes := r.taskDirIndex()
	found := map[string]*Task{}
	var missing []string
	for _, id := range ids {
		if _, ok := found[id]; ok {
			continue
		}
		t, err := r.findLocal(id, index)
		if err != nil {
			return nil, err
		}
		if t == nil {
			if !slices.Contains(missing, id) {
				missing = append(missing, id)
			}
			continue
		}
		found[id] = t
	}
	if len(missing) > 0 {
		if !r.RemoteFetch || r.ArchiveURL == "" {
			return nil, &MissingTasksError{IDs: missing, ArchiveConfigured: r.ArchiveURL != "", TaskDirNotes: notes}
		}
		dirs, absent, err := r.syncFromArchive(ctx, missing)
		if err != nil {
			return nil, err
		}
		if absent != nil {
			return nil, absent
		}
		for _, id := range missing {
			t, err := Load(dirs[id])
			if err != nil {
				return nil, fmt.Errorf("load task %s: %w", id, err)
			}
			t.Source = "archive"
			found[id] = t
		}
	}
	out := make([]*Task, len(ids))
	for i, id := range ids {
		out[i] = found[id]
	}
	return out, nil
}

// CheckAvailable reports, without writing or fetching anything, whether
// Resolve could find every task: a *MissingTasksError names those found
// nowhere locally when the archive cannot supply them (remote_fetch off or
// no archive_url). It does not load the tasks.
func (r *Resolver) CheckAvailable(ids []string) error {
	if err := checkIDs(ids); err != nil {
		return err
	}
	index, notes := r.taskDirIndex()
	var missing []string
	for _, id := range ids {
		if isSmokeID(id) || index[id] != "" || isRegular(filepath.Join(r.cachedDir(id), "task.toml")) {
			continue
		}
		if !slices.Contains(missing, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 && (!r.RemoteFetch || r.ArchiveURL == "") {
		return &MissingTasksError{IDs: missing, ArchiveConfigured: r.ArchiveURL != "", TaskDirNotes: notes}
	}
	return nil
}

// findLocal looks for id without touching the network: smoke, task_dirs
// (through index), cache. It returns nil, nil when the task is in none.
func (r *Resolver) findLocal(id string, index map[string]string) (*Task, error) {
	var (
		dir, source string
	)
	switch {
	case isSmokeID(id):
		d, err := materializeSmoke(r.CacheDir, id)
		if err != nil {
			return nil, err
		}
		dir, source = d, "smoke"
	case index[id] != "":
		dir, source = index[id], "task_dirs"
	case isRegular(filepath.Join(r.cachedDir(id), "task.toml")):
		dir, source = r.cachedDir(id), "cache"
	default:
		return nil, nil
	}
	t, err := Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load task %s (from %s): %w", id, source, err)
	}
	t.Source = source
	return t, nil
}

// taskDirIndex finds the tasks under every task_dirs entry (see findTasks)
// and maps each id to its folder; an earlier entry wins over a later one.
// Notes say why an entry supplied no task.
func (r *Resolver) taskDirIndex() (map[string]string, []string) {
	index := map[string]string{}
	var notes []string
	for _, d := range r.TaskDirs {
		s, err := findTasks(d, true)
		if err != nil {
			notes = append(notes, err.Error())
			continue
		}
		for _, d := range s.Incomplete {
			notes = append(notes, fmt.Sprintf("%s holds task.toml but no instruction.md, so it is not a task", d))
		}
		if why := s.Empty(); why != "" {
			notes = append(notes, why)
			continue
		}
		for id, dir := range s.byID() {
			if _, ok := index[id]; !ok && taskIDRE.MatchString(id) {
				index[id] = dir
			}
		}
	}
	return index, notes
}

// LocalIDs lists the ids of the tasks under task_dirs and of those synced
// into the cache, sorted, without loading them or writing anything: shell
// completion calls it at every key press.
func (r *Resolver) LocalIDs() []string {
	index, _ := r.taskDirIndex()
	ids := sortedKeys(index)
	for _, id := range r.cachedIDs() {
		if _, ok := index[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// TaskDirNotes says, for each task_dirs entry that supplies no task, why.
func (r *Resolver) TaskDirNotes() []string {
	_, notes := r.taskDirIndex()
	return notes
}

func (r *Resolver) cachedDir(id string) string { return filepath.Join(r.CacheDir, "tasks", id) }

// Sync fetches the tasks from the archive into the cache (replacing cached
// copies) and returns their directories, in the order given. Smoke tasks
// are only materialised. Tasks the archive lacks get "" and are named by a
// *NotInArchiveError, while the rest are installed; nothing is installed
// unless every task the archive holds loads.
func (r *Resolver) Sync(ctx context.Context, ids []string) ([]string, error) {
	if err := checkIDs(ids); err != nil {
		return nil, err
	}
	dirs := map[string]string{}
	var remote []string
	for _, id := range ids {
		if isSmokeID(id) {
			d, err := materializeSmoke(r.CacheDir, id)
			if err != nil {
				return nil, err
			}
			dirs[id] = d
		} else if !slices.Contains(remote, id) {
			remote = append(remote, id)
		}
	}
	var absent *NotInArchiveError
	if len(remote) > 0 {
		got, miss, err := r.syncFromArchive(ctx, remote)
		if err != nil {
			return nil, err
		}
		for id, d := range got {
			dirs[id] = d
		}
		absent = miss
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = dirs[id]
	}
	if absent != nil {
		absent.Synced = len(dirs)
		return out, absent
	}
	return out, nil
}

// List returns every task available without the network (smoke, task_dirs,
// cache), sorted by id; when an id appears in several places the one Resolve
// would pick is listed. Tasks that fail to load are left out and their
// errors joined into err, alongside the tasks that did load; so are the
// reasons a task_dirs entry supplied no task.
func (r *Resolver) List(ctx context.Context) ([]*Task, error) {
	seen := map[string]bool{}
	var (
		out  []*Task
		errs []error
	)
	add := func(id, dir, source string) {
		if seen[id] {
			return
		}
		seen[id] = true
		t, err := Load(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("task %s (from %s): %w", id, source, err))
			return
		}
		t.Source = source
		out = append(out, t)
	}
	for _, id := range SmokeIDs() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d, err := materializeSmoke(r.CacheDir, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		add(id, d, "smoke")
	}
	index, notes := r.taskDirIndex()
	for _, n := range notes {
		errs = append(errs, fmt.Errorf("task_dirs: %s", n))
	}
	for _, id := range sortedKeys(index) {
		add(id, index[id], "task_dirs")
	}
	for _, id := range r.cachedIDs() {
		add(id, r.cachedDir(id), "cache")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, errors.Join(errs...)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// cachedIDs lists the synced tasks in the cache, sorted.
func (r *Resolver) cachedIDs() []string {
	entries, err := os.ReadDir(filepath.Join(r.CacheDir, "tasks"))
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && isRegular(filepath.Join(r.CacheDir, "tasks", e.Name(), "task.toml")) {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// TaskSetIDs returns the ids of a task set. Pinned sets list their ids.
// skillsbench-all is every task of the archive, when the archive is on disk
// (a local file, or a pinned archive already kept in the cache) or
// RemoteFetch allows downloading it, together with the tasks under
// task_dirs and those synced into the cache; smoke tasks are never in it.
func (r *Resolver) TaskSetIDs(ctx context.Context, name string) ([]string, error) {
	set, err := LookupTaskSet(name)
	if err != nil {
		return nil, err
	}
	if len(set.IDs) > 0 {
		return set.IDs, nil
	}
	ids := map[string]bool{}
	if r.ArchiveURL != "" && (r.RemoteFetch || r.ArchiveOnDisk()) {
		archived, err := r.archiveIDs(ctx)
		if err != nil {
			return nil, err
		}
		for _, id := range archived {
			ids[id] = true
		}
	}
	index, _ := r.taskDirIndex()
	for id := range index {
		ids[id] = true
	}
	for _, id := range r.cachedIDs() {
		ids[id] = true
	}
	var out []string
	for id := range ids {
		if !isSmokeID(id) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		if r.ArchiveURL != "" && (r.RemoteFetch || r.ArchiveOnDisk()) {
			return nil, fmt.Errorf("task set %s is empty: archive %s holds no tasks (no directory with task.toml) and task_dirs and the cache hold none", name, r.ArchiveURL)
		}
		return nil, fmt.Errorf("task set %s is empty until tasks are here: set [executor_runtime] archive_url (with remote_fetch = true to fetch it, or a local archive file), add a folder of tasks to task_dirs, or run `harness tasks sync --tasks ID,...`", name)
	}
	return out, nil
}

// archiveIDs lists the task ids the archive holds. A local archive is
// read in place (after its checksum), so listing writes nothing.
func (r *Resolver) archiveIDs(ctx context.Context) ([]string, error) {
	p, cleanup, err := r.archiveToRead(ctx)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	entries, err := scanArchive(p)
	if err != nil {
		r.forgetArchive(p)
		return nil, fmt.Errorf("archive %s: %w", r.ArchiveURL, err)
	}
	var ids []string
	for id := range taskRoots(entries) {
		if taskIDRE.MatchString(id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// syncFromArchive installs the tasks ids from the archive into the cache and
// returns their directories, and a *NotInArchiveError (Synced unset) for
// those the archive lacks. The archive is checked whole (checksum, every
// member) and the tasks are extracted into a temporary directory before
// anything in the cache changes.
func (r *Resolver) syncFromArchive(ctx context.Context, ids []string) (map[string]string, *NotInArchiveError, error) {
	if r.ArchiveURL == "" {
		return nil, nil, fmt.Errorf("cannot fetch %s: no task archive configured; set [executor_runtime] archive_url (an http(s) URL, a file:// URL or a local .zip/.tar.gz path) and archive_sha256 to pin it", strings.Join(ids, ", "))
	}
	p, cleanup, err := r.archiveFile(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer cleanup()
	entries, err := scanArchive(p)
	if err != nil {
		r.forgetArchive(p)
		return nil, nil, fmt.Errorf("archive %s refused: %w", r.ArchiveURL, err)
	}
	roots := taskRoots(entries)
	var absent *NotInArchiveError
	var present []string
	for _, id := range ids {
		if _, ok := roots[id]; ok {
			present = append(present, id)
			continue
		}
		if absent == nil {
			absent = &NotInArchiveError{Archive: r.ArchiveURL, Held: len(roots)}
		}
		absent.IDs = append(absent.IDs, id)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	out, err := r.installFromArchive(p, present, roots)
	if err != nil {
		return nil, nil, err
	}
	if absent != nil {
		absent.Synced = len(out)
	}
	return out, absent, nil
}

// installFromArchive extracts the tasks ids (found at roots) from the
// archive at p and installs them into the cache, only once all of them
// load.
func (r *Resolver) installFromArchive(p string, ids []string, roots map[string]string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Join(r.CacheDir, "tasks"), 0o755); err != nil {
		return nil, fmt.Errorf("create task cache: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Join(r.CacheDir, "tasks"), ".extract-*")
	if err != nil {
		return nil, fmt.Errorf("create extraction directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	extracted, staged := filepath.Join(tmp, "x"), filepath.Join(tmp, "s")
	for _, d := range []string{extracted, staged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("create extraction directory: %w", err)
		}
	}
	keep := func(name string) bool {
		for _, id := range ids {
			root := roots[id]
			if name == root || strings.HasPrefix(name, root+"/") {
				return true
			}
		}
		return false
	}
	if err := extractArchive(p, extracted, keep, r.maxExtract); err != nil {
		r.forgetArchive(p)
		return nil, fmt.Errorf("archive %s refused: %w", r.ArchiveURL, err)
	}

	// Every task must load before any is installed.
	var probs []error
	for _, id := range ids {
		src := filepath.Join(extracted, filepath.FromSlash(roots[id]))
		if err := os.Rename(src, filepath.Join(staged, id)); err != nil {
			return nil, fmt.Errorf("stage task %s: %w", id, err)
		}
		if _, err := Load(filepath.Join(staged, id)); err != nil {
			probs = append(probs, fmt.Errorf("task %s from the archive: %w", id, err))
			continue
		}
		if err := r.checkContentPin(id, filepath.Join(staged, id)); err != nil {
			probs = append(probs, fmt.Errorf("task %s from archive %s: %w", id, r.ArchiveURL, err))
		}
	}
	if len(probs) > 0 {
		return nil, errors.Join(probs...)
	}
	for _, id := range ids {
		dest := r.cachedDir(id)
		if err := replaceDir(filepath.Join(staged, id), dest); err != nil {
			return nil, fmt.Errorf("install task %s into the cache: %w", id, err)
		}
		out[id] = dest
	}
	return out, nil
}

// ArchiveOnDisk reports whether the archive can be read without a
// download: a local file, or a pinned copy already kept in the cache.
func (r *Resolver) ArchiveOnDisk() bool {
	if r.ArchiveSHA256 != "" && isRegular(r.pinnedArchivePath()) {
		return true
	}
	if p, ok := localArchivePath(r.ArchiveURL); ok {
		return isRegular(p)
	}
	return false
}

// forgetArchive removes the copy of a refused archive at p when the cache
// kept it (a pinned one): its checksum matched, but what it holds is not
// safe to extract, so it must not be read again from the cache.
func (r *Resolver) forgetArchive(p string) {
	if r.ArchiveSHA256 != "" && p == r.pinnedArchivePath() {
		os.Remove(p)
	}
}

func (r *Resolver) pinnedArchivePath() string {
	return filepath.Join(r.CacheDir, "archives", r.ArchiveSHA256+".archive")
}

// localArchivePath returns the file path when the archive URL names a local
// file (a plain path or file://).
func localArchivePath(raw string) (string, bool) {
	if strings.HasPrefix(raw, "file://") {
		u, err := url.Parse(raw)
		if err != nil {
			return strings.TrimPrefix(raw, "file://"), true
		}
		if u.Host != "" && u.Host != "localhost" {
			return u.Host + u.Path, true // file://relative/path, read leniently
		}
		return u.Path, true
	}
	if !strings.Contains(raw, "://") {
		p, err := absPath(raw)
		if err != nil {
			return raw, true
		}
		return p, true
	}
	return "", false
}

// archiveFile returns a local file holding the archive, verified against
// ArchiveSHA256 when it is set. A pinned archive, local or downloaded, is
// copied into the cache as archives/<sha256>.archive and read from there
// from then on, so it outlives the file or URL it came from. An unpinned
// local file is read in place; an unpinned download goes to a temporary
// file that cleanup removes. A refused archive leaves nothing behind.
func (r *Resolver) archiveFile(ctx context.Context) (string, func(), error) {
	noop := func() {}
	local, isLocal := localArchivePath(r.ArchiveURL)
	if !isLocal {
		if u, err := url.Parse(r.ArchiveURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return "", noop, fmt.Errorf("archive_url %q: use an http(s) URL, a file:// URL or a local file path", r.ArchiveURL)
		}
	}
	if r.ArchiveSHA256 != "" {
		if sum, err := fileSHA256(r.pinnedArchivePath()); err == nil && sum == r.ArchiveSHA256 {
			return r.pinnedArchivePath(), noop, nil
		}
	}
	var body io.ReadCloser
	if isLocal {
		f, err := os.Open(local)
		if err != nil {
			return "", noop, fmt.Errorf("read task archive: %w", err)
		}
		if r.ArchiveSHA256 == "" {
			f.Close()
			return local, noop, nil
		}
		body = f
	} else {
		b, err := r.download(ctx)
		if err != nil {
			return "", noop, err
		}
		body = b
	}
	defer body.Close()
	return r.store(body)
}

// archiveToRead is archiveFile for reading only: a local archive not yet
// kept in the cache is checked against its pin and read where it is.
func (r *Resolver) archiveToRead(ctx context.Context) (string, func(), error) {
	local, isLocal := localArchivePath(r.ArchiveURL)
	if !isLocal || (r.ArchiveSHA256 != "" && isRegular(r.pinnedArchivePath())) {
		return r.archiveFile(ctx)
	}
	noop := func() {}
	if r.ArchiveSHA256 == "" {
		return local, noop, nil
	}
	sum, err := fileSHA256(local)
	if err != nil {
		return "", noop, fmt.Errorf("read task archive: %w", err)
	}
	if sum != r.ArchiveSHA256 {
		return "", noop, shaMismatch(r.ArchiveURL, r.ArchiveSHA256, sum)
	}
	return local, noop, nil
}

// download opens the archive URL for reading.
func (r *Resolver) download(ctx context.Context) (io.ReadCloser, error) {
	client := r.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.ArchiveURL, nil)
	if err != nil {
		return nil, fmt.Errorf("download task archive: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download task archive %s: %w", r.ArchiveURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("download task archive %s: HTTP %s", r.ArchiveURL, resp.Status)
	}
	return resp.Body, nil
}

// store copies the archive into a temporary file in the cache while
// hashing it, then checks it against the pin and keeps it under archives/.
func (r *Resolver) store(body io.Reader) (string, func(), error) {
	noop := func() {}
	if err := os.MkdirAll(r.CacheDir, 0o755); err != nil {
		return "", noop, fmt.Errorf("create task cache: %w", err)
	}
	f, err := os.CreateTemp(r.CacheDir, ".download-*")
	if err != nil {
		return "", noop, fmt.Errorf("copy task archive: %w", err)
	}
	remove := func() { os.Remove(f.Name()) }
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		remove()
		return "", noop, fmt.Errorf("copy task archive %s: %w", r.ArchiveURL, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if r.ArchiveSHA256 == "" {
		return f.Name(), remove, nil
	}
	if sum != r.ArchiveSHA256 {
		remove()
		return "", noop, shaMismatch(r.ArchiveURL, r.ArchiveSHA256, sum)
	}
	keep := r.pinnedArchivePath()
	if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
		return f.Name(), remove, nil // still usable, just not kept
	}
	if err := os.Rename(f.Name(), keep); err != nil {
		return f.Name(), remove, nil
	}
	return keep, noop, nil
}

func shaMismatch(src, want, got string) error {
	return fmt.Errorf("task archive %s refused: sha256 is %s but archive_sha256 pins %s; the archive changed or archive_sha256 is wrong (nothing was written)", src, got, want)
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
