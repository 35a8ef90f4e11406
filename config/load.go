package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mediated-coevo/harness/conditions"
)

//go:embed default.toml
var defaultTOML []byte

// DefaultName is how errors and listings name the embedded defaults.
const DefaultName = "built-in config/default.toml"

// LayerFile is the file read from a --config-dir directory.
const LayerFile = "default.toml"

// DefaultFile returns the text of the embedded defaults, the commented
// reference of every key (for example to seed a --config-dir file).
func DefaultFile() []byte { return bytes.Clone(defaultTOML) }

// Default returns the built-in configuration.
func Default() (*Config, error) {
	return Parse(defaultTOML, DefaultName)
}

// Load returns the built-in defaults with configDir/default.toml layered
// over them when configDir is not empty, validated. Layering is per key: a
// key the file leaves out keeps its default, also inside [models.<role>] and
// [labs.<name>]; a lab the defaults do not have starts from the values of
// the `default` lab (after the file's own changes to it). Problems are
// reported as *Error.
func Load(configDir string) (*Config, error) {
	c := &Config{}
	meta, err := decodeLayer(c, defaultTOML, DefaultName, false)
	if err != nil {
		return nil, err
	}
	if configDir == "" {
		if err := validateFile(c, DefaultName, meta); err != nil {
			return nil, err
		}
		return c, nil
	}
	if st, err := os.Stat(configDir); err != nil || !st.IsDir() {
		msg := fmt.Sprintf("config directory %s does not exist: pass a directory holding %s to --config-dir, or drop it to use the defaults", configDir, LayerFile)
		switch {
		case err == nil:
			msg = fmt.Sprintf("config directory %s is a file, not a directory: pass the directory holding %s to --config-dir", configDir, LayerFile)
		case !errors.Is(err, fs.ErrNotExist):
			msg = fmt.Sprintf("cannot read config directory %s: %v", configDir, err)
		}
		return nil, &Error{Msg: msg}
	}
	path := filepath.Join(configDir, LayerFile)
	data, err := os.ReadFile(path)
	if err != nil {
		msg := fmt.Sprintf("cannot read the config file: %v", err)
		if errors.Is(err, fs.ErrNotExist) {
			msg = fmt.Sprintf("no %s in config directory %s (create it with only the keys to change, or drop --config-dir)", LayerFile, configDir)
		}
		return nil, &Error{File: path, Msg: msg}
	}
	if meta, err = decodeLayer(c, data, path, true); err != nil {
		return nil, err
	}
	if err := validateFile(c, path, meta); err != nil {
		return nil, err
	}
	if c.Experiment.VerifierFeedback == "" {
		k := key("experiment", "verifier_feedback")
		return nil, &Error{File: path, Line: lineOf(meta.lines, k), Key: k.String(),
			Msg: `experiment.verifier_feedback is empty: set it to "outcome", "tests" (the default) or "diagnostics", or leave it out`}
	}
	return c, nil
}

// Parse reads one complete configuration, such as the config.toml a run
// wrote, on its own: it is not layered over the defaults, so a key it leaves
// out is zero (an optional one stays unset) and a lab is not filled from the
// default lab. The [run] table is ignored (see ParseResolved). The result is
// validated; name is used in errors.
func Parse(data []byte, name string) (*Config, error) {
	c, _, err := ParseResolved(data, name)
	return c, err
}

// ParseResolved is Parse that also returns the [run] table of a file
// written by WriteResolved (zero when the file has none).
func ParseResolved(data []byte, name string) (*Config, RunMeta, error) {
	c := &Config{}
	md, err := decodeLayer(c, data, name, false)
	if err != nil {
		return nil, RunMeta{}, err
	}
	if err := validateFile(c, name, md); err != nil {
		return nil, RunMeta{}, err
	}
	return c, md.run, nil
}

// layerMeta is what decoding one file learned, for attributing later errors.
type layerMeta struct {
	lines map[string]int // key -> line
	run   RunMeta
}

// fileLayer receives one file. The fixed sections point at the sections of
// the Config being layered, so keys the file leaves out keep their values.
// Map entries are held back as primitives: decoding into a map would replace
// a whole entry, so each is decoded over a copy of its base instead.
type fileLayer struct {
	Run             *RunMeta                  `toml:"run"`
	Experiment      *Experiment               `toml:"experiment"`
	Validation      *Validation               `toml:"validation"`
	Reflection      *Reflection               `toml:"reflection"`
	Tournament      *Tournament               `toml:"tournament"`
	Models          map[string]toml.Primitive `toml:"models"`
	Labs            map[string]toml.Primitive `toml:"labs"`
	Budget          *Budget                   `toml:"budget"`
	ExecutorRuntime *ExecutorRuntime          `toml:"executor_runtime"`
	Mediator        *Mediator                 `toml:"mediator"`
	Evaluation      *Evaluation               `toml:"evaluation"`
	Stats           *Stats                    `toml:"stats"`
	Network         *Network                  `toml:"network"`
	Launcher        *Launcher                 `toml:"launcher"`
	Agents          map[string]Agent          `toml:"agents"`
}

