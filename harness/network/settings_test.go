package network

import (
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
)

// Every bad setting is refused with a message naming it and the fix.
func TestSettingsValidate(t *testing.T) {
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"a", "b", "c", "x-y"} {
		cfg.Labs[l] = cfg.Labs[config.DefaultLab]
	}
	good := FromConfig(&config.Network{Labs: []string{"a", "b", "c"}})
	tests := []struct {
		name   string
		change func(*Settings)
		want   string
	}{
		{"the defaults", func(*Settings) {}, ""},
		{"one lab", func(s *Settings) { s.Labs = []string{"a"} }, "at least two labs"},
		{"an unknown lab", func(s *Settings) { s.Labs = []string{"a", "zz"} }, "zz"},
		{"a lab twice", func(s *Settings) { s.Labs = []string{"a", "b", "a"} }, `lab "a" is listed twice`},
		{"a lab with a dash", func(s *Settings) { s.Labs = []string{"a", "x-y"} }, "may not hold '-'"},
		{"an unknown topology", func(s *Settings) { s.Topology = "mesh" }, `unknown topology "mesh"`},
		{"an unknown treatment", func(s *Settings) { s.Diffusion = []string{"gossip"} }, `unknown diffusion "gossip": choose from none, broadcast, mediated`},
		{"a treatment twice", func(s *Settings) { s.Diffusion = []string{"none", "none"} }, "listed twice"},
		{"interval zero", func(s *Settings) { s.Interval = 0 }, "diffusion_interval must be at least 1"},
		{"no token budget", func(s *Settings) { s.TokenBudget = -1 }, "token_budget must be at least 1"},
		{"a bound above one", func(s *Settings) { s.StabilityBound = 2 }, "stability_bound must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good
			s.Labs = append([]string(nil), good.Labs...)
			tt.change(&s)
			err := s.Validate(cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate = %v, want one saying %q", err, tt.want)
			}
		})
	}
}

// The rows are one per treatment and lab, named so that Treatment reads
// the treatment back.
func TestRows(t *testing.T) {
	s := FromConfig(&config.Network{Labs: []string{"a", "b"}, Diffusion: []string{None, Mediated}})
	var names []string
	for _, r := range s.Rows() {
		names = append(names, r.Name)
		if r.Condition != RowCondition || !r.Policy.Executor || Treatment(r.Name) != strings.Split(r.Name, "-")[0] {
			t.Errorf("row %+v", r)
		}
	}
	if got := strings.Join(names, ","); got != "none-a,none-b,mediated-a,mediated-b" {
		t.Errorf("rows = %s", got)
	}
}

// A mediated row's barrier calls follow the topology: a share decision per
// lab it sends to, an intake decision per lab sending to it; other
// treatments make none.
func TestDiffusionCallsFollowTheTopology(t *testing.T) {
	tests := []struct {
		topology, row, lab string
		want               harness.DiffusionCalls
	}{
		{"ring", "mediated-a-seed1", "a", harness.DiffusionCalls{Interval: 2, Share: 2, Intake: 2}},
		{"star", "mediated-a", "a", harness.DiffusionCalls{Interval: 2, Share: 2, Intake: 2}},
		{"star", "mediated-b", "b", harness.DiffusionCalls{Interval: 2, Share: 1, Intake: 1}},
		{"a->b,a->c", "mediated-b", "b", harness.DiffusionCalls{Interval: 2, Share: 0, Intake: 1}},
		{"a->b,a->c", "mediated-a", "a", harness.DiffusionCalls{Interval: 2, Share: 2, Intake: 0}},
		{"ring", "broadcast-a", "a", harness.DiffusionCalls{}},
		{"ring", "none-a", "a", harness.DiffusionCalls{}},
	}
	for _, tt := range tests {
		s := Settings{Labs: []string{"a", "b", "c"}, Topology: tt.topology, Interval: 2}
		if got := s.DiffusionCalls(harness.RowSpec{Name: tt.row, Lab: tt.lab}); got != tt.want {
			t.Errorf("%s, row %s: %+v, want %+v", tt.topology, tt.row, got, tt.want)
		}
	}
}
