package view

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/mediated-coevo/harness/harness/rundir"
)

// listed is one run or matrix of the index. It is read from the
// manifests (status, plan, trial counts) and the checkpoints (spend), never
// from the metrics, so the index stays quick however large the runs are.
type listed struct {
	ID, Rel, Name, Error string
	Kind                 rundir.Kind
	Status               rundir.Status
	StartedAt            time.Time
	Rows, Tasks          int
	IterationsDone       int
	IterationsPlanned    int
	Trials, EnvFailures  int
	Tokens               int64
	CostUSD              float64
	Offline              bool
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) error {
	dirs, err := s.dirs()
	if err != nil {
		return err
	}
	out := make([]listed, 0, len(dirs))
	refresh := false
	for _, d := range dirs {
		v, err := s.cache.get("listed", d.Path, func() (any, error) { return summarize(d) })
		l := listed{ID: d.Name(), Rel: d.Rel, Status: "unreadable"}
		if err != nil {
			l.Error = err.Error()
		} else {
			l = v.(listed)
		}
		refresh = refresh || l.Status == rundir.StatusRunning
		out = append(out, l)
	}
	s.render(w, "index", page{Title: "runs under " + s.root, Crumbs: []crumb{{"runs", "/"}}, Refresh: refresh,
		Data: struct {
			Root string
			Dirs []listed
		}{s.root, out}})
	return nil
}

// dirs lists the run and matrix directories the index shows, newest first
// (names start with their UTC start time): the root itself when it is
// one, else those directly under it.
func (s *Server) dirs() ([]target, error) {
	if fileExists(filepath.Join(s.root, rundir.ManifestFile)) {
		return []target{{Path: s.root}}, nil
	}
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return nil, err
	}
	var out []target
	for _, e := range entries {
		if e.IsDir() && fileExists(filepath.Join(s.root, e.Name(), rundir.ManifestFile)) {
			out = append(out, target{Rel: e.Name(), Path: filepath.Join(s.root, e.Name())})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rel > out[j].Rel })
	return out, nil
}

func summarize(t target) (listed, error) {
	d, err := rundir.Open(t.Path)
	if err != nil {
		return listed{}, err
	}
	m := d.Manifest()
	l := listed{ID: m.ID, Rel: t.Rel, Name: m.Name, Kind: m.Kind, Status: m.Status, StartedAt: m.StartedAt,
		Rows: 1, Tasks: len(m.Tasks), Offline: m.Offline}
	runs := []string{t.Path}
	if m.Kind == rundir.KindMatrix {
		runs = runs[:0]
		for _, row := range m.Rows {
			runs = append(runs, filepath.Join(t.Path, row))
		}
		l.Rows = len(m.Rows)
	}
	for _, dir := range runs {
		rd, err := rundir.Open(dir)
		if err != nil {
			l.IterationsPlanned += m.Iterations // a row not started yet still has its plan
			continue
		}
		rm := rd.Manifest()
		l.IterationsDone += rm.CompletedIterations
		l.IterationsPlanned += rm.Iterations
		l.Offline = l.Offline || rm.Offline
		for status, n := range rm.Counts {
			l.Trials += n
			if status == rundir.TrialEnvFailure {
				l.EnvFailures += n
			}
		}
		l.Tokens, l.CostUSD = addSpend(dir, l.Tokens, l.CostUSD)
	}
	return l, nil
}

// spendUsage is what the index reads of one caller's usage.
type spendUsage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// ledgerTotal is what the index needs of a run's checkpoint: the ledger's
// total (unfinished iterations included), less what the spend journal holds
// since (records of epoch SpendEpoch). Leaving the per-caller map out of
// the type lets the decoder skip it instead of building it: on a long run
// it holds several callers per trial.
type ledgerTotal struct {
	Ledger struct {
		Total spendUsage `json:"total"`
	} `json:"ledger"`
	SpendEpoch int `json:"spend_epoch"`
}

// ledgerByCaller is the per-caller map, read only for a checkpoint whose
// total is empty although it may hold spend.
type ledgerByCaller struct {
	Ledger struct {
		ByCaller map[string]spendUsage `json:"by_caller"`
	} `json:"ledger"`
}

func addSpend(dir string, tokens int64, cost float64) (int64, float64) {
	data, err := os.ReadFile(filepath.Join(dir, rundir.StateFile))
	if err != nil {
		return tokens, cost
	}
	var st ledgerTotal
	if json.Unmarshal(data, &st) != nil {
		return tokens, cost
	}
	if t := st.Ledger.Total; t != (spendUsage{}) {
		tokens += t.InputTokens + t.OutputTokens
		cost += t.CostUSD
	} else {
		var bc ledgerByCaller
		if json.Unmarshal(data, &bc) != nil {
			return tokens, cost
		}
		for _, u := range bc.Ledger.ByCaller {
			tokens += u.InputTokens + u.OutputTokens
			cost += u.CostUSD
		}
	}
	recs, _ := rundir.ReadSpendJournal[spendUsage](dir, st.SpendEpoch)
	for _, rec := range recs {
		for _, u := range rec.Charges {
			tokens += u.InputTokens + u.OutputTokens
			cost += u.CostUSD
		}
	}
	return tokens, cost
}