// decodeLayer reads data (named file in errors) over c. c must own all its
// memory (no sharing with another Config), since values are decoded in place.
// With inherit, a lab c does not have yet starts from c's default lab (as
// changed by this file); without, from zero, as a standalone file is whole.
func decodeLayer(c *Config, data []byte, file string, inherit bool) (*layerMeta, error) {
	var raw map[string]any
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&raw)
	if err != nil {
		return nil, syntaxError(file, data, err)
	}
	meta := &layerMeta{lines: keyLines(data)}
	if e := checkKeys(md, raw, file, meta.lines); e != nil {
		return nil, e
	}

	// [network] is decoded over a copy and kept only when the file has it.
	var network Network
	if c.Network != nil {
		network = *c.Network
	}
	layer := fileLayer{
		Run:             &meta.run,
		Experiment:      &c.Experiment,
		Validation:      &c.Validation,
		Reflection:      &c.Reflection,
		Tournament:      &c.Tournament,
		Budget:          &c.Budget,
		ExecutorRuntime: &c.ExecutorRuntime,
		Mediator:        &c.Mediator,
		Evaluation:      &c.Evaluation,
		Stats:           &c.Stats,
		Network:         &network,
		Launcher:        &c.Launcher,
	}
	lmd, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&layer)
	if err != nil {
		return nil, decodeError(file, err)
	}

	if lmd.IsDefined("network") {
		c.Network = &network
	}
	if err := decodeModels(c, &layer, lmd, file, meta.lines, inherit); err != nil {
		return nil, err
	}
	if err := decodeLabs(c, &layer, lmd, file, inherit); err != nil {
		return nil, err
	}
	mergeAgents(c, layer.Agents)

	// Belt and braces: checkKeys should have caught every key the decoder
	// could not place.
	if und := lmd.Undecoded(); len(und) > 0 {
		return nil, &Error{File: file, Line: lineOf(meta.lines, und[0]), Key: und[0].String(),
			Msg: fmt.Sprintf("unknown key %q", und[0].String())}
	}
	return meta, nil
}

// decodeModels decodes each [models.ROLE] table of the layer over a copy
// of the role's model so far.
func decodeModels(c *Config, layer *fileLayer, lmd toml.MetaData, file string, lines map[string]int, inherit bool) error {
	if len(layer.Models) > 0 && c.Models == nil {
		c.Models = map[conditions.Role]Model{}
	}
	for _, role := range modelKeyOrder(layer.Models) {
		old, ok := c.Models[conditions.Role(role)]
		if !ok && inherit && !conditions.Role(role).IsModel() {
			// A model only students name starts from the executor's, so
			// it needs only the keys that differ.
			old = c.Models[conditions.RoleExecutor]
		}
		m := old.clone()
		if err := lmd.PrimitiveDecode(layer.Models[role], &m); err != nil {
			return decodeError(file, err)
		}
		if m.Model != old.Model || m.Provider != old.Provider || m.BaseURL != old.BaseURL {
			dropped, err := forgetOldModel(&m, old, role, lmd, file, lines, inherit)
			if err != nil {
				return err
			}
			if len(dropped) > 0 && m.Provider != ProviderOffline {
				c.warnings = append(c.warnings, fmt.Sprintf("%s: [models.%s] switches from %s to %s without a price, so the inherited %s no longer apply: "+
					"its cost is what the endpoint reports (nothing when it reports none), and a dollar budget refuses to run it; "+
					"set price_input_per_mtok and price_output_per_mtok in the same table to price it",
					file, role, modelName(old), modelName(m), strings.Join(dropped, ", ")))
			}
		}
		c.Models[conditions.Role(role)] = m
	}
	return nil
}

