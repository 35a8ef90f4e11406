package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// reportFile is a Mediator report (artifacts/reports/<task>/<NNNN>.json).
type reportFile struct {
	Withheld         bool   `json:"withheld"`
	Reason           string `json:"reason"`
	AbstractionLevel string `json:"abstraction_level"`
	Content          string `json:"content"`
	ProtocolHash     string `json:"protocol_hash"`
}

// trialData is everything the trial page shows.
type trialData struct {
	T    target
	Task string
	// Student is set when several students attempted the task in the
	// iteration: the trial is this student's.
	Student     string
	Iteration   int
	TrialID     string
	Row         *rundir.MetricRow
	Tokens      int64
	Cost        float64
	Trace       *rundir.Trace
	Report      *reportFile
	Plan        *rundir.Entry
	Instruction string
	Transcript  []step
	Stats       json.RawMessage
	Warnings    []string
}

func (s *Server) trial(w http.ResponseWriter, r *http.Request) error {
	t, _, err := s.open(r)
	if err != nil {
		return err
	}
	task, err := taskParam(r)
	if err != nil {
		return err
	}
	student, err := studentParam(r)
	if err != nil {
		return err
	}
	it, err := iterationParam(r)
	if err != nil {
		return err
	}
	d, err := readTrial(t, task, student, it)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("%s, iteration %d", task, it)
	if student != "" {
		title = fmt.Sprintf("%s by %s, iteration %d", task, student, it)
	}
	// A trial's files are complete once its trace is written: no refresh.
	s.render(w, "trial", page{Title: title, Crumbs: crumbs(t), Data: d})
	return nil
}

// readTrial reads one trial's files; only the trace is required, the rest
// is shown when the run kept it. student is "" for a task one student
// attempted in the iteration; else the trial is that student's, kept
// under its own key.
func readTrial(t target, task, student string, it int) (*trialData, error) {
	d := &trialData{T: t, Task: task, Student: student, Iteration: it, TrialID: rundir.TrialID(it, task)}
	key, whose := task, ""
	if student != "" {
		key, whose = rundir.StudentTrialKey(task, student), " by student "+student
		d.TrialID = rundir.StudentTrialID(it, task, student)
	}
	var tr rundir.Trace
	found, err := readJSON(filepath.Join(t.Path, rundir.TracePath(key, it)), &tr)
	if err == nil && !found {
		found, err = readJSON(filepath.Join(t.Path, rundir.JobDir(key, it), rundir.TraceFile), &tr)
	}
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: no trace of task %s%s in iteration %d", errNotFound, task, whose, it)
	}
	d.Trace = &tr
	var rep reportFile
	if ok, err := readJSON(filepath.Join(t.Path, rundir.ReportPath(key, it)), &rep); err != nil {
		d.Warnings = append(d.Warnings, err.Error())
	} else if ok {
		d.Report = &rep
	}
	if rows, err := readPart(t.Path, it); err == nil {
		for i := range rows {
			if rows[i].TrialID == d.TrialID {
				d.Row = &rows[i]
				d.Tokens, d.Cost = rowTokens(rows[i]), rowCost(rows[i])
			}
		}
	}
	d.Plan, err = findPlan(filepath.Join(t.Path, rundir.HistoryFile), d.TrialID)
	if err != nil {
		d.Warnings = append(d.Warnings, err.Error())
	}
	if err := d.readTranscript(filepath.Join(t.Path, rundir.JobDir(key, it), rundir.TranscriptFile)); err != nil {
		d.Warnings = append(d.Warnings, err.Error())
	}
	return d, nil
}

// readJSON decodes path into v; a missing file is (false, nil).
func readJSON(path string, v any) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s is not valid JSON: %w", path, err)
	}
	return true, nil
}

// findPlan returns the Planner's plan for a trial from the history. Lines
// that cannot be about the trial are skipped before decoding, so a long
// history costs a read, not a decode per line.
func findPlan(path, trialID string) (*rundir.Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the history: %w", err)
	}
	defer f.Close()
	needle := []byte(`"trial_id":"` + trialID + `"`)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, needle) {
			continue
		}
		var rec rundir.HistoryRecord
		if json.Unmarshal(line, &rec) != nil || rec.Entry == nil {
			continue
		}
		if rec.Entry.Kind == rundir.EntryPlan && rec.Entry.TrialID == trialID {
			return rec.Entry, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the history: %w", err)
	}
	return nil, nil
}
