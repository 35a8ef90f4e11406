package compose

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// prepass reads the compose file at path before the compose library does,
// for what the library would report badly or not at all:
//
//   - a host mount whose source names a variable env does not set (or a
//     required one, ${VAR:?...}) is removed with a warning: the harness
//     copies only files of the environment folder into a trial, and a
//     mount it cannot place would otherwise fail the whole file;
//   - the obsolete top-level version attribute is named, since the
//     library only logs it.
//
// model is the file with those mounts removed, nil when nothing was
// removed (the library then reads the file itself). A file that is not
// YAML is left to the library to report.
func prepass(path string, env types.Mapping) (model map[string]any, warnings []string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	var doc map[string]any
	if yaml.Unmarshal(data, &doc) != nil || doc == nil {
		return nil, nil
	}
	if _, ok := doc["version"]; ok {
		warnings = append(warnings, fmt.Sprintf("%s: the top-level version attribute is obsolete and ignored; remove it", path))
	}
	services, _ := doc["services"].(map[string]any)
	removed := false
	for _, name := range slices.Sorted(maps.Keys(services)) {
		svc, _ := services[name].(map[string]any)
		vols, _ := svc["volumes"].([]any)
		if len(vols) == 0 {
			continue
		}
		kept := vols[:0:0]
		for _, v := range vols {
			source, ok := mountSource(v)
			unset := unsetVars(source, env)
			if !ok || len(unset) == 0 {
				kept = append(kept, v)
				continue
			}
			removed = true
			warnings = append(warnings, fmt.Sprintf("%s: service %s: the mount of %s is ignored: %s not set on this host",
				path, name, source, naming(unset)))
		}
		svc["volumes"] = kept
	}
	if !removed {
		return nil, warnings
	}
	return doc, warnings
}

// mountSource is the source of a volume entry (short or long syntax); false
// when the entry has none (an anonymous volume).
func mountSource(v any) (string, bool) {
	switch e := v.(type) {
	case string:
		return shortSource(e)
	case map[string]any:
		s, ok := e["source"].(string)
		return s, ok && s != ""
	}
	return "", false
}

// shortSource is what precedes the first colon of a short volume entry
// that is not inside ${...}.
func shortSource(entry string) (string, bool) {
	depth := 0
	for i := 0; i < len(entry); i++ {
		switch {
		case strings.HasPrefix(entry[i:], "${"):
			depth++
			i++
		case entry[i] == '}' && depth > 0:
			depth--
		case entry[i] == ':' && depth == 0:
			return entry[:i], i > 0
		}
	}
	return "", false
}

// unsetVars lists the variables s names that env leaves unset and that no
// default fills, required ones included.
func unsetVars(s string, env types.Mapping) []string {
	if !strings.Contains(s, "$") {
		return nil
	}
	var unset []string
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	replace := func(sub string, m template.Mapping, cfg *template.Config) (string, error) {
		v, applied, err := template.DefaultReplacementAppliedFunc(sub, m, cfg)
		var req *template.MissingRequiredError
		switch {
		case errors.As(err, &req):
			unset = append(unset, req.Variable)
			return "", nil
		case err == nil && !applied:
			unset = append(unset, varName(sub))
		}
		return v, err
	}
	if _, err := template.SubstituteWithOptions(s, lookup, template.WithoutLogging, template.WithReplacementFunction(replace)); err != nil {
		return nil // a malformed template: the library reports it
	}
	return unset
}

// varName is the variable of a substitution such as $VAR or ${VAR:-x}.
func varName(sub string) string {
	name := strings.TrimPrefix(strings.TrimPrefix(sub, "$"), "{")
	if i := strings.IndexAny(name, ":-?+}"); i >= 0 {
		name = name[:i]
	}
	return name
}

func naming(vars []string) string {
	if len(vars) == 1 {
		return "variable " + vars[0] + " is"
	}
	return "variables " + strings.Join(vars, ", ") + " are"
}
