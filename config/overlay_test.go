package config

import (
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
)

// Overlay lays tables over a copy as a layer file is laid, leaves the
// original alone, and refuses what a layer file would, without pointing
// at lines of text the caller never wrote.
func TestOverlay(t *testing.T) {
	base, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		tables  map[string]any
		wantErr string
		check   func(t *testing.T, c *Config)
	}{
		{"a model key", map[string]any{"models": map[string]any{"executor": map[string]any{"model": "x/y", "context_tokens": int64(100000)}}}, "",
			func(t *testing.T, c *Config) {
				m, _ := c.Model(conditions.RoleExecutor)
				old, _ := base.Model(conditions.RoleExecutor)
				if m.Model != "x/y" || m.ContextTokens != 100000 || m.BaseURL != old.BaseURL || m.PriceInputPerMTok != nil {
					t.Errorf("executor %+v: want the new model over the old endpoint, its price dropped", m)
				}
			}},
		{"a new lab starts from the default", map[string]any{"labs": map[string]any{"mine": map[string]any{"students": int64(3)}}}, "",
			func(t *testing.T, c *Config) {
				l, err := c.Lab("mine")
				if err != nil || len(l.Roster()) != 3 || l.MaxModelCalls != base.Labs[DefaultLab].MaxModelCalls {
					t.Errorf("lab mine %+v, %v", l, err)
				}
			}},
		{"unknown role", map[string]any{"models": map[string]any{"exeuctor": map[string]any{"model": "x"}}}, `did you mean "executor"`, nil},
		{"unknown key", map[string]any{"labs": map[string]any{"default": map[string]any{"studnets": int64(2)}}}, "studnets", nil},
		{"bad value", map[string]any{"labs": map[string]any{"default": map[string]any{"assignment": "random"}}}, "assignment", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := base.Overlay(tc.tables, "row r")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "row r: ") {
					t.Fatalf("error %v, want one from row r naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
	if m, _ := base.Model(conditions.RoleExecutor); m.Model == "x/y" {
		t.Error("Overlay changed the configuration it was given")
	}
}
