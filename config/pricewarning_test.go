package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Switching a role to another endpoint or model without pricing it drops
// the inherited prices, and the configuration says so; a switch that gives
// its prices, or a change that keeps the model and endpoint, says nothing.
func TestLoadWarnsWhenASwitchDropsPrices(t *testing.T) {
	tests := []struct {
		name  string
		layer string
		warn  bool
	}{
		{"new endpoint, no price", "[models.planner]\nbase_url = \"http://localhost:8000/v1\"\n", true},
		{"new model, no price", "[models.executor]\nmodel = \"other/model\"\ncontext_tokens = 32768\n", true},
		{"new endpoint, priced", "[models.planner]\nbase_url = \"http://localhost:8000/v1\"\nprice_input_per_mtok = 1.0\nprice_output_per_mtok = 2.0\nprice_cached_input_per_mtok = 0.1\n", false},
		{"same model", "[models.planner]\nmax_retries = 1\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, LayerFile), []byte(tt.layer), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(c.Warnings(), "\n")
			if tt.warn != (got != "") {
				t.Fatalf("warnings %q, want a warning: %v", got, tt.warn)
			}
			if tt.warn && (!strings.Contains(got, "price_input_per_mtok") || !strings.Contains(got, "set price_input_per_mtok and price_output_per_mtok")) {
				t.Errorf("warning does not name the dropped prices and the fix: %q", got)
			}
		})
	}
}
