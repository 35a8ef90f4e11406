package view

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/mediated-coevo/harness/harness/inspect"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// maxCallsShown caps the calls listed on one page; the per-role totals
// still count them all.
const maxCallsShown = 300

// roleCalls sums up one role's model calls.
type roleCalls struct {
	Role                  string
	Calls, Errors         int
	Fallbacks, Retries    int
	InputTokens, Output   int64
	CostUSD               float64
	LatencyMS, MaxLatency int64
}

// callsView is a run's model calls as the calls page shows them: totals
// per role and the first calls of each role.
type callsView struct {
	Summary []roleCalls
	ByRole  map[string][]rundir.CallRecord
}

// readCalls reads the run's call log once through inspect's reader and keeps
// only what the page can show, so a long log is not held in memory.
func readCalls(dir string) (*callsView, error) {
	all, err := inspect.Calls(dir, inspect.CallFilter{})
	if err != nil {
		return nil, err
	}
	v := &callsView{ByRole: map[string][]rundir.CallRecord{}}
	byRole := map[string]*roleCalls{}
	var roles []string
	for _, c := range all {
		rc := byRole[c.Role]
		if rc == nil {
			rc = &roleCalls{Role: c.Role}
			byRole[c.Role] = rc
			roles = append(roles, c.Role)
		}
		rc.add(c)
		if len(v.ByRole[c.Role]) < maxCallsShown {
			v.ByRole[c.Role] = append(v.ByRole[c.Role], c)
		}
	}
	slices.Sort(roles)
	for _, name := range roles {
		rc := *byRole[name]
		rc.LatencyMS /= int64(rc.Calls)
		v.Summary = append(v.Summary, rc)
	}
	return v, nil
}

func (rc *roleCalls) add(c rundir.CallRecord) {
	rc.Calls++
	rc.Retries += c.Retries
	rc.InputTokens += c.Usage.InputTokens
	rc.Output += c.Usage.OutputTokens
	rc.CostUSD += c.Usage.CostUSD
	rc.LatencyMS += c.LatencyMS
	rc.MaxLatency = max(rc.MaxLatency, c.LatencyMS)
	if c.Error != "" {
		rc.Errors++
	}
	if c.Fallback {
		rc.Fallbacks++
	}
}

func (s *Server) calls(w http.ResponseWriter, r *http.Request) error {
	t, m, err := s.open(r)
	if err != nil {
		return err
	}
	if m.Kind == rundir.KindMatrix {
		return fmt.Errorf("%w: %s is a matrix; each row keeps its own calls, open a row", errNotFound, t.Name())
	}
	v, err := s.cache.get("calls", t.Path, func() (any, error) { return readCalls(t.Path) })
	if err != nil {
		return err
	}
	cv := v.(*callsView)
	role := r.URL.Query().Get("role")
	total := 0
	for _, rc := range cv.Summary {
		if rc.Role == role {
			total = rc.Calls
		}
	}
	s.render(w, "calls", page{Title: "model calls of " + t.Name(), Crumbs: crumbs(t), Refresh: m.Status == rundir.StatusRunning,
		Data: struct {
			T       target
			Role    string
			Summary []roleCalls
			Calls   []rundir.CallRecord
			Total   int
		}{t, role, cv.Summary, cv.ByRole[role], total}})
	return nil
}
