package inspect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// batchRows is how many rows a scan hands over at a time. Memory for rows
// stays at one batch (plus one page per column) whatever the dataset size.
const batchRows = 1024

// roles are the spend roles of a metric row, in display order; coevo is
// the co-evolution work (advisor, drafts, validation trials, reflection).
var roles = [...]string{"planner", "executor", "mediator", "compactor", "coevo"}

// record is the part of a metric row the views read. Only the columns a
// view asks for are decoded; the others keep their zero values.
type record struct {
	RunID, Row, Preset, Condition, Policy, Lab string
	Seed                                       int64
	Offline                                    bool
	Iteration                                  int32
	TaskID                                     string
	Student                                    string
	Status                                     rundir.TrialStatus
	// Phase is the metric row's phase column (empty in parts written before
	// it existed, which rundir reads as training); Checkpoint the
	// checkpoint_iteration of an evaluation row.
	Phase      string
	Checkpoint int32
	// Reward is valid when HasReward; a NULL reward column means none.
	Reward     float64
	HasReward  bool
	EnvFailure bool

	InputTokens, OutputTokens [len(roles)]int64
	CostUSD                   [len(roles)]float64

	Updates []update

	// Why a trial failed, and how its model calls and tool calls went.
	Cause              string
	ModelFailures      int32
	MalformedToolCalls int32
	CachedInputTokens  int64
}

// update is one committed skill update as metric rows carry it.
type update struct {
	Role, ProvenanceID, OldHash, NewHash string
}

// scoredReward reports the trial's reward when it has a valid one.
// Environment failures and interrupted trials never do, whatever a writer
// put in the column: neither says anything about the agent. A trial the
// agent itself broke (rundir.AgentFault) scores 0, as in the gate.
func (r *record) scoredReward() (float64, bool) {
	if r.EnvFailure || r.Status == rundir.TrialInterrupted {
		return 0, false
	}
	if rundir.AgentFault(r.Status, r.Cause) {
		return 0, true
	}
	if !r.HasReward {
		return 0, false
	}
	return r.Reward, true
}

// column is one scalar column a scan may decode.
type column struct {
	path []string
	kind parquet.Kind
	set  func(r *record, v parquet.Value, in interner)
}

func strCol(name string, field func(*record) *string) column {
	return column{[]string{name}, parquet.ByteArray, func(r *record, v parquet.Value, in interner) {
		*field(r) = in.str(v.ByteArray())
	}}
}

// The column sets of the views.
var (
	compareColumns = []column{
		strCol("run_id", func(r *record) *string { return &r.RunID }),
		strCol("row", func(r *record) *string { return &r.Row }),
		strCol("baseline_preset", func(r *record) *string { return &r.Preset }),
		strCol("condition", func(r *record) *string { return &r.Condition }),
		strCol("skill_update_policy", func(r *record) *string { return &r.Policy }),
		strCol("lab", func(r *record) *string { return &r.Lab }),
		strCol("task_id", func(r *record) *string { return &r.TaskID }),
		strCol("student", func(r *record) *string { return &r.Student }),
		strCol("status", func(r *record) *string { return (*string)(&r.Status) }),
		// The cause tells an agent's own error, which scores 0, from a
		// model failure, which scores nothing (see scoredReward).
		strCol("cause", func(r *record) *string { return &r.Cause }),
		strCol("phase", func(r *record) *string { return &r.Phase }),
		{[]string{"checkpoint_iteration"}, parquet.Int32, func(r *record, v parquet.Value, _ interner) { r.Checkpoint = v.Int32() }},
		{[]string{"seed"}, parquet.Int64, func(r *record, v parquet.Value, _ interner) { r.Seed = v.Int64() }},
		{[]string{"offline"}, parquet.Boolean, func(r *record, v parquet.Value, _ interner) { r.Offline = v.Boolean() }},
		{[]string{"iteration"}, parquet.Int32, func(r *record, v parquet.Value, _ interner) { r.Iteration = v.Int32() }},
		{[]string{"env_failure"}, parquet.Boolean, func(r *record, v parquet.Value, _ interner) { r.EnvFailure = v.Boolean() }},
		{[]string{"reward"}, parquet.Double, func(r *record, v parquet.Value, _ interner) {
			r.HasReward = !v.IsNull()
			if r.HasReward {
				r.Reward = v.Double()
			}
		}},
	}
	// failureColumns say why a trial failed; parts written before they
	// existed leave them empty.
	failureColumns = []column{
		{[]string{"model_failures"}, parquet.Int32, func(r *record, v parquet.Value, _ interner) { r.ModelFailures = v.Int32() }},
		{[]string{"malformed_tool_calls"}, parquet.Int32, func(r *record, v parquet.Value, _ interner) { r.MalformedToolCalls = v.Int32() }},
		{[]string{"cached_input_tokens"}, parquet.Int64, func(r *record, v parquet.Value, _ interner) { r.CachedInputTokens = v.Int64() }},
	}
	fullColumns = append(append(append([]column(nil), compareColumns...), spendColumns()...), failureColumns...)
)

