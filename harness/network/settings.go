package network

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// The diffusion treatments.
const (
	// None: labs evolve in isolation; nothing is sent (the control).
	None = "none"
	// Broadcast: every adopted skill change and Mediator report reaches
	// every neighbour unfiltered.
	Broadcast = "broadcast"
	// Mediated: the sending lab's Mediator decides per neighbour what to
	// send, within a token budget.
	Mediated = "mediated"
)

// Treatments lists the diffusion treatments in their canonical order.
func Treatments() []string { return []string{None, Broadcast, Mediated} }

// Defaults of the [network] keys left unset.
const (
	DefaultInterval       = 1
	DefaultTokenBudget    = 400
	DefaultStabilityBound = 0.05
)

// Settings are a network experiment's design: [network] with the
// command line's flags over it.
type Settings struct {
	Labs           []string `json:"labs"`
	Topology       string   `json:"topology"`
	Diffusion      []string `json:"diffusion"`
	Interval       int      `json:"diffusion_interval"`
	TokenBudget    int      `json:"token_budget"`
	StabilityBound float64  `json:"stability_bound"`
}

// FromConfig is the settings [network] gives, defaults filled in; n may
// be nil (no [network] table).
func FromConfig(n *config.Network) Settings {
	if n == nil {
		n = &config.Network{}
	}
	s := Settings{Labs: slices.Clone(n.Labs), Topology: n.Topology, Diffusion: slices.Clone(n.Diffusion),
		Interval: n.DiffusionInterval, TokenBudget: n.TokenBudget, StabilityBound: n.StabilityBound}
	if s.Topology == "" {
		s.Topology = Ring
	}
	if len(s.Diffusion) == 0 {
		s.Diffusion = Treatments()
	}
	if s.Interval == 0 {
		s.Interval = DefaultInterval
	}
	if s.TokenBudget == 0 {
		s.TokenBudget = DefaultTokenBudget
	}
	if s.StabilityBound == 0 {
		s.StabilityBound = DefaultStabilityBound
	}
	return s
}

// Validate checks the settings against the configuration's labs; every
// problem is named with its fix.
func (s Settings) Validate(cfg *config.Config) error {
	var errs []error
	if len(s.Labs) < 2 {
		errs = append(errs, fmt.Errorf("a network needs at least two labs (got %d): pass --labs a,b,c or set [network] labs, each naming a [labs.<name>] table", len(s.Labs)))
	}
	for i, l := range s.Labs {
		if slices.Contains(s.Labs[:i], l) {
			errs = append(errs, fmt.Errorf("lab %q is listed twice in --labs: list each lab once", l))
			continue
		}
		if _, err := cfg.Lab(l); err != nil {
			errs = append(errs, fmt.Errorf("--labs: %w", err))
		}
		if strings.Contains(l, "-") {
			errs = append(errs, fmt.Errorf("lab %q: a network lab's name may not hold '-' (it separates the parts of a row name and of an edge): rename the [labs.%s] table", l, l))
		} else if err := rundir.CheckLabel(l); err != nil {
			errs = append(errs, fmt.Errorf("lab name: %w", err))
		}
	}
	if _, err := Neighbours(s.Labs, s.Topology); err != nil && len(s.Labs) >= 2 {
		errs = append(errs, err)
	}
	if len(s.Diffusion) == 0 {
		errs = append(errs, errors.New("no diffusion treatment given: pass --diffusion none,broadcast,mediated (one or more)"))
	}
	for i, d := range s.Diffusion {
		if !slices.Contains(Treatments(), d) {
			errs = append(errs, fmt.Errorf("unknown diffusion %q: choose from %s", d, strings.Join(Treatments(), ", ")))
		} else if slices.Contains(s.Diffusion[:i], d) {
			errs = append(errs, fmt.Errorf("diffusion %q is listed twice: list each treatment once", d))
		}
	}
	if s.Interval < 1 {
		errs = append(errs, fmt.Errorf("diffusion_interval must be at least 1 iteration (got %d)", s.Interval))
	}
	if s.TokenBudget < 1 {
		errs = append(errs, fmt.Errorf("token_budget must be at least 1 token (got %d)", s.TokenBudget))
	}
	if s.StabilityBound <= 0 || s.StabilityBound > 1 {
		errs = append(errs, fmt.Errorf("stability_bound must be a spread of mean reward in (0, 1] (got %v)", s.StabilityBound))
	}
	return errors.Join(errs...)
}

// The condition and skill-update policy every lab of a network runs: the
// Mediator reports (so there is something to share) and the executor skill
// evolves through the Advisor and the gate (so there is something to adopt).
const (
	RowCondition = conditions.StaticMediator
)

// RowPolicy is the policy of every lab of a network.
func RowPolicy() conditions.Policy { return conditions.Policy{Executor: true} }

// Rows are the matrix rows of a network: one per treatment and lab, named
// <diffusion>-<lab>, each expanded over the seeds.
func (s Settings) Rows() []harness.MatrixRow {
	var rows []harness.MatrixRow
	for _, d := range s.Diffusion {
		for _, l := range s.Labs {
			rows = append(rows, harness.MatrixRow{Name: d + "-" + l, Condition: RowCondition, Policy: RowPolicy(), Lab: l})
		}
	}
	return rows
}

// Treatment is the diffusion treatment of a network row, read from its name.
func Treatment(row string) string {
	d, _, _ := strings.Cut(row, "-")
	return d
}

// DiffusionCalls are the Mediator calls a row of the network makes at each
// barrier, for the plan's estimate: under mediated, a share decision per
// lab it may send to and at most an intake decision per lab that may send
// to it; under the other treatments none.
func (s Settings) DiffusionCalls(r harness.RowSpec) harness.DiffusionCalls {
	if Treatment(r.Name) != Mediated {
		return harness.DiffusionCalls{}
	}
	nb, err := Neighbours(s.Labs, s.Topology)
	if err != nil {
		return harness.DiffusionCalls{} // Validate refuses the topology first
	}
	c := harness.DiffusionCalls{Interval: s.Interval, Share: len(nb[r.Lab])}
	for _, to := range nb {
		if slices.Contains(to, r.Lab) {
			c.Intake++
		}
	}
	return c
}
