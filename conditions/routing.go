package conditions

import (
	"fmt"
	"slices"
	"strings"
)

// Routing is how the evidence of a lab's students reaches the evolution of
// each student's own executor skill: the treatment axis of heterogeneous
// labs, set by --routing or [experiment] routing.
type Routing string

// The routing values.
const (
	// RoutingIsolated evolves each student's own skill only from its own
	// trials' proposals and the feedback they came from.
	RoutingIsolated Routing = "isolated"
	// RoutingPooled hands every skill's batch every student's proposals,
	// each with the feedback it came from: passive sharing.
	RoutingPooled Routing = "pooled"
	// RoutingMediated has the Mediator read every student's evidence and
	// decide, per student, which items reach it, in what form and why.
	RoutingMediated Routing = "mediated"
)

// DefaultRouting is the routing of a run that names none: today's
// behaviour, each student learning alone.
const DefaultRouting = RoutingIsolated

// Routings lists the routing values in documentation order.
func Routings() []Routing { return []Routing{RoutingIsolated, RoutingPooled, RoutingMediated} }

// ParseRouting reads a routing value; empty is the default.
func ParseRouting(s string) (Routing, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultRouting, nil
	}
	r := Routing(s)
	if slices.Contains(Routings(), r) {
		return r, nil
	}
	return "", fmt.Errorf("unknown routing %q: choose isolated, pooled or mediated", s)
}

// Or is r, or the default when r is unset (a run recorded before routing
// existed).
func (r Routing) Or() Routing {
	if r == "" {
		return DefaultRouting
	}
	return r
}

// Shares reports whether r lets evidence cross from one student to another.
func (r Routing) Shares() bool { return r.Or() != RoutingIsolated }

// ValidateRouting checks routing against a row's design: sharing between
// students changes only how executor skills evolve, so a routing other
// than isolated needs executor skill updates and a condition that gives
// proposals feedback to be written from.
func ValidateRouting(c Condition, p Policy, r Routing) error {
	if _, err := ParseRouting(string(r)); err != nil {
		return err
	}
	if !r.Shares() {
		return nil
	}
	if !p.Executor {
		return fmt.Errorf("routing %s needs executor skill updates (skill_updates with executor), since routing only changes what each student's executor skill evolves from; use routing isolated for a row with skill updates %s", r, p)
	}
	if c.ProposalFeedback() == FeedbackNone {
		return fmt.Errorf("routing %s needs a condition whose trials give proposals feedback (full_traces, static_mediator or learned_mediator), not %s; use routing isolated", r, c)
	}
	return nil
}
