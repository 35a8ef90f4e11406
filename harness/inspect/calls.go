package inspect

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// CallFilter picks call records; a zero field matches every record.
type CallFilter struct {
	Role      string
	Task      string
	Iteration int
}

func (f CallFilter) match(c rundir.CallRecord) bool {
	return (f.Role == "" || c.Role == f.Role) && (f.Task == "" || c.Task == f.Task) &&
		(f.Iteration == 0 || c.Iteration == f.Iteration)
}

// Calls returns the model calls a run recorded that f picks, in the order
// they were made. A run written before calls were recorded has none.
func Calls(dir string, f CallFilter) ([]rundir.CallRecord, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	if m.Kind == rundir.KindMatrix {
		return nil, fmt.Errorf("%s is a matrix: each row keeps its own calls, pass a row directory", dir)
	}
	out := []rundir.CallRecord{}
	err = rundir.ReadCalls(filepath.Join(dir, rundir.CallsFile), func(c rundir.CallRecord) error {
		if f.match(c) {
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

// WriteCallsText prints one line per call: when, who, for what, which
// model, tokens, latency, retries, and a fallback or error.
func WriteCallsText(w io.Writer, calls []rundir.CallRecord, tty bool) error {
	if len(calls) == 0 {
		_, err := fmt.Fprintln(w, "no model calls recorded")
		return err
	}
	t := newTable(tty, "time", "caller", "role", "task", "iteration", "model", "tokens", "latency", "retries", "outcome")
	for _, c := range calls {
		it := "-"
		if c.Iteration > 0 {
			it = strconv.Itoa(c.Iteration)
		}
		outcome := "ok"
		switch {
		case c.Error != "":
			outcome = "error: " + c.Error
			if tty {
				outcome = truncate(outcome, 80)
			}
		case c.Fallback:
			outcome = "fallback"
		case c.Unusable != "":
			outcome = "unusable, asked again"
		}
		t.add(c.Time.UTC().Format(time.RFC3339), c.Caller, c.Role, dash(c.Task), it, dash(c.Model),
			tokens(c.Usage.Tokens(), tty), (time.Duration(c.LatencyMS) * time.Millisecond).String(),
			strconv.Itoa(c.Retries), outcome)
	}
	return t.write(w)
}
