package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
)

// PreflightFunc checks once that the endpoint of model m answers and
// accepts its key.
type PreflightFunc func(ctx context.Context, m config.Model) error

// endpointCheck is one endpoint to check and the roles that use it.
type endpointCheck struct {
	model config.Model
	roles []string
}

// preflight checks every endpoint the plan's roles will call, once per
// endpoint, model and key, before anything is created: a run that cannot
// reach its models stops here (exit 2) rather than failing trial by trial
// after it has started spending. Offline plans, and plans that call no
// model (oracle and nop agents), have nothing to check.
func preflight(ctx context.Context, check PreflightFunc, getenv func(string) string, p *harness.Plan, cfg *config.Config) error {
	if check == nil || p.Offline || len(p.Models) == 0 {
		return nil
	}
	// Rows with their own models call those too.
	cfgs := []*config.Config{cfg}
	for _, r := range p.Rows {
		if len(r.ModelOverrides)+len(r.LabOverrides) == 0 {
			continue
		}
		rc, err := p.RowConfig(r)
		if err != nil {
			return UsageError(err)
		}
		cfgs = append(cfgs, rc)
	}
	if getenv != nil {
		// A missing key would only show as a refusal below: name it.
		for _, c := range cfgs {
			if err := c.CheckAPIKeys(getenv); err != nil {
				return UsageError(err)
			}
		}
	}
	var checks []*endpointCheck
	byKey := map[string]*endpointCheck{}
	for _, c := range cfgs {
		for _, role := range conditions.ModelRoles() {
			if _, used := p.Models[role]; !used {
				continue
			}
			m, err := c.Model(role)
			if err != nil || m.Provider == config.ProviderOffline {
				continue
			}
			key := strings.Join([]string{m.BaseURL, m.Model, m.APIKeyEnv}, "\x00")
			if ck := byKey[key]; ck != nil {
				if !slices.Contains(ck.roles, string(role)) {
					ck.roles = append(ck.roles, string(role))
				}
				continue
			}
			ck := &endpointCheck{model: m, roles: []string{string(role)}}
			byKey[key] = ck
			checks = append(checks, ck)
		}
	}
	var failed []string
	for _, c := range checks {
		if err := check(ctx, c.model); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failed = append(failed, fmt.Sprintf("%s %s (model %s at %s): %v",
				plural(len(c.roles), "role", "roles"), strings.Join(c.roles, ", "), c.model.Model, c.model.BaseURL, err))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return usagef("preflight: %d of %d model endpoint(s) cannot be used, so nothing was created:\n  %s\n"+
		"check base_url, model and api_key_env under [models.<role>] (and the network), or skip this check with --no-preflight",
		len(failed), len(checks), strings.Join(failed, "\n  "))
}
