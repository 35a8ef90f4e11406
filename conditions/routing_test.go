package conditions

import (
	"strings"
	"testing"
)

func TestParseRouting(t *testing.T) {
	tests := []struct {
		in      string
		want    Routing
		wantErr bool
	}{
		{"", RoutingIsolated, false},
		{"isolated", RoutingIsolated, false},
		{" pooled ", RoutingPooled, false},
		{"mediated", RoutingMediated, false},
		{"shared", "", true},
	}
	for _, tt := range tests {
		got, err := ParseRouting(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseRouting(%q) = %q, %v", tt.in, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "isolated, pooled or mediated") {
			t.Errorf("error %q does not list the choices", err)
		}
	}
}

func TestValidateRouting(t *testing.T) {
	tests := []struct {
		cond Condition
		pol  Policy
		r    Routing
		want string
	}{
		{LearnedMediator, PolicyAll, RoutingMediated, ""},
		{FullTraces, Policy{Executor: true}, RoutingPooled, ""},
		{NoFeedback, PolicyNone, RoutingIsolated, ""},
		{LearnedMediator, Policy{Planner: true}, RoutingPooled, "needs executor skill updates"},
		{SharedNotes, Policy{Planner: true}, RoutingMediated, "needs executor skill updates"},
		{NoFeedback, Policy{Executor: true}, RoutingMediated, "give proposals feedback"},
		{LearnedMediator, PolicyAll, "broadcast", "unknown routing"},
	}
	for _, tt := range tests {
		err := ValidateRouting(tt.cond, tt.pol, tt.r)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("ValidateRouting(%s, %s, %s) = %v, want %q", tt.cond, tt.pol, tt.r, err, tt.want)
		}
	}
}
