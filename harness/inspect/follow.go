package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/harness/stats"
)

// DefaultFollowInterval is how often Follow polls when given no interval.
const DefaultFollowInterval = 2 * time.Second

// Follow tails a live run (or every row of a live matrix) from its files
// and writes one line per event to w: status changes, each trial's
// outcome as its trace lands (training, held-out and validation trials),
// the validation and reflection phases, each iteration's metrics as its
// Parquet part appears, and new history, skill-update, rejection and
// reflection records. Records already on disk when Follow
// starts are not repeated, except the metrics of finished iterations.
//
// It returns nil once the run's status is no longer running (after a last
// poll, so nothing written before the final status is missed), or once no
// process holds the directory any more (its writer died: StatusStopped),
// and
// ctx.Err() when ctx ends first.
func Follow(ctx context.Context, dir string, w io.Writer, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultFollowInterval
	}
	m, err := readManifest(dir)
	if err != nil {
		return err
	}
	f := &follower{w: w, dir: dir, kind: m.Kind, runs: map[string]*runTail{}}
	// The header comes once the files' ends are marked: a record written
	// after it is always shown.
	if err := f.discover(m, true); err != nil {
		return err
	}
	fmt.Fprintf(w, "following %s %s (%s)\n", m.Kind, m.ID, m.Status)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := f.poll(); err != nil {
			return err
		}
		if f.status == StatusStopped {
			fmt.Fprintf(w, "%s %s ended: %s (%s)\n", f.kind, m.ID, f.status, StoppedReason)
			return nil
		}
		if f.status != rundir.StatusRunning {
			fmt.Fprintf(w, "%s %s ended: %s\n", f.kind, m.ID, f.status)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

type follower struct {
	w      io.Writer
	dir    string
	kind   rundir.Kind
	status rundir.Status
	runs   map[string]*runTail
	order  []string
}

// discover adds runs to follow: the directory itself, or a matrix's rows.
// Rows present at the start skip their existing records; rows that appear
// later are read from their beginning.
func (f *follower) discover(m rundir.Manifest, atStart bool) error {
	if m.Kind != rundir.KindMatrix {
		if _, ok := f.runs[f.dir]; !ok {
			f.add(f.dir, "", atStart)
		}
		return nil
	}
	dirs, err := rowDirs(f.dir, m)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if _, ok := f.runs[d]; ok {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, rundir.ManifestFile)); err != nil {
			continue // planned, not started
		}
		f.add(d, "["+filepath.Base(d)+"] ", atStart)
	}
	return nil
}

func (f *follower) add(dir, prefix string, atStart bool) {
	rt := &runTail{dir: dir, prefix: prefix, parts: map[string]stamp{}, watch: newTrialWatch(dir)}
	if atStart {
		m, _ := readManifest(dir)
		rt.watch.prime(dir, m.CompletedIterations)
	}
	for _, name := range []string{rundir.HistoryFile, rundir.SkillUpdatesFile, rundir.RejectedFile, rundir.ReflectionsFile} {
		t := &tailFile{path: filepath.Join(dir, name)}
		if atStart {
			t.skipExisting()
		}
		rt.tails = append(rt.tails, t)
	}
	f.runs[dir] = rt
	f.order = append(f.order, dir)
}

// poll reads the top manifest first, then every file: the final status is
// written last, so files read after seeing it are complete.
func (f *follower) poll() error {
	m, err := readManifest(f.dir)
	if err != nil {
		return fmt.Errorf("follow %s: %w", f.dir, err)
	}
	changed := m.Status != f.status && f.status != ""
	was := f.status
	f.status = m.Status
	if err := f.discover(m, false); err != nil {
		return err
	}
	for _, d := range f.order {
		if err := f.runs[d].poll(f.w); err != nil {
			return err
		}
	}
	if changed {
		fmt.Fprintf(f.w, "status %s -> %s\n", was, m.Status)
	}
	return nil
}

// runTail follows one run directory.
type runTail struct {
	dir, prefix string
	status      rundir.Status
	done        int
	parts       map[string]stamp
	tails       []*tailFile
	watch       *trialWatch
}

