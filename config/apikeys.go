package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
)

// CheckAPIKeys refuses a configuration whose models name an API-key
// variable that getenv finds empty: every call would fail, and a run would
// only find out trial by trial. A model that needs no key leaves
// api_key_env empty; offline models need none.
func (c *Config) CheckAPIKeys(getenv func(string) string) error {
	var missing []string
	for _, role := range conditions.ModelRoles() {
		m, err := c.Model(role)
		if err != nil || m.Provider == ProviderOffline || m.APIKeyEnv == "" || getenv(m.APIKeyEnv) != "" {
			continue
		}
		missing = append(missing, fmt.Sprintf("%s (for %s)", m.APIKeyEnv, role))
	}
	if len(missing) > 0 {
		return fmt.Errorf("API key variables not set: %s; export them, leave api_key_env empty for endpoints that need no key, or run with --offline", strings.Join(slices.Compact(missing), ", "))
	}
	return nil
}
