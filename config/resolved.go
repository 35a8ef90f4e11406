package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"reflect"
	"slices"

	"github.com/BurntSushi/toml"
)

// RunMeta is the [run] table of a resolved configuration: how the run was
// started. It does not affect results and is not part of Fingerprint.
type RunMeta struct {
	Args      []string          `toml:"args"`
	Version   string            `toml:"version"`
	GitCommit string            `toml:"git_commit"`
	Offline   bool              `toml:"offline"`
	Extra     map[string]string `toml:"extra"`
}

// Redacted replaces any secret value found in a resolved configuration.
const Redacted = "[redacted]"

const resolvedHeader = `# Resolved configuration of this run: the built-in defaults with every
# --config-dir layer and command-line override applied. [run] records how the
# run was started; the rest is what it used. No API key is stored here: each
# model names the environment variable that holds its key.

`

// WriteResolved writes meta as a [run] table followed by the whole of c, as
// TOML that Parse and ParseResolved read back. Keys are only ever named by
// environment variable, but as a second line of defence any value of a
// variable named by an api_key_env is replaced by Redacted wherever it
// appears in a string (an argument, a path, a note), and nothing is written
// if a secret would still appear.
func WriteResolved(w io.Writer, c *Config, meta RunMeta) error {
	secrets := secretValues(c)
	cc := c.Clone()
	cc.fillSlices()
	m := meta.clone()
	// Short secrets are looked for only in how the run was started: in the
	// configuration they would match ordinary values (a key "none" and
	// network = "none") and break the file.
	var long []string
	for _, s := range secrets {
		if len(s) >= minEmbeddedSecret {
			long = append(long, s)
		}
	}
	redact(reflect.ValueOf(cc).Elem(), NewRedactor(long))
	redact(reflect.ValueOf(&m).Elem(), NewRedactor(secrets))

	var buf bytes.Buffer
	buf.WriteString(resolvedHeader)
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	run := struct {
		Run RunMeta `toml:"run"`
	}{m}
	if err := enc.Encode(run); err != nil {
		return fmt.Errorf("encode [run] of the resolved config: %w", err)
	}
	if !bytes.HasSuffix(buf.Bytes(), []byte("\n\n")) {
		buf.WriteString("\n")
	}
	if err := enc.Encode(cc); err != nil {
		return fmt.Errorf("encode the resolved config: %w", err)
	}
	launcher := struct {
		Launcher Launcher `toml:"launcher"`
	}{cc.Launcher}
	buf.WriteString("\n")
	if err := enc.Encode(launcher); err != nil {
		return fmt.Errorf("encode [launcher] of the resolved config: %w", err)
	}
	for _, s := range secrets {
		// Short values cannot be told apart from ordinary text (a "1" in a
		// number); strings holding them were redacted above.
		if len(s) >= minEmbeddedSecret && bytes.Contains(buf.Bytes(), []byte(s)) {
			return fmt.Errorf("resolved config would contain the value of an API key variable; not written")
		}
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write the resolved config: %w", err)
	}
	return nil
}

// secretValues returns the non-empty values of the variables named by any
// api_key_env, longest first so a longer secret is replaced before any
// secret it contains.
func secretValues(c *Config) []string {
	var out []string
	for _, role := range sortedKeys(c.Models) {
		if v := c.Models[role].APIKey(); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// minEmbeddedSecret is the shortest secret searched for inside longer
// strings. A shorter value (the dummy key "x" or "local" of a local server)
// would match ordinary text, such as a digit of a URL, and garble the file;
// it is replaced only where it stands alone: a whole string, or after "=".
const minEmbeddedSecret = 8

// redact replaces every secret in every string reachable from v, in place.
func redact(v reflect.Value, secrets *Redactor) {
	switch v.Kind() {
	case reflect.String:
		s := secrets.String(v.String())
		if v.CanSet() {
			v.SetString(s)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			redact(v.Elem(), secrets)
		}
	case reflect.Interface:
		// A value held in an interface (decoded JSON in a map[string]any)
		// is not settable: copy it out, redact, store back.
		if !v.IsNil() && v.CanSet() {
			e := reflect.New(v.Elem().Type()).Elem()
			e.Set(v.Elem())
			redact(e, secrets)
			v.Set(e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				redact(v.Field(i), secrets)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			redact(v.Index(i), secrets)
		}
	case reflect.Map:
		// Map values are not addressable: copy, redact, store back. Keys
		// (roles, lab names, extra names) are redacted the same way.
		for _, k := range v.MapKeys() {
			nv := reflect.New(v.Type().Elem()).Elem()
			nv.Set(v.MapIndex(k))
			redact(nv, secrets)
			nk := reflect.New(v.Type().Key()).Elem()
			nk.Set(k)
			redact(nk, secrets)
			v.SetMapIndex(k, reflect.Value{})
			v.SetMapIndex(nk, nv)
		}
	}
}

// Fingerprint identifies the settings that can change a run's results: the
// sha256 (hex) of the canonical TOML encoding of c, leaving out only what
// cannot change a measurement — which sandbox backend and Docker engines
// run the trials and how many trials or containers run at once (backend,
// docker_host, docker_hosts, concurrency, max_containers), keep_containers, remote_fetch, task_cache_dir, the names
// of API key variables, and [budget], which decides when a run stops but
// not what it measures (so a run stopped by its budget can resume with a
// larger one). A resume compares it with the run's own to refuse a changed
// configuration.
func Fingerprint(c *Config) string {
	cc := c.Clone()
	cc.fillSlices()
	cc.Budget = Budget{}
	// How long a run goes on does not change what any iteration measures:
	// extending a run with --iterations on resume is allowed.
	cc.Experiment.Iterations = 0
	rt := &cc.ExecutorRuntime
	rt.Backend, rt.DockerHost, rt.DockerHosts, rt.Concurrency, rt.MaxContainers = "", "", nil, 0, 0
	rt.KeepContainers, rt.RemoteFetch, rt.TaskCacheDir = false, false, ""
	for role, m := range cc.Models {
		// How many calls may wait on a model at once changes no answer.
		m.APIKeyEnv, m.MaxConnections = "", 0
		cc.Models[role] = m
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(cc); err != nil {
		// Config holds only types the encoder supports.
		panic(fmt.Sprintf("config: encode for fingerprint: %v", err))
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

// fillSlices makes nil lists empty, so that they are written out (a resolved
// file is complete) and nil and empty encode alike.
func (c *Config) fillSlices() {
	fill := func(s *[]string) {
		if *s == nil {
			*s = []string{}
		}
	}
	fill(&c.Validation.Pool)
	fill(&c.ExecutorRuntime.TaskDirs)
	fill(&c.Launcher.Sbatch)
	for name, l := range c.Labs {
		fill(&l.TaskSkillDirs)
		c.Labs[name] = l
	}
}

// APIKeyEnvs lists, sorted by role and without repeats, the environment
// variables the configured models read their keys from (for a dry run to
// tell which must be set).
func (c *Config) APIKeyEnvs() []string {
	var out []string
	for _, role := range sortedKeys(c.Models) {
		if e := c.Models[role].APIKeyEnv; e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}