type stamp struct {
	size int64
	mod  time.Time
}

// poll reads the manifest first (what it says was written after the
// files it covers), then the files, and prints a status change last, so a
// row's "completed" follows its last trial and iteration lines.
func (r *runTail) poll(w io.Writer) error {
	var statusLine string
	if m, err := readManifest(r.dir); err == nil {
		if r.status != "" && (m.Status != r.status || m.CompletedIterations != r.done) {
			statusLine = fmt.Sprintf("%sstatus %s, iteration %d/%d\n", r.prefix, m.Status, m.CompletedIterations, m.Iterations)
		}
		r.status, r.done = m.Status, m.CompletedIterations
	}
	defer func() { io.WriteString(w, statusLine) }()
	r.watch.poll(w, r.dir, r.prefix, r.done)
	if err := r.pollParts(w); err != nil {
		return err
	}
	for _, t := range r.tails {
		lines, err := t.next()
		if err != nil {
			fmt.Fprintf(w, "%swarning: %v\n", r.prefix, err)
			continue
		}
		for _, line := range lines {
			if s := describeRecord(t.path, line); s != "" {
				fmt.Fprintf(w, "%s%s\n", r.prefix, s)
			}
		}
	}
	return nil
}

// pollParts prints a summary of every metrics part that is new or was
// rewritten (a resumed iteration) since the last poll.
func (r *runTail) pollParts(w io.Writer) error {
	files, err := filepath.Glob(filepath.Join(r.dir, rundir.MetricsDir, "*"+rundir.MetricsPartExt))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, p := range files {
		if strings.HasPrefix(filepath.Base(p), ".") {
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			continue // replaced between the glob and the stat; next poll sees it
		}
		s := stamp{st.Size(), st.ModTime()}
		if old, ok := r.parts[p]; ok && old == s {
			continue
		}
		line, err := summarizePart(p)
		if err != nil {
			fmt.Fprintf(w, "%swarning: %v (will retry)\n", r.prefix, err)
			continue
		}
		r.parts[p] = s
		fmt.Fprintf(w, "%s%s\n", r.prefix, line)
	}
	return nil
}

