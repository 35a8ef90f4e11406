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

// Two variables shared by several roles: each is named once, with every
// role that needs it.
func TestCheckAPIKeysNamesEachVariableOnce(t *testing.T) {
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range conditions.ModelRoles() {
		m, err := cfg.Model(role)
		if err != nil {
			t.Fatal(err)
		}
		m.APIKeyEnv = "KEY_A"
		if role == conditions.RoleMediator || role == conditions.RoleAdvisor {
			m.APIKeyEnv = "KEY_B"
		}
		cfg.Models[role] = m
	}
	err = cfg.CheckAPIKeys(func(string) string { return "" })
	if err == nil {
		t.Fatal("no error with both variables empty")
	}
	msg := err.Error()
	if n := strings.Count(msg, "KEY_A"); n != 1 {
		t.Errorf("KEY_A named %d times in %q, want once", n, msg)
	}
	if !strings.Contains(msg, "KEY_B (for mediator, advisor)") {
		t.Errorf("%q does not name KEY_B once with its two roles", msg)
	}
	if !strings.Contains(msg, "KEY_A (for planner, executor, code, explore, plan, reflector, compactor, judge)") {
		t.Errorf("%q does not list every role needing KEY_A", msg)
	}
}