func spendColumns() []column {
	var cols []column
	for i, role := range roles {
		cols = append(cols,
			column{[]string{role + "_input_tokens"}, parquet.Int64, func(r *record, v parquet.Value, _ interner) { r.InputTokens[i] = v.Int64() }},
			column{[]string{role + "_output_tokens"}, parquet.Int64, func(r *record, v parquet.Value, _ interner) { r.OutputTokens[i] = v.Int64() }},
			column{[]string{role + "_cost_usd"}, parquet.Double, func(r *record, v parquet.Value, _ interner) { r.CostUSD[i] = v.Double() }},
		)
	}
	return cols
}

// updateLeaves are the leaves of the skill_updates list, in update order.
var updateLeaves = [...]string{"role", "provenance_id", "old_hash", "new_hash"}

func (u *update) setLeaf(i int, s string) {
	switch i {
	case 0:
		u.Role = s
	case 1:
		u.ProvenanceID = s
	case 2:
		u.OldHash = s
	case 3:
		u.NewHash = s
	}
}

// scanOptions says what a scan decodes.
type scanOptions struct {
	columns []column
	updates bool // decode the skill_updates list
}

var (
	compareScan = scanOptions{columns: compareColumns}
	fullScan    = scanOptions{columns: fullColumns, updates: true}
)

// interner shares one string per distinct value (task ids, row names,
// statuses repeat on every row), so a scan allocates per value, not per row.
type interner map[string]string

func (in interner) str(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

// metricFiles lists the Parquet parts of a run directory (dir/metrics) or
// of every row of a matrix directory (dir/*/metrics), sorted by path.
// Hidden files (a part being written) are skipped.
func metricFiles(dir string) ([]string, error) {
	var files []string
	for _, pattern := range []string{
		filepath.Join(dir, rundir.MetricsDir, "*"+rundir.MetricsPartExt),
		filepath.Join(dir, "*", rundir.MetricsDir, "*"+rundir.MetricsPartExt),
	} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			return nil, fmt.Errorf("list metrics of %s: %w", dir, err)
		}
		for _, m := range matches {
			if !strings.HasPrefix(filepath.Base(m), ".") {
				files = append(files, m)
			}
		}
	}
	sort.Strings(files)
	return files, nil
}

// scanFiles streams the rows of every file through fn, a batch at a time,
// decoding only the columns opts names. The batch passed to fn is reused.
//
// Columns are read straight from their pages rather than through
// parquet-go's row reader: converting a file to a projection there still
// decodes every column of every row, which made a 100k-row matrix take
// seconds instead of a fraction of one.
//
// With several cores, files are decoded by up to maxScanWorkers goroutines
// while fn still sees the batches one at a time, in file order: decoding
// is nearly all of a scan's work, and aggregation stays single-threaded.
func scanFiles(files []string, opts scanOptions, fn func([]record) error) error {
	if workers := min(runtime.GOMAXPROCS(0), maxScanWorkers, len(files)); workers > 1 {
		return scanParallel(files, opts, fn, workers)
	}
	s := newScanner(opts, fn)
	for _, path := range files {
		if err := s.file(path); err != nil {
			return err
		}
	}
	return s.flush()
}

// maxScanWorkers caps the goroutines decoding files at once.
const maxScanWorkers = 4

func newScanner(opts scanOptions, fn func([]record) error) *scanner {
	return &scanner{opts: opts, batch: make([]record, 0, batchRows), in: interner{}, fn: fn, plans: map[string]filePlan{}}
}

// scanPart is a batch of a file's rows, or the error that ended it.
type scanPart struct {
	batch []record
	err   error
}

// errScanStopped ends a worker whose results are no longer wanted.
var errScanStopped = errors.New("scan stopped")

// scanParallel decodes files on workers goroutines, each with its own
// scanner, and hands their batches to fn in file order. At most 2 x
// workers files are decoded ahead of the one fn is reading, so memory stays
// bounded by a few files' rows.
func scanParallel(files []string, opts scanOptions, fn func([]record) error, workers int) error {
	parts := make([]chan scanPart, len(files))
	for i := range parts {
		parts[i] = make(chan scanPart, 2)
	}
	ahead := make(chan struct{}, 2*workers)
	free := make(chan []record, 4*workers) // batches fn is done with, for reuse
	next := make(chan int)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newScanner(opts, nil)
			s.fresh, s.free = true, free
			for i := range next {
				s.fn = func(b []record) error {
					select {
					case parts[i] <- scanPart{batch: b}:
						return nil
					case <-done:
						return errScanStopped
					}
				}
				err := s.file(files[i])
				if err == nil {
					err = s.flush()
				}
				if err != nil && !errors.Is(err, errScanStopped) {
					select {
					case parts[i] <- scanPart{err: err}:
					case <-done:
					}
				}
				close(parts[i])
			}
		}()
	}
	go func() {
		defer close(next)
		for i := range files {
			select {
			case ahead <- struct{}{}:
			case <-done:
				return
			}
			select {
			case next <- i:
			case <-done:
				return
			}
		}
	}()
	err := drainParts(parts, ahead, free, fn)
	close(done)
	wg.Wait()
	return err
}