// forgetOldModel drops what m inherited from old that belongs to old's
// model, now that the layer switched to another model or endpoint.
// It returns the price keys it dropped that had a value.
func forgetOldModel(m *Model, old Model, role string, lmd toml.MetaData, file string, lines map[string]int, inherit bool) ([]string, error) {
	// Prices belong to a model: a layer that switches to another
	// model (or endpoint) without pricing it must not charge it at
	// the old model's rates. Unpriced, it costs what the endpoint
	// reports, and a dollar budget refuses it.
	var dropped []string
	for _, p := range []struct {
		key   string
		price **float64
	}{
		{"price_input_per_mtok", &m.PriceInputPerMTok},
		{"price_output_per_mtok", &m.PriceOutputPerMTok},
		{"price_cached_input_per_mtok", &m.PriceCachedInputPerMTok},
	} {
		if !lmd.IsDefined("models", role, p.key) {
			if *p.price != nil {
				dropped = append(dropped, p.key)
			}
			*p.price = nil
		}
	}
	// The context window belongs to the model too, and compaction
	// trusts it: an inherited window of another model would let
	// transcripts overflow a smaller one. There is no safe guess.
	// (Another endpoint serving the same model keeps it.)
	if inherit && m.Model != old.Model && m.Provider != ProviderOffline && !lmd.IsDefined("models", role, "context_tokens") {
		k := toml.Key{"models", role}
		return nil, &Error{File: file, Line: lineOf(lines, k), Key: k.String() + ".context_tokens",
			Msg: fmt.Sprintf("[models.%s] switches from %s to %s but does not give context_tokens; "+
				"set it to the new model's context window (0 turns compaction off) in the same table", role, modelName(old), modelName(*m))}
	}
	return dropped, nil
}

// decodeLabs decodes each [labs.NAME] table of the layer over a copy of the
// lab so far, or, with inherit, of the default lab for a new one.
func decodeLabs(c *Config, layer *fileLayer, lmd toml.MetaData, file string, inherit bool) error {
	if len(layer.Labs) > 0 && c.Labs == nil {
		c.Labs = map[string]Lab{}
	}
	// The default lab first, so that new labs start from its final values.
	names := sortedKeys(layer.Labs)
	if i := slices.Index(names, DefaultLab); i > 0 {
		names = append([]string{DefaultLab}, slices.Delete(names, i, i+1)...)
	}
	for _, name := range names {
		base, ok := c.Labs[name]
		if !ok && inherit {
			base = c.Labs[DefaultLab]
		}
		l := base.clone()
		if err := lmd.PrimitiveDecode(layer.Labs[name], &l); err != nil {
			return decodeError(file, err)
		}
		c.Labs[name] = l
	}
	return nil
}

// modelName names a model for messages: its id, and its endpoint when set.
func modelName(m Model) string {
	name := fmt.Sprintf("%q", m.Model)
	if m.BaseURL != "" {
		name += " at " + m.BaseURL
	}
	return name
}

// decodeError turns a decoder error into an *Error with the best position
// known.
func decodeError(file string, err error) *Error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := "invalid TOML: " + pe.Message
		if pe.Usage != "" {
			msg += "\n" + pe.Usage
		}
		return &Error{File: file, Line: pe.Position.Line, Key: pe.LastKey, Msg: msg}
	}
	return &Error{File: file, Msg: err.Error()}
}

// syntaxError is decodeError for a document that does not parse. An error
// about the newline that ends a line (an unclosed table header) belongs to
// that line, though the decoder counts the newline into the next one.
func syntaxError(file string, data []byte, err error) *Error {
	e := decodeError(file, err)
	var pe toml.ParseError
	if errors.As(err, &pe) {
		if at := pe.Position.Start; at >= 0 && at < len(data) && data[at] == '\n' {
			e.Line = 1 + bytes.Count(data[:at], []byte("\n"))
		}
	}
	return e
}

// validateFile validates c and points each problem at file: at the line that
// set the key when the file did, else at the file alone (the problem then
// comes from combining its values with the layers below).
func validateFile(c *Config, file string, meta *layerMeta) error {
	issues := c.validate()
	out := make([]error, len(issues))
	for i, is := range issues {
		e := is.err()
		e.File = file
		e.Line = lineOf(meta.lines, is.key)
		out[i] = e
	}
	return joinErrors(out)
}

// joinErrors keeps a single error as it is, so callers may type-assert it.
func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Overlay returns a copy of c with tables laid over it as a --config-dir
// layer lays its file (per key; a new lab starts from the default lab, a
// new model from the executor's) and the result validated. tables holds
// top-level sections, such as {"models": {...}, "labs": {...}}; name
// names their source in errors. It leaves c as it was.
func (c *Config) Overlay(tables map[string]any, name string) (*Config, error) {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(tables); err != nil {
		return nil, &Error{File: name, Msg: fmt.Sprintf("cannot encode the overrides: %v", err)}
	}
	out := c.Clone()
	out.warnings = nil
	meta, err := decodeLayer(out, buf.Bytes(), name, true)
	if err == nil {
		// Lines would point into the encoded text, not at the source.
		meta.lines = nil
		err = validateFile(out, name, meta)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Line = 0
		}
		return nil, err
	}
	return out, nil
}
