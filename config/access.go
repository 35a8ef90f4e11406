package config

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/mediated-coevo/harness/conditions"
)

// DefaultLab is the lab used when none is named.
const DefaultLab = "default"

// Model returns the model configured for role (a copy; changing it does not
// change c).
func (c *Config) Model(role conditions.Role) (Model, error) {
	if _, err := conditions.ParseModelRole(string(role)); err != nil {
		return Model{}, &Error{Key: "models." + string(role), Msg: err.Error()}
	}
	m, ok := c.Models[role]
	if !ok {
		return Model{}, &Error{Key: "models." + string(role),
			Msg: fmt.Sprintf("no [models.%s] in the configuration", role)}
	}
	return m.clone(), nil
}

// ModelByKey returns the [models.<key>] entry of any key, a role's or one a
// student names (a copy).
func (c *Config) ModelByKey(key string) (Model, error) {
	m, ok := c.Models[conditions.Role(key)]
	if !ok {
		return Model{}, &Error{Key: "models." + key,
			Msg: fmt.Sprintf("no [models.%s] in the configuration (known: %s)", key, joinKeys(c.Models))}
	}
	return m.clone(), nil
}

// Lab returns the named lab (a copy); "" means DefaultLab.
func (c *Config) Lab(name string) (Lab, error) {
	if name == "" {
		name = DefaultLab
	}
	l, ok := c.Labs[name]
	if !ok {
		return Lab{}, &Error{Key: "labs." + name,
			Msg: fmt.Sprintf("unknown lab %q (known labs: %s; add one as [labs.%s] in --config-dir)",
				name, strings.Join(sortedKeys(c.Labs), ", "), name)}
	}
	return l.clone(), nil
}

// LabNames lists the configured labs, sorted.
func (c *Config) LabNames() []string { return sortedKeys(c.Labs) }

// APIKey reads the model's key from the environment variable it names. The
// key is never stored in a Config. Empty when no variable is named or it is
// unset.
func (m Model) APIKey() string {
	if m.APIKeyEnv == "" {
		return ""
	}
	return os.Getenv(m.APIKeyEnv)
}

// SetOffline switches every configured role to the offline provider, as
// --offline does. Other model settings are kept (and still recorded).
func (c *Config) SetOffline() {
	for role, m := range c.Models {
		m.Provider = ProviderOffline
		c.Models[role] = m
	}
}

// Clone returns a deep copy of c: nothing it holds is shared with c.
func (c *Config) Clone() *Config {
	if c == nil {
		return nil
	}
	out := *c
	out.Validation.Pool = slices.Clone(c.Validation.Pool)
	out.ExecutorRuntime.TaskDirs = slices.Clone(c.ExecutorRuntime.TaskDirs)
	out.ExecutorRuntime.DockerHosts = slices.Clone(c.ExecutorRuntime.DockerHosts)
	out.Launcher.Sbatch = slices.Clone(c.Launcher.Sbatch)
	if c.Network != nil {
		n := *c.Network
		n.Labs, n.Diffusion = slices.Clone(n.Labs), slices.Clone(n.Diffusion)
		out.Network = &n
	}
	if c.Models != nil {
		out.Models = make(map[conditions.Role]Model, len(c.Models))
		for k, m := range c.Models {
			out.Models[k] = m.clone()
		}
	}
	if c.Labs != nil {
		out.Labs = make(map[string]Lab, len(c.Labs))
		for k, l := range c.Labs {
			out.Labs[k] = l.clone()
		}
	}
	if c.Agents != nil {
		out.Agents = make(map[string]Agent, len(c.Agents))
		for k, a := range c.Agents {
			out.Agents[k] = a.clone()
		}
	}
	return &out
}

func (m Model) clone() Model {
	m.Temperature = clonePtr(m.Temperature)
	m.TopP = clonePtr(m.TopP)
	m.Seed = clonePtr(m.Seed)
	m.PriceInputPerMTok = clonePtr(m.PriceInputPerMTok)
	m.PriceOutputPerMTok = clonePtr(m.PriceOutputPerMTok)
	m.PriceCachedInputPerMTok = clonePtr(m.PriceCachedInputPerMTok)
	m.OfflineDiligence = clonePtr(m.OfflineDiligence)
	return m
}

func (l Lab) clone() Lab {
	l.TaskSkillDirs = slices.Clone(l.TaskSkillDirs)
	l.Students = l.Students.clone()
	return l
}

func (m RunMeta) clone() RunMeta {
	m.Args = slices.Clone(m.Args)
	m.Extra = maps.Clone(m.Extra)
	return m
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// OfflinePrefix starts the model name records give a role the offline
// provider plays.
const OfflinePrefix = "offline/"

// RecordedName is the model a role's records name (metric columns, the
// call log, trajectories): the configured model, or "offline/<role>" when
// the offline provider plays the role, whatever model is configured, so
// that filtering records by model never mixes stand-in answers with a real
// model's.
func (m Model) RecordedName(role conditions.Role) string {
	if m.Provider == ProviderOffline {
		return OfflinePrefix + string(role)
	}
	return m.Model
}
