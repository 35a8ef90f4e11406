package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mediated-coevo/harness/harness/rundir"
	"github.com/mediated-coevo/harness/internal/durable"
)

// RoutedItem is one item of a student's evidence that reached another
// student's own executor skill, as the history recorded it.
type RoutedItem struct {
	// Row is the matrix row the item belongs to; empty for a run.
	Row       string `json:"row,omitempty"`
	ID        string `json:"id"`
	From      string `json:"from"`
	To        string `json:"to"`
	Iteration int    `json:"iteration"`
	Task      string `json:"task"`
	// Trial is the trial of From's the item came from.
	Trial string `json:"trial"`
	// Form is note, proposal (forwarded by the Mediator) or pooled.
	Form   string `json:"form"`
	Reason string `json:"reason,omitempty"`
	// Content is the note, or the edit the proposal makes.
	Content string `json:"content,omitempty"`
	// Adopted is true once a batch holding the item changed To's skill,
	// false once such a batch was rejected, null while it waits.
	Adopted *bool `json:"adopted"`
}

// Routing lists the routed items of a run, or of every row of a matrix,
// in the order they were recorded. A run under isolated routing has none:
// the list is empty, never null.
func Routing(dir string) ([]RoutedItem, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	out := []RoutedItem{}
	if m.Kind != rundir.KindMatrix {
		return routedItems(dir, "", out)
	}
	for _, row := range m.Rows {
		if out, err = routedItems(filepath.Join(dir, row), row, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// routedItems appends the routed items of one run directory to out.
func routedItems(dir, row string, out []RoutedItem) ([]RoutedItem, error) {
	start := len(out)
	// An iteration redone after a crash records its items again: the last
	// record of an id stands.
	at := map[string]int{}
	err := durable.ReadLog(filepath.Join(dir, rundir.HistoryFile), func(line []byte) error {
		var rec rundir.HistoryRecord
		if err := json.Unmarshal(line, &rec); err != nil || rec.Type != "entry" || rec.Entry == nil || rec.Entry.Kind != rundir.EntryRoute {
			return nil // a damaged line is the run view's to report
		}
		e := rec.Entry
		it := RoutedItem{Row: row, ID: e.ID, From: e.From, To: e.To, Iteration: e.Iteration, Task: e.TaskID,
			Trial: e.TrialID, Form: e.Form, Reason: e.Reason, Content: e.Content}
		if i, ok := at[e.ID]; ok {
			out[i] = it
			return nil
		}
		at[e.ID] = len(out)
		out = append(out, it)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the routed items of %s: %w", dir, err)
	}
	decided, err := batchVerdicts(dir)
	if err != nil {
		return nil, err
	}
	for i := range out[start:] {
		it := &out[start+i]
		if v, ok := decided[it.To+"\x00"+it.ID]; ok {
			it.Adopted = &v
		}
	}
	return out, nil
}

// batchVerdicts reads, per (student, proposal id), whether a batch of
// that student's own skill holding the proposal was adopted (true) or
// rejected (false).
func batchVerdicts(dir string) (map[string]bool, error) {
	out := map[string]bool{}
	var rejected struct {
		Student   string `json:"student"`
		Proposals []struct {
			ID string `json:"id"`
		} `json:"proposals"`
	}
	err := durable.ReadLog(filepath.Join(dir, rundir.RejectedFile), func(line []byte) error {
		rejected.Student, rejected.Proposals = "", nil
		if json.Unmarshal(line, &rejected) == nil {
			for _, p := range rejected.Proposals {
				out[rejected.Student+"\x00"+p.ID] = false
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the rejected batches of %s: %w", dir, err)
	}
	var adopted struct {
		Student     string   `json:"student"`
		ProposalIDs []string `json:"proposal_ids"`
	}
	err = durable.ReadLog(filepath.Join(dir, rundir.SkillUpdatesFile), func(line []byte) error {
		adopted.Student, adopted.ProposalIDs = "", nil
		if json.Unmarshal(line, &adopted) == nil {
			for _, id := range adopted.ProposalIDs {
				out[adopted.Student+"\x00"+id] = true
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the skill updates of %s: %w", dir, err)
	}
	return out, nil
}

// WriteRoutingText writes routed items as a table, one line each.
func WriteRoutingText(w io.Writer, items []RoutedItem) error {
	if len(items) == 0 {
		_, err := io.WriteString(w, "No routed items: nothing of one student's evidence reached another's skill (routing isolated, or nothing was routed yet).\n")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	withRow := slices.ContainsFunc(items, func(it RoutedItem) bool { return it.Row != "" })
	head := "ITERATION\tFROM\tTO\tTASK\tTRIAL\tFORM\tADOPTED\tREASON"
	if withRow {
		head = "ROW\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, it := range items {
		adopted := "pending"
		if it.Adopted != nil {
			adopted = map[bool]string{true: "yes", false: "no"}[*it.Adopted]
		}
		line := strings.Join([]string{strconv.Itoa(it.Iteration), it.From, it.To, it.Task, it.Trial, it.Form, adopted, oneLine(it.Reason, 80)}, "\t")
		if withRow {
			line = it.Row + "\t" + line
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// oneLine is s on one line, cut to n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