// drainParts hands the batches of each file to fn in file order, letting
// one more file be decoded ahead as each one is done; the first error
// (a file's or fn's) ends it.
func drainParts(parts []chan scanPart, ahead chan struct{}, free chan []record, fn func([]record) error) error {
	for _, ch := range parts {
		for p := range ch {
			err := p.err
			if err == nil {
				err = fn(p.batch)
			}
			if err != nil {
				return err
			}
			select {
			case free <- p.batch:
			default:
			}
		}
		<-ahead
	}
	return nil
}

type scanner struct {
	opts    scanOptions
	batch   []record
	in      interner
	fn      func([]record) error
	cursors []*cursor // reused across row groups: their buffers are the bulk of a scan's allocations
	plans   map[string]filePlan
	key     []byte
	// fresh hands every batch over for good, for a consumer that keeps
	// batches past fn's return; the next one comes from free (batches the
	// consumer is done with) or is made, sized to the file so that a small
	// part does not cost a full batch.
	fresh bool
	free  chan []record
}

// take returns an empty batch for at least n rows.
func (s *scanner) take(n int) []record {
	select {
	case b := <-s.free:
		if cap(b) >= n {
			return b[:0]
		}
	default:
	}
	return make([]record, 0, n)
}

// schemaKey appends to dst what decides a file's plan: each schema
// element's name, type, repetition and number of children, in order.
func schemaKey(dst []byte, elems []format.SchemaElement) []byte {
	for _, e := range elems {
		dst = append(dst, e.Name...)
		dst = append(dst, 0, byte(e.Type.V), flag(e.Type.Valid), byte(e.RepetitionType.V), flag(e.RepetitionType.Valid))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(e.NumChildren.V))
	}
	return dst
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// cursor returns the i-th reusable cursor, set to walk chunk.
func (s *scanner) cursor(i int, chunk parquet.ColumnChunk) *cursor {
	for len(s.cursors) <= i {
		s.cursors = append(s.cursors, &cursor{buf: make([]parquet.Value, 256)})
	}
	c := s.cursors[i]
	c.pages, c.page, c.values, c.off, c.n = chunk.Pages(), nil, nil, 0, 0
	return c
}

func (s *scanner) flush() error {
	if len(s.batch) == 0 {
		return nil
	}
	err := s.fn(s.batch)
	if s.fresh {
		s.batch = nil // handed over: the next rows go to a new batch
	} else {
		s.batch = s.batch[:0]
	}
	return err
}

func (s *scanner) file(path string) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read metrics: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read metrics: %w", err)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return fmt.Errorf("read metrics file %s (damaged or not Parquet; move it aside to read the rest): %w", path, err)
	}
	defer func() {
		// The decoder panics on some malformed pages; report them as errors.
		if p := recover(); p != nil {
			err = fmt.Errorf("read metrics file %s: damaged data: %v", path, p)
		}
	}()
	// Parts written by one harness share their schema: the plan is made
	// once per distinct schema, not once per file.
	s.key = schemaKey(s.key[:0], pf.Metadata().Schema)
	plan, ok := s.plans[string(s.key)]
	if !ok {
		plan, err = s.plan(pf.Schema())
		if err != nil {
			return fmt.Errorf("read metrics file %s: %w", path, err)
		}
		s.plans[string(s.key)] = plan
	}
	if s.fresh && s.batch == nil {
		s.batch = s.take(int(min(batchRows, max(pf.NumRows(), 1))))
	}
	for _, rg := range pf.RowGroups() {
		if err := s.rowGroup(rg, plan); err != nil {
			return fmt.Errorf("read metrics file %s: %w", path, err)
		}
	}
	return nil
}

// filePlan maps the wanted columns to the file's leaf columns. A column the
// file lacks (written by an older harness) is left at its zero value.
type filePlan struct {
	scalars []plannedColumn
	leaves  []plannedColumn // skill_updates leaves, index = updateLeaves index; -1 absent
}

type plannedColumn struct {
	index    int
	maxDef   int
	set      func(*record, parquet.Value, interner)
	leaf     int
	name     string
	repeated bool
}