// summarizePart describes one iteration's metrics in a line.
func summarizePart(path string) (string, error) {
	iters := map[int32]bool{}
	perTask := map[string][]float64{}
	var trials, scored, env int
	var tok int64
	var cost float64
	updates := map[string]bool{}
	err := scanFiles([]string{path}, fullScan, func(batch []record) error {
		for i := range batch {
			c := &batch[i]
			iters[c.Iteration] = true
			trials++
			if r, ok := c.scoredReward(); ok {
				scored++
				perTask[c.TaskID] = append(perTask[c.TaskID], r)
			} else if c.EnvFailure {
				env++
			}
			for r := range roles {
				tok += c.InputTokens[r] + c.OutputTokens[r]
				cost += c.CostUSD[r]
			}
			for _, u := range c.Updates {
				updates[u.ProvenanceID] = true
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	label := strings.TrimSuffix(filepath.Base(path), rundir.MetricsPartExt)
	if cp, ok := rundir.ParseEvalPart(filepath.Base(path)); ok {
		label = fmt.Sprintf("held-out evaluation of the skills after iteration %d", cp)
	} else if len(iters) == 1 {
		for it := range iters {
			label = fmt.Sprintf("iteration %d", it)
		}
	}
	mean := "-"
	if len(perTask) > 0 {
		mean = fmt.Sprintf("%.3f", stats.MacroMean(perTask))
	}
	return fmt.Sprintf("%s: %d trials, %d scored, %d env failures, mean reward %s, %d skill updates, %d tokens, %s",
		label, trials, scored, env, mean, len(updates), tok, usd(cost)), nil
}

// tailFile reads the complete lines appended to a file since the last call.
type tailFile struct {
	path string
	off  int64
}

// skipExisting moves past the lines already in the file.
func (t *tailFile) skipExisting() {
	data, err := os.ReadFile(t.path)
	if err != nil {
		return
	}
	t.off = int64(bytes.LastIndexByte(data, '\n') + 1)
}

// skipToEnd moves past the complete lines in the file reading only its
// end: the call log can be large.
func (t *tailFile) skipToEnd() {
	f, err := os.Open(t.path)
	if err != nil {
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return
	}
	for end := st.Size(); end > 0; {
		start := max(end-64<<10, 0)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			t.off = start + int64(i) + 1
			return
		}
		end = start
	}
}

func (t *tailFile) next() ([][]byte, error) {
	f, err := os.Open(t.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s: %w", t.path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.path, err)
	}
	if st.Size() < t.off {
		// A resume cut the file back to its checkpoint; what is left was
		// already shown.
		t.off = st.Size()
		return nil, nil
	}
	if st.Size() == t.off {
		return nil, nil
	}
	data := make([]byte, st.Size()-t.off)
	if _, err := f.ReadAt(data, t.off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", t.path, err)
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil, nil // a record is being written; take it next time
	}
	t.off += int64(end + 1)
	var lines [][]byte
	for _, l := range bytes.Split(data[:end], []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// describeRecord renders one sidecar record as a line; "" skips it.
func describeRecord(path string, line []byte) string {
	switch {
	case strings.HasSuffix(path, filepath.FromSlash(rundir.HistoryFile)):
		var h historyLine
		if json.Unmarshal(line, &h) != nil {
			return "history: unreadable record"
		}
		switch h.Type {
		case "entry":
			if h.Entry == nil {
				return ""
			}
			s := fmt.Sprintf("i%d %s %s %s %s", h.Entry.Iteration, h.Entry.TaskID, h.Entry.Role, h.Entry.Kind, h.Entry.ID)
			if h.Entry.Withheld {
				s += " (withheld)"
			}
			if h.Entry.Kind == rundir.EntryRoute {
				s += fmt.Sprintf(" (from %s to %s)", h.Entry.From, h.Entry.To)
			}
			return s
		case "reward":
			r := "-"
			if h.Reward != nil {
				r = fmt.Sprintf("%.3f", *h.Reward)
			}
			return fmt.Sprintf("i%d %s delayed reward %s for %d entries", h.Iteration, h.TaskID, r, len(h.IDs))
		case "drop":
			return fmt.Sprintf("i%d %s dropped %d pending entries (%s)", h.Iteration, h.TaskID, len(h.IDs), dash(h.Status))
		}
		return ""
	case strings.HasSuffix(path, filepath.FromSlash(rundir.SkillUpdatesFile)):
		var p provenanceLine
		if json.Unmarshal(line, &p) != nil {
			return "skill update: unreadable record"
		}
		s := fmt.Sprintf("i%d skill update %s %s (%s)", p.Iteration, p.Role, p.ID, dash(p.Flow))
		if p.Rule != "" {
			s += " rule " + p.Rule
		}
		return s + fmt.Sprintf(" %s -> %s", shortHash(p.OldHash), shortHash(p.NewHash))
	case strings.HasSuffix(path, filepath.FromSlash(rundir.RejectedFile)):
		var r rejectedLine
		if json.Unmarshal(line, &r) != nil {
			return "rejection: unreadable record"
		}
		return fmt.Sprintf("i%d rejected %s %s (%d proposals): %s", r.Iteration, r.Type, r.BatchID, len(r.Proposals), truncate(r.Reason, 120))
	case strings.HasSuffix(path, filepath.FromSlash(rundir.ReflectionsFile)):
		var r struct {
			Role      string      `json:"role"`
			Iteration int         `json:"iteration"`
			Outcome   string      `json:"outcome"`
			Pairs     [][2]string `json:"pairs"`
		}
		if json.Unmarshal(line, &r) != nil {
			return "reflection: unreadable record"
		}
		return fmt.Sprintf("i%d reflection %s: %s (%d pairs)", r.Iteration, r.Role, dash(r.Outcome), len(r.Pairs))
	}
	return ""
}
