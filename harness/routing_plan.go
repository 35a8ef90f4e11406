package harness

import (
	"fmt"
	"slices"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
)

// planRouting is the routing values a plan uses: those given (--routing),
// else [experiment] routing.
func planRouting(cfg *config.Config, given []conditions.Routing) ([]conditions.Routing, error) {
	if len(given) == 0 {
		r, err := conditions.ParseRouting(cfg.Experiment.Routing)
		if err != nil {
			return nil, fmt.Errorf("[experiment] routing: %w", err)
		}
		return []conditions.Routing{r}, nil
	}
	var out []conditions.Routing
	for _, r := range given {
		r, err := conditions.ParseRouting(string(r))
		if err != nil {
			return nil, fmt.Errorf("--routing: %w", err)
		}
		if slices.Contains(out, r) {
			return nil, fmt.Errorf("--routing lists %s twice", r)
		}
		out = append(out, r)
	}
	return out, nil
}

// routedRows expands a matrix's rows, each crossed with the routing
// values given (or [experiment] routing) unless it names its own.
func routedRows(cfg *config.Config, rows []MatrixRow, given []conditions.Routing, seeds []int64) ([]RowSpec, error) {
	routing, err := planRouting(cfg, given)
	if err != nil {
		return nil, err
	}
	return expandRows(cfg, crossRouting(rows, routing), seeds)
}

// crossRouting gives each row without a routing of its own every routing
// value: a row crossed with several becomes one row per value, named
// <name>-<routing>, so the values compare paired on the same tasks and
// seeds.
func crossRouting(rows []MatrixRow, values []conditions.Routing) []MatrixRow {
	var out []MatrixRow
	for _, r := range rows {
		if r.Routing != "" {
			out = append(out, r)
			continue
		}
		for _, v := range values {
			c := r
			c.Routing = v
			if len(values) > 1 {
				c.Name = r.Name + "-" + string(v)
			}
			out = append(out, c)
		}
	}
	return out
}

// routeCalls is how many routing calls a row's iterations make: one per
// student with its own skill and iteration under mediated routing.
func routeCalls(lab config.Lab, r RowSpec, iterations int) float64 {
	if r.Routing.Or() != conditions.RoutingMediated {
		return 0
	}
	own := 0
	for _, st := range lab.Roster() {
		if st.OwnSkill {
			own++
		}
	}
	return float64(own * iterations)
}

// checkRouting refuses a routing that could change nothing: routing moves
// evidence between students' own executor skills, so a lab without a
// student that holds one (own_skill = true) has nothing to route.
func checkRouting(cfg *config.Config, lab string, c conditions.Condition, p conditions.Policy, r conditions.Routing) error {
	if err := conditions.ValidateRouting(c, p, r); err != nil {
		return err
	}
	if !r.Shares() {
		return nil
	}
	l, err := cfg.Lab(lab)
	if err != nil {
		return err
	}
	for _, st := range l.Roster() {
		if st.OwnSkill {
			return nil
		}
	}
	return fmt.Errorf("routing %s needs students with their own executor skill, and lab %s has none: give some of its students own_skill = true in [labs.%s.students.<id>], or use routing isolated (with the lab's shared skill there is nothing to route)", r, lab, lab)
}
