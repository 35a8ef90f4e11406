package network

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// Each topology gives the neighbours its name says, and a bad edge list
// names what is wrong.
func TestNeighbours(t *testing.T) {
	labs := []string{"a", "b", "c", "d"}
	tests := []struct {
		topology string
		want     map[string][]string
		err      string
	}{
		{Isolated, map[string][]string{"a": nil, "b": nil, "c": nil, "d": nil}, ""},
		{Ring, map[string][]string{"a": {"b", "d"}, "b": {"a", "c"}, "c": {"b", "d"}, "d": {"a", "c"}}, ""},
		{Star, map[string][]string{"a": {"b", "c", "d"}, "b": {"a"}, "c": {"a"}, "d": {"a"}}, ""},
		{Full, map[string][]string{"a": {"b", "c", "d"}, "b": {"a", "c", "d"}, "c": {"a", "b", "d"}, "d": {"a", "b", "c"}}, ""},
		{"a->b, c->a,a->b", map[string][]string{"a": {"b"}, "b": nil, "c": {"a"}, "d": nil}, ""},
		{"mesh", nil, `unknown topology "mesh"`},
		{"a->x", nil, `lab "x" is not in the network's labs`},
		{"a->a", nil, "cannot send to itself"},
		{"a->", nil, "write an edge as from->to"},
	}
	for _, tt := range tests {
		t.Run(tt.topology, func(t *testing.T) {
			got, err := Neighbours(labs, tt.topology)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.EqualFunc(got, tt.want, slices.Equal[[]string]) {
				t.Errorf("Neighbours = %v, want %v", got, tt.want)
			}
		})
	}
}

// A ring of two labs links them once each way, not twice.
func TestRingOfTwo(t *testing.T) {
	got, err := Neighbours([]string{"a", "b"}, Ring)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got["a"], []string{"b"}) || !slices.Equal(got["b"], []string{"a"}) {
		t.Errorf("ring of two = %v", got)
	}
	if in := Senders(got, []string{"a", "b"}); !slices.Equal(in["a"], []string{"b"}) {
		t.Errorf("senders = %v", in)
	}
}
