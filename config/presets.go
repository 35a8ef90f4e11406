package config

import (
	"embed"
	"fmt"
	"path"
	"strings"

	"github.com/BurntSushi/toml"
)

// presetFiles are the installed-agent presets, one [agents.<name>] table
// per file, each citing the documentation its flags come from.
//
//go:embed agents/*.toml
var presetFiles embed.FS

// AgentPresets returns the preset installed agents by name: an [agents]
// table of the same name in the configuration replaces a preset whole.
func AgentPresets() (map[string]Agent, error) {
	entries, err := presetFiles.ReadDir("agents")
	if err != nil {
		return nil, fmt.Errorf("read the agent presets: %w", err)
	}
	out := map[string]Agent{}
	for _, e := range entries {
		data, err := presetFiles.ReadFile(path.Join("agents", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read agent preset %s: %w", e.Name(), err)
		}
		var f struct {
			Agents map[string]Agent `toml:"agents"`
		}
		md, err := toml.Decode(string(data), &f)
		if err != nil {
			return nil, fmt.Errorf("agent preset %s: %w", e.Name(), err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			return nil, fmt.Errorf("agent preset %s: unknown key %s", e.Name(), und[0])
		}
		name := strings.TrimSuffix(e.Name(), ".toml")
		a, ok := f.Agents[name]
		if !ok || len(f.Agents) != 1 {
			return nil, fmt.Errorf("agent preset %s must hold exactly the table [agents.%s]", e.Name(), name)
		}
		out[name] = a
	}
	return out, nil
}

// AgentPresetFile is the text of one preset's file, for docs and tests.
func AgentPresetFile(name string) ([]byte, error) {
	return presetFiles.ReadFile(path.Join("agents", name+".toml"))
}
