package view

import (
	"net/url"
	"strconv"

	"github.com/mediated-coevo/harness/harness/inspect"
)

// maxRoutedShown is how many routed items a page lists; the counts cover
// them all, and `harness inspect --routing` lists every one.
const maxRoutedShown = 500

// routingView is what the run and matrix pages show of the items routed
// between students: the counts by sender and receiver, then the items.
type routingView struct {
	Counts []inspect.RouteCount
	Items  []routedRow
	// More is how many items are left out of Items.
	More int
	// Rows is true when the items come from a matrix's rows.
	Rows bool
}

// routedRow is one routed item with what the page shows of it.
type routedRow struct {
	inspect.RoutedItem
	// IterationURL is the page of the iteration the item came from.
	IterationURL string
	// Adoption is yes, no or pending.
	Adoption string
}

// routing reads the routed items of the run or matrix at t; nil when none
// was routed, so the pages leave the section out.
func (s *Server) routing(t target) (*routingView, error) {
	v, err := s.cache.get("routing", t.Path, func() (any, error) {
		items, err := inspect.Routing(t.Path)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return (*routingView)(nil), nil
		}
		rv := &routingView{Counts: inspect.CountRoutes(items)}
		shown := items[:min(len(items), maxRoutedShown)]
		rv.More = len(items) - len(shown)
		for _, it := range shown {
			rel := t.Rel
			if it.Row != "" {
				rv.Rows = true
				rel = t.child(it.Row).Rel
			}
			adoption := "pending"
			if it.Adopted != nil {
				adoption = map[bool]string{true: "yes", false: "no"}[*it.Adopted]
			}
			rv.Items = append(rv.Items, routedRow{RoutedItem: it, IterationURL: pageURL("iteration", rel, url.Values{"i": {strconv.Itoa(it.Iteration)}}), Adoption: adoption})
		}
		return rv, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*routingView), nil
}
