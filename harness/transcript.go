package harness

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/executor/lab"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// condensedTranscript is the transcript the trial's agent wrote, condensed
// to the run's [mediator] transcript_chars for the Mediator; "" when the
// budget is 0 or the agent wrote none. A transcript that cannot be read is
// left out with a warning: the report goes on from the rest of the trace.
func (t *taskRun) condensedTranscript(trace *executor.Trace) string {
	budget := t.r.Config.Mediator.TranscriptChars
	if budget <= 0 || trace.TranscriptPath == "" {
		return ""
	}
	path := trace.TranscriptPath
	if !filepath.IsAbs(path) {
		path = filepath.Join(t.r.Dir.Join(rundir.JobDir(t.entryTask, t.it)), path)
	}
	recs, err := lab.ReadTranscript(path)
	if err != nil {
		// Counted by text in the manifest, so the text names no path.
		why := "it cannot be read"
		if errors.Is(err, fs.ErrNotExist) {
			why = "it is missing"
		}
		t.out.warnings = append(t.out.warnings, t.task.ID+": the Mediator was not shown the transcript: "+why)
		return ""
	}
	// Only the last run of the agent is the trial the verifier scored.
	return lab.CondenseTranscript(lab.LastAttempt(recs), budget)
}
