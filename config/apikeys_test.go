package config

import (
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
)

func TestCheckAPIKeys(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, role := range conditions.ModelRoles() {
		if m, err := cfg.Model(role); err == nil && m.APIKeyEnv != "" {
			vars[m.APIKeyEnv] = ""
		}
	}
	if len(vars) == 0 {
		t.Skip("the default configuration names no key variable")
	}
	getenv := func(k string) string { return vars[k] }
	err = cfg.CheckAPIKeys(getenv)
	if err == nil {
		t.Fatal("no error with every key variable empty")
	}
	for k := range vars {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("%q does not name %s", err, k)
		}
		vars[k] = "set"
	}
	if err := cfg.CheckAPIKeys(getenv); err != nil {
		t.Errorf("with every key set: %v", err)
	}
	for k := range vars {
		vars[k] = ""
	}
	cfg.SetOffline()
	if err := cfg.CheckAPIKeys(getenv); err != nil {
		t.Errorf("offline models need no key: %v", err)
	}
}
