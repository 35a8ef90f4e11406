package rundir

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/mediated-coevo/harness/internal/durable"
)

// WriteMetricsPart writes one iteration's rows into dir (a run's metrics
// folder) as a zstd-compressed Parquet file, atomically (temporary name,
// fsync, rename).
func WriteMetricsPart(dir string, iteration int, rows []MetricRow) error {
	return writeParquet(filepath.Join(dir, MetricsPartName(iteration)), rows)
}

// WriteEvalPart writes one checkpoint's held-out evaluation rows into dir
// (a run's metrics folder), atomically, as WriteMetricsPart does.
func WriteEvalPart(dir string, checkpoint int, rows []MetricRow) error {
	return writeParquet(filepath.Join(dir, EvalPartName(checkpoint)), rows)
}

// writeParquet writes rows (metric or update rows) as one compressed
// Parquet file at path, atomically.
func writeParquet[T any](path string, rows []T) error {
	return durable.WriteFileFunc(path, 0o644, func(w io.Writer) error {
		pw := parquet.NewGenericWriter[T](w,
			parquet.Compression(&parquet.Zstd),
			parquet.CreatedBy("harness", Version, GitCommit()),
		)
		if _, err := pw.Write(rows); err != nil {
			return fmt.Errorf("write rows of %s: %w", filepath.Base(path), err)
		}
		return pw.Close()
	})
}

// ReadMetrics reads every metrics part under dir (recursively, so a matrix
// directory yields all of its rows), in file-name order. The updates table
// (MetricsDir/UpdatesDir) is not read: see ReadSkillUpdates.
func ReadMetrics(dir string) ([]MetricRow, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, MetricsPartExt) && filepath.Base(filepath.Dir(path)) == MetricsDir {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list metrics under %s: %w", dir, err)
	}
	sort.Strings(files)
	var out []MetricRow
	for _, f := range files {
		rows, err := ReadMetricsFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

// ReadMetricsFile reads one Parquet part; a damaged file is an error, not a
// panic. Rows of parts written by older harnesses are brought to the
// current form (see upgradeRow).
func ReadMetricsFile(path string) ([]MetricRow, error) {
	rows, err := readParquetFile[MetricRow](path, "metrics")
	for i := range rows {
		upgradeRow(&rows[i])
	}
	return rows, err
}

func readParquetFile[T any](path, what string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("open %s file %s: %w", what, path, err)
	}
	r := parquet.NewGenericReader[T](pf)
	defer r.Close()
	rows := make([]T, pf.NumRows())
	n, err := r.Read(rows)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("read %s file %s: %w", what, path, err)
	}
	return rows[:n], nil
}

// upgradeRow gives a row read from an older part the current form: columns
// that were required then hold "" or 0 for "not applicable", which is NULL
// now, and a matrix row's run id was its row directory alone.
func upgradeRow(r *MetricRow) {
	for _, p := range []**string{&r.MatrixID, &r.BaselinePreset, &r.Cause, &r.PlannerModel,
		&r.ExecutorModel, &r.MediatorModel, &r.CompactorModel, &r.AdvisorModel, &r.ReflectorModel} {
		if *p != nil && **p == "" {
			*p = nil
		}
	}
	if r.MatrixID != nil && !strings.HasPrefix(r.RunID, *r.MatrixID+"/") {
		r.RunID = RunID(*r.MatrixID, r.RunID)
	}
	if r.RowPhase() == PhaseTrain {
		r.CheckpointIteration = nil
	}
	// Parts from before tests_reported existed may hold real counts.
	if !r.TestsReported && zeroOrNil(r.TestsPassed) && zeroOrNil(r.TestsFailed) && zeroOrNil(r.TestsTotal) {
		r.TestsPassed, r.TestsFailed, r.TestsTotal = nil, nil, nil
	}
}

// Nullable is v, or nil (NULL in a Parquet column) when v is the zero value.
func Nullable[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func zeroOrNil(p *int32) bool { return p == nil || *p == 0 }