func (s *scanner) plan(schema *parquet.Schema) (filePlan, error) {
	var p filePlan
	for _, c := range s.opts.columns {
		lc, ok := schema.Lookup(c.path...)
		if !ok {
			continue
		}
		if k := lc.Node.Type().Kind(); k != c.kind {
			return p, fmt.Errorf("column %s holds %s values, want %s: the file was not written by this harness", strings.Join(c.path, "."), k, c.kind)
		}
		if lc.MaxRepetitionLevel != 0 {
			return p, fmt.Errorf("column %s is repeated, want one value per row", strings.Join(c.path, "."))
		}
		p.scalars = append(p.scalars, plannedColumn{index: lc.ColumnIndex, maxDef: lc.MaxDefinitionLevel, set: c.set, name: strings.Join(c.path, ".")})
	}
	if s.opts.updates {
		for i, leaf := range updateLeaves {
			lc, ok := schema.Lookup("skill_updates", "list", "element", leaf)
			if !ok {
				continue
			}
			if lc.Node.Type().Kind() != parquet.ByteArray || lc.MaxRepetitionLevel != 1 {
				return p, fmt.Errorf("column skill_updates.%s does not have the metrics schema's shape", leaf)
			}
			p.leaves = append(p.leaves, plannedColumn{index: lc.ColumnIndex, maxDef: lc.MaxDefinitionLevel, leaf: i,
				name: "skill_updates." + leaf, repeated: true})
		}
	}
	return p, nil
}

func (s *scanner) rowGroup(rg parquet.RowGroup, plan filePlan) error {
	chunks := rg.ColumnChunks()
	scalars := make([]*cursor, len(plan.scalars))
	leaves := make([]*cursor, len(plan.leaves))
	defer func() {
		for _, c := range append(scalars, leaves...) {
			if c != nil {
				c.close()
			}
		}
	}()
	for i, pc := range plan.scalars {
		scalars[i] = s.cursor(i, chunks[pc.index])
	}
	for i, pc := range plan.leaves {
		leaves[i] = s.cursor(len(scalars)+i, chunks[pc.index])
	}
	rows := rg.NumRows()
	for n := int64(0); n < rows; n++ {
		if len(s.batch) == cap(s.batch) { // a fresh scanner handed its batch over
			s.batch = s.take(batchRows)
		}
		s.batch = s.batch[:len(s.batch)+1]
		r := &s.batch[len(s.batch)-1]
		updates := r.Updates[:0]
		*r = record{}
		for i, c := range scalars {
			v, err := c.next()
			if err != nil {
				return columnErr(plan.scalars[i].name, n, err)
			}
			plan.scalars[i].set(r, v, s.in)
		}
		for i, c := range leaves {
			k := 0
			for {
				v, err := c.next()
				if err != nil {
					return columnErr(plan.leaves[i].name, n, err)
				}
				if v.DefinitionLevel() == plan.leaves[i].maxDef {
					if k == len(updates) {
						updates = append(updates, update{})
					}
					updates[k].setLeaf(plan.leaves[i].leaf, s.in.str(v.ByteArray()))
					k++
				}
				more, err := c.continuesRow()
				if err != nil {
					return columnErr(plan.leaves[i].name, n, err)
				}
				if !more {
					break
				}
			}
			updates = updates[:max(k, len(updates))]
		}
		r.Updates = updates
		if len(s.batch) == cap(s.batch) {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func columnErr(name string, row int64, err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("column %s ends before row %d: the file is damaged", name, row)
	}
	return fmt.Errorf("column %s at row %d: %w", name, row, err)
}

// cursor walks the values of one column chunk, page by page.
type cursor struct {
	pages  parquet.Pages
	page   parquet.Page
	values parquet.ValueReader
	buf    []parquet.Value
	off, n int
}

// fill makes sure buf holds an unread value; io.EOF at the chunk's end. A
// page is released only once all of its values were consumed, so byte
// arrays handed out never outlive their page unread.
func (c *cursor) fill() error {
	for c.off >= c.n {
		if c.values != nil {
			n, err := c.values.ReadValues(c.buf)
			c.off, c.n = 0, n
			if n > 0 {
				return nil
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			parquet.Release(c.page)
			c.page, c.values = nil, nil
		}
		p, err := c.pages.ReadPage()
		if err != nil {
			return err
		}
		c.page, c.values = p, p.Values()
	}
	return nil
}

func (c *cursor) next() (parquet.Value, error) {
	if err := c.fill(); err != nil {
		return parquet.Value{}, err
	}
	v := c.buf[c.off]
	c.off++
	return v, nil
}

// continuesRow reports whether the next value belongs to the same row (a
// further element of a list).
func (c *cursor) continuesRow() (bool, error) {
	if err := c.fill(); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, err
	}
	return c.buf[c.off].RepetitionLevel() > 0, nil
}

func (c *cursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
	}
	c.pages.Close()
	c.pages, c.page, c.values = nil, nil, nil
}
