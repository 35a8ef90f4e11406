// Package layout states which of the module's packages may import
// which, and checks an import graph against that statement. The layout is a
// design decision (docs/architecture.md explains it); writing it down as data
// lets a test fail the moment an import crosses a line, instead of a reviewer
// noticing months later.
package layout

import (
	"fmt"
	"slices"
	"strings"
)

// Module is the module path every rule is relative to.
const Module = "github.com/mediated-coevo/harness"

// Allowed maps each package of the module (relative to Module) to the
// module packages it may import directly ("*": any). A package missing from
// the map may not exist: adding a package means deciding where it sits.
func Allowed() map[string][]string {
	return map[string][]string{
		"conditions":            {},
		"config":                {"conditions"},
		"internal/durable":      {},
		"internal/dirlock":      {},
		"internal/dockertest":   {},
		"internal/tartree":      {},
		"internal/layout":       {},
		"skills":                {"conditions", "internal/durable"},
		"benchmarks":            {"config", "benchmarks/compose", "skills"},
		"benchmarks/compose":    {},
		"llm/prompt":            {},
		"llm":                   {"config"},
		"llm/openaiapi":         {"config", "llm"},
		"llm/providers":         {"config", "llm", "llm/openaiapi"},
		"llm/llmtest":           {"llm"},
		"llm/gateway":           {"config", "llm"},
		"executor":              {"internal/tartree", "benchmarks", "config", "harness/rundir", "internal/durable"},
		"executor/docker":       {"executor", "benchmarks/compose", "internal/tartree", "benchmarks", "config"},
		"executor/atif":         {"internal/durable", "llm"},
		"executor/lab":          {"executor", "executor/atif", "conditions", "config", "harness/rundir", "internal/durable", "llm", "llm/prompt", "skills"},
		"executor/installed":    {"config", "executor", "executor/atif", "executor/lab", "llm", "llm/gateway"},
		"mediator":              {"executor", "conditions", "llm", "llm/prompt", "skills"},
		"harness/gate":          {},
		"harness/gate/simtable": {"harness/gate"},
		"harness/stats":         {},
		"harness/rundir":        {"conditions", "config", "internal/dirlock", "internal/durable"},
		"harness/inspect":       {"harness/rundir", "harness/stats", "internal/durable"},
		"harness/report":        {"harness/inspect", "harness/rundir", "harness/stats", "internal/durable"},
		"harness/view":          {"conditions", "harness/inspect", "harness/rundir"},
		"harness/launch":        {"config", "harness/rundir", "internal/durable"},
		"internal/slurmtest":    {},
		"harness": {"benchmarks", "conditions", "config", "executor", "executor/installed", "executor/lab", "harness/gate", "harness/rundir",
			"harness/stats", "internal/durable", "llm", "llm/prompt", "mediator", "skills"},
		"harness/network": {"config", "conditions", "harness", "harness/rundir", "harness/stats", "internal/durable", "mediator"},
		"cmd/harness/cli": {"benchmarks", "conditions", "config", "harness", "harness/inspect", "harness/launch", "harness/network", "harness/report",
			"harness/rundir", "harness/view", "skills"},
		"cmd/harness":         {"*"},
		"cmd/harness/factory": {"*"},
	}
}

// Isolated lists packages whose whole dependency tree must stay free of
// some packages: outside modules by their full path, the module's own
// relative to Module. The readers and the on-disk format build without a
// container engine or a model client; only the composition root (and
// llm/openaiapi, the provider it chooses) carries the model SDK; and the
// trial contract knows neither an engine nor the model transport.
func Isolated() map[string][]string {
	const engine, modelSDK = "github.com/docker/docker", "github.com/openai/openai-go"
	neither := []string{engine, modelSDK}
	return map[string][]string{
		"harness/rundir":     neither,
		"harness/inspect":    neither,
		"harness/report":     neither,
		"harness/view":       neither,
		"harness/launch":     {modelSDK},
		"harness":            {modelSDK},
		"harness/network":    {modelSDK},
		"cmd/harness/cli":    {modelSDK},
		"executor":           {engine, modelSDK, "llm"},
		"benchmarks/compose": neither,
		"executor/docker":    {modelSDK},
		"executor/lab":       {modelSDK},
		"executor/atif":      {modelSDK},
		"executor/installed": {modelSDK},
		"mediator":           neither,
		"llm":                neither,
		"llm/llmtest":        {modelSDK},
		"llm/gateway":        neither,
		"benchmarks":         {modelSDK},
		"skills":             neither,
		"conditions":         neither,
		"config":             neither,
	}
}

// Package is one node of an import graph, with paths relative to Module
// for the module's own packages and full paths for everything else.
type Package struct {
	Path    string
	Imports []string // direct imports
	Deps    []string // every package in the dependency tree
}

// Check returns one line per broken rule, sorted; none means the graph
// keeps the layout.
func Check(pkgs []Package, allowed map[string][]string, isolated map[string][]string) []string {
	var out []string
	for _, p := range pkgs {
		may, known := allowed[p.Path]
		if !known {
			out = append(out, fmt.Sprintf("%s is not in the import rules: decide which packages it may import and add it", p.Path))
			continue
		}
		for _, imp := range p.Imports {
			if !own(imp) || slices.Contains(may, "*") || slices.Contains(may, imp) {
				continue
			}
			out = append(out, fmt.Sprintf("%s imports %s, which it may not", p.Path, imp))
		}
		for _, banned := range isolated[p.Path] {
			for _, dep := range p.Deps {
				if dep == banned || strings.HasPrefix(dep, banned+"/") {
					out = append(out, fmt.Sprintf("%s depends on %s (through its imports), which it must not", p.Path, banned))
					break
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// own reports whether a path names one of the module's packages: rules use
// paths relative to Module, and every such path starts with one of the
// module's top-level folders.
func own(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	switch first {
	case "cmd", "harness", "conditions", "mediator", "executor", "benchmarks", "skills", "config", "llm", "internal":
		return true
	}
	return false
}
