package network

import (
	"fmt"
	"slices"
	"strings"
)

// The named topologies; anything else is read as an edge list.
const (
	Isolated = "isolated" // no lab sends to another
	Ring     = "ring"     // each lab sends to the labs before and after it, the last wrapping to the first
	Star     = "star"     // the first lab sends to every other and each of them to it
	Full     = "full"     // every lab sends to every other
)

// Neighbours maps each lab to the labs it may send to, in the order of
// labs. topology is a named topology or an edge list "a->b,b->c" (directed:
// a sends to b).
func Neighbours(labs []string, topology string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, l := range labs {
		out[l] = nil
	}
	add := func(from, to string) {
		if from != to && !slices.Contains(out[from], to) {
			out[from] = append(out[from], to)
		}
	}
	n := len(labs)
	switch topology {
	case Isolated:
	case Ring:
		for i, l := range labs {
			add(l, labs[(i+1)%n])
			add(l, labs[(i+n-1)%n])
		}
	case Star:
		for _, l := range labs[1:] {
			add(labs[0], l)
			add(l, labs[0])
		}
	case Full:
		for _, a := range labs {
			for _, b := range labs {
				add(a, b)
			}
		}
	default:
		if !strings.Contains(topology, "->") {
			return nil, fmt.Errorf("unknown topology %q: choose isolated, ring, star or full, or give edges such as \"a->b,b->c\"", topology)
		}
		for _, e := range strings.Split(topology, ",") {
			from, to, ok := strings.Cut(strings.TrimSpace(e), "->")
			from, to = strings.TrimSpace(from), strings.TrimSpace(to)
			switch {
			case !ok || from == "" || to == "":
				return nil, fmt.Errorf("topology edge %q: write an edge as from->to, e.g. a->b", e)
			case !slices.Contains(labs, from):
				return nil, fmt.Errorf("topology edge %q: lab %q is not in the network's labs (%s): add it to --labs or fix the edge", e, from, strings.Join(labs, ", "))
			case !slices.Contains(labs, to):
				return nil, fmt.Errorf("topology edge %q: lab %q is not in the network's labs (%s): add it to --labs or fix the edge", e, to, strings.Join(labs, ", "))
			case from == to:
				return nil, fmt.Errorf("topology edge %q: a lab cannot send to itself", e)
			}
			add(from, to)
		}
	}
	for _, l := range labs {
		slices.SortStableFunc(out[l], func(a, b string) int { return slices.Index(labs, a) - slices.Index(labs, b) })
	}
	return out, nil
}

// Senders inverts neighbours: for each lab, the labs that may send to it.
func Senders(neighbours map[string][]string, labs []string) map[string][]string {
	in := map[string][]string{}
	for _, from := range labs {
		for _, to := range neighbours[from] {
			in[to] = append(in[to], from)
		}
	}
	return in
}
