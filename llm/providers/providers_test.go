package providers

import (
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/llm"
	"github.com/mediated-coevo/harness/llm/openaiapi"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name     string
		m        config.Model
		wantType string
		wantErr  string
	}{
		{"offline", config.Model{Provider: "offline"}, "offline", ""},
		{"openai", config.Model{Provider: "openai", BaseURL: "http://127.0.0.1:1/v1", Model: "m"}, "openai", ""},
		{"openai without base_url", config.Model{Provider: "openai", Model: "m"}, "", "base_url"},
		{"empty", config.Model{Model: "m"}, "", "has no provider"},
		{"unknown", config.Model{Provider: "anthropic", Model: "m"}, "", `unknown provider "anthropic"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.m, 1)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch p.(type) {
			case *llm.Offline:
				if tt.wantType != "offline" || !p.Offline() {
					t.Errorf("got the offline provider for %+v", tt.m)
				}
			case *openaiapi.Provider:
				if tt.wantType != "openai" || p.Offline() {
					t.Errorf("got the endpoint provider for %+v", tt.m)
				}
			default:
				t.Errorf("provider %T, want %s", p, tt.wantType)
			}
		})
	}
}
