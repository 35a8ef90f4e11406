package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mediated-coevo/harness/conditions"
)

// writeLayer puts a default.toml with body into a fresh config dir.
func writeLayer(t *testing.T, body string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, LayerFile)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func mustDefault(t *testing.T) *Config {
	t.Helper()
	c, err := Default()
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	return c
}

func asConfigError(t *testing.T, err error) *Error {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *config.Error", err, err)
	}
	return ce
}

func TestDefaultLoadsAndValidates(t *testing.T) {
	c := mustDefault(t)
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"iterations", c.Experiment.Iterations, 30},
		{"seed", c.Experiment.Seed, int64(42)},
		{"coevo_interval", c.Experiment.CoevoInterval, 5},
		{"advisor_buffer_max", c.Experiment.AdvisorBufferMax, 10},
		{"reward_mode", c.Experiment.RewardMode, RewardVerifier},
		{"validation.rule", c.Validation.Rule, RulePosterior},
		{"validation.tolerance", c.Validation.Tolerance, 1e-9},
		{"reflection.max_pairs", c.Reflection.MaxPairs, 5},
		{"labs.default.executor_mode", c.Labs[DefaultLab].ExecutorMode, ModeSingle},
		{"labs.hierarchical.executor_mode", c.Labs["hierarchical"].ExecutorMode, ModeHierarchical},
		{"labs.default.task_skill_dirs", len(c.Labs[DefaultLab].TaskSkillDirs), 4},
		{"budget.wall_clock", c.Budget.WallClock.Duration, time.Duration(0)},
		{"executor_runtime.agent_timeout", c.ExecutorRuntime.AgentTimeout.Duration, 10 * time.Minute},
		{"mediator.transcript_chars", c.Mediator.TranscriptChars, 6000},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	for _, role := range conditions.ModelRoles() {
		m, err := c.Model(role)
		if err != nil {
			t.Fatalf("Model(%s): %v", role, err)
		}
		if m.Provider != ProviderOpenAI || m.APIKeyEnv != "OPENROUTER_API_KEY" || m.Model == "" ||
			m.Timeout.Duration != 120*time.Second || m.PriceInputPerMTok == nil {
			t.Errorf("models.%s = %+v, want an OpenRouter model with prices and a 120s timeout", role, m)
		}
	}

	loaded, err := Load("")
	if err != nil {
		t.Fatalf(`Load(""): %v`, err)
	}
	if !reflect.DeepEqual(loaded, c) {
		t.Error(`Load("") differs from Default()`)
	}
}

// The embedded file is the reference: every key of the schema must be set in
// it, except the optional ones that are unset by default, which must at least
// be shown in a comment.
func TestDefaultFileDefinesEveryKey(t *testing.T) {
	var raw map[string]any
	md, err := toml.Decode(string(DefaultFile()), &raw)
	if err != nil {
		t.Fatal(err)
	}
	optional := map[string]bool{"top_p": true, "seed": true, "price_cached_input_per_mtok": true, "max_connections": true, "offline_diligence": true}
	root := fileSchema()
	var walk func(n *schemaNode, k toml.Key)
	walk = func(n *schemaNode, k toml.Key) {
		switch {
		case n.orLeaf != nil:
			// A lab's students: the count is set, the tables are shown,
			// with every key, in a comment.
			if !md.IsDefined(k...) {
				t.Errorf("default.toml does not set %s", k)
			}
			if !bytes.Contains(DefaultFile(), []byte("# [labs.<name>.students.<id>]")) {
				t.Errorf("student tables of %s are not shown in a comment", k)
			}
			for _, name := range n.elem.names {
				if !bytes.Contains(DefaultFile(), []byte("#   "+name+" = ")) {
					t.Errorf("key %s of %s is not shown in a comment", name, k)
				}
			}
		case len(k) == 1 && k[0] == "models":
			for _, role := range conditions.ModelRoles() {
				walk(n.elem, append(slices.Clone(k), string(role)))
			}
		case n.leaf != nil:
			if md.IsDefined(k...) {
				return
			}
			if (len(k) == 3 && k[0] == "models" && optional[k[2]]) || (len(k) == 3 && k[0] == "labs" && (k[2] == "assignment" || k[2] == "skills_dir")) ||
				(len(k) == 2 && k[0] == "network") {
				if !bytes.Contains(DefaultFile(), []byte("# "+k[len(k)-1]+" = ")) {
					t.Errorf("optional key %s is not shown in a comment", k)
				}
				return
			}
			t.Errorf("default.toml does not set %s", k)
		case n.items != nil:
			// An array of tables is empty by default: it must be shown,
			// with every key of its tables, in a comment.
			if !bytes.Contains(DefaultFile(), []byte("#   [["+k.String()+"]]")) {
				t.Errorf("array of tables %s is not shown in a comment", k)
			}
			for _, name := range n.items.names {
				if !bytes.Contains(DefaultFile(), []byte("#   "+name+" = ")) {
					t.Errorf("key %s of %s is not shown in a comment", name, k)
				}
			}
		case n.fields != nil:
			for _, name := range n.names {
				walk(n.fields[name], append(slices.Clone(k), name))
			}
		case n.keys != nil:
			for _, name := range n.keys {
				walk(n.elem, append(slices.Clone(k), name))
			}
		default: // labs
			for _, name := range []string{DefaultLab, "hierarchical"} {
				walk(n.elem, append(slices.Clone(k), name))
			}
		}
	}
	for _, name := range root.names {
		if name == "agents" {
			// No agent is installed by default: the table is shown in a comment.
			if !bytes.Contains(DefaultFile(), []byte("#   [agents.")) {
				t.Error("the [agents.<name>] table is not shown in a comment")
			}
			continue
		}
		if name != "run" {
			walk(root.fields[name], toml.Key{name})
		}
	}
}

func TestLoadLayering(t *testing.T) {
	def := mustDefault(t)
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, c *Config)
	}{
		{
			name: "one model key keeps the role's other defaults but not its prices",
			body: "[models.planner]\nmodel = \"x\"\ncontext_tokens = 32768\n",
			check: func(t *testing.T, c *Config) {
				got, want := c.Models[conditions.RolePlanner], def.Models[conditions.RolePlanner]
				want.Model, want.ContextTokens = "x", 32768
				want.PriceInputPerMTok, want.PriceOutputPerMTok = nil, nil
				if !reflect.DeepEqual(got, want) {
					t.Errorf("planner = %+v, want %+v", got, want)
				}
				if !reflect.DeepEqual(c.Models[conditions.RoleExecutor], def.Models[conditions.RoleExecutor]) {
					t.Error("executor model changed")
				}
			},
		},
		{
			name: "a new model priced in the same file keeps its prices",
			body: "[models.planner]\nmodel = \"x\"\ncontext_tokens = 16384\nprice_input_per_mtok = 1.5\n",
			check: func(t *testing.T, c *Config) {
				m := c.Models[conditions.RolePlanner]
				if m.PriceInputPerMTok == nil || *m.PriceInputPerMTok != 1.5 || m.PriceOutputPerMTok != nil {
					t.Errorf("planner prices = %v, %v; want 1.5 and unpriced output", m.PriceInputPerMTok, m.PriceOutputPerMTok)
				}
			},
		},
		{
			name: "another endpoint drops the prices",
			body: "[models.executor]\nbase_url = \"http://127.0.0.1:8000/v1\"\n",
			check: func(t *testing.T, c *Config) {
				if m := c.Models[conditions.RoleExecutor]; m.PriceInputPerMTok != nil || m.PriceOutputPerMTok != nil {
					t.Errorf("executor on a new endpoint kept prices %v, %v", *m.PriceInputPerMTok, *m.PriceOutputPerMTok)
				}
			},
		},
		{
			name: "restating the same model keeps its prices",
			body: fmt.Sprintf("[models.planner]\nmodel = %q\ntemperature = 0.5\n", def.Models[conditions.RolePlanner].Model),
			check: func(t *testing.T, c *Config) {
				if !reflect.DeepEqual(c.Models[conditions.RolePlanner].PriceInputPerMTok, def.Models[conditions.RolePlanner].PriceInputPerMTok) ||
					c.Models[conditions.RolePlanner].PriceInputPerMTok == nil {
					t.Errorf("planner prices changed when its model did not")
				}
			},
		},
		{
			name: "dotted keys layer too",
			body: "models.mediator.temperature = 0.0\n",
			check: func(t *testing.T, c *Config) {
				m := c.Models[conditions.RoleMediator]
				if *m.Temperature != 0 || m.Model != def.Models[conditions.RoleMediator].Model {
					t.Errorf("mediator = %+v", m)
				}
			},
		},
		{
			name: "one experiment key keeps the section's other defaults",
			body: "[experiment]\niterations = 3\n",
			check: func(t *testing.T, c *Config) {
				want := def.Experiment
				want.Iterations = 3
				if c.Experiment != want {
					t.Errorf("experiment = %+v, want %+v", c.Experiment, want)
				}
				if !reflect.DeepEqual(c.Validation, def.Validation) {
					t.Error("validation changed")
				}
			},
		},
		{
			name: "a new lab starts from the default lab",
			body: "[labs.mine]\nmax_model_calls = 10\n",
			check: func(t *testing.T, c *Config) {
				want := def.Labs[DefaultLab]
				want.MaxModelCalls = 10
				if !reflect.DeepEqual(c.Labs["mine"], want) {
					t.Errorf("labs.mine = %+v, want %+v", c.Labs["mine"], want)
				}
				if !reflect.DeepEqual(c.Labs[DefaultLab], def.Labs[DefaultLab]) {
					t.Error("labs.default changed")
				}
			},
		},
		{
			name: "a new lab sees the file's changes to the default lab",
			body: "[labs.mine]\ncode_quota = 7\n[labs.default]\nstudents = 2\n",
			check: func(t *testing.T, c *Config) {
				if l := c.Labs["mine"]; l.Students.Count != 2 || l.CodeQuota != 7 {
					t.Errorf("labs.mine = %+v, want students 2 and code_quota 7", l)
				}
				if c.Labs["hierarchical"].Students.Count != 1 {
					t.Error("an existing lab took the default lab's change")
				}
			},
		},
		{
			name: "arrays are replaced whole",
			body: "[validation]\npool = [\"a\", \"b\"]\n[labs.default]\ntask_skill_dirs = [\"/x\"]\n",
			check: func(t *testing.T, c *Config) {
				if !slices.Equal(c.Validation.Pool, []string{"a", "b"}) {
					t.Errorf("pool = %v", c.Validation.Pool)
				}
				if !slices.Equal(c.Labs[DefaultLab].TaskSkillDirs, []string{"/x"}) {
					t.Errorf("task_skill_dirs = %v", c.Labs[DefaultLab].TaskSkillDirs)
				}
			},
		},
		{
			name: "a resolved file with [run] is accepted as a layer",
			body: "[run]\nargs = [\"run\"]\n[budget]\nwall_clock = \"1h\"\n",
			check: func(t *testing.T, c *Config) {
				if c.Budget.WallClock.Duration != time.Hour {
					t.Errorf("wall_clock = %v", c.Budget.WallClock)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := writeLayer(t, tc.body)
			c, err := Load(dir)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tc.check(t, c)
		})
	}
}

func TestLoadRejectsUnknownKeys(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantKey  string
		wantLine int
		wantHint string
	}{
		{"top-level table", "# x\n[experimnt]\niterations = 3\n", "experimnt", 2, `did you mean "experiment"`},
		{"top-level key", "iterations = 3\n", "iterations", 1, "known keys here"},
		{"nested key", "[experiment]\nseed = 1\niteratons = 3\n", "experiment.iteratons", 3, `did you mean "iterations"`},
		{"dotted nested key", "experiment.iteratons = 3\n", "experiment.iteratons", 1, `did you mean "iterations"`},
		{"table in a different case", "[Experiment]\niterations = 3\n", "Experiment", 1, "lower case"},
		{"nested table header in a different case", "# models\n\n[Models.Planner]\nmodel = \"x\"\n", "Models", 3, "lower case"},
		{"key in a different case", "[experiment]\nIterations = 3\n", "experiment.Iterations", 2, "lower case"},
		{"model key in a different case", "[models.planner]\nModel = \"x\"\n", "models.planner.Model", 2, "lower case"},
		{"unknown model role", "[models.plannr]\nmodel = \"x\"\n", "models.plannr", 1, `did you mean "planner"`},
		{"model role in a different case", "[models.Planner]\nmodel = \"x\"\n", "models.Planner", 1, "lower case"},
		{"unknown model role far from any", "[models.referee]\nmodel = \"x\"\n", "models.referee", 1, "model roles are planner"},
		{"unknown lab key", "[labs.mine]\nstudent = 2\n", "labs.mine.student", 2, `did you mean "students"`},
		{"unknown key in an inline table", "[models]\nplanner = { model = \"x\", modle = \"y\" }\n", "models.planner.modle", 2, `did you mean "model"`},
		{"unknown key in [run]", "[run]\nflags = []\n", "run.flags", 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := writeLayer(t, tc.body)
			_, err := Load(dir)
			if err == nil {
				t.Fatal("Load succeeded, want an unknown-key error")
			}
			ce := asConfigError(t, err)
			if ce.File != path || ce.Key != tc.wantKey || ce.Line != tc.wantLine {
				t.Errorf("got file %q key %q line %d, want %q %q %d", ce.File, ce.Key, ce.Line, path, tc.wantKey, tc.wantLine)
			}
			msg := err.Error()
			for _, want := range []string{path, `unknown key "` + tc.wantKey + `"`, tc.wantHint} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{File: "config/default.toml", Line: 12, Key: "experiment.iteratons",
		Msg: `unknown key "experiment.iteratons" (did you mean "iterations"?)`}
	want := `config/default.toml line 12: unknown key "experiment.iteratons" (did you mean "iterations"?)`
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	if got := (&Error{Msg: "x must be 1"}).Error(); got != "x must be 1" {
		t.Errorf("without a position: %q", got)
	}
}

func TestLoadReportsTypeErrorsWithLine(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantKey  string
		wantLine int
		wantMsg  string
	}{
		{"string for an integer", "[experiment]\n\niterations = \"thirty\"\n", "experiment.iterations", 3, "must be an integer"},
		{"float for an integer", "[experiment]\nseed = 1.5\n", "experiment.seed", 2, "must be an integer"},
		{"string for a number", "[models.planner]\nmodel = \"m\"\ntemperature = \"hot\"\n", "models.planner.temperature", 3, "must be a number"},
		{"integer for a duration", "[budget]\nwall_clock = 5\n", "budget.wall_clock", 2, "duration"},
		{"bad duration", "[executor_runtime]\n\n\nbuild_timeout = \"10 minutes\"\n", "executor_runtime.build_timeout", 4, "not a duration"},
		{"numbers in a string array", "[validation]\npool = [\n  \"a\",\n  2,\n]\n", "validation.pool", 2, "item 2 must be a string"},
		{"string for a boolean", "[validation]\nenabled = \"yes\"\n", "validation.enabled", 2, "true or false"},
		{"value for a table", "experiment = 3\n", "experiment", 1, "must be a table"},
		{"table below a value", "[experiment.iterations]\nx = 1\n", "experiment.iterations", 1, "must be an integer"},
		{"array of tables", "[[labs]]\nstudents = 1\n", "labs", 1, "must be a table"},
		{"syntax error", "[experiment]\niterations = = 3\n", "", 2, ""},
		{"unclosed table header on line 1", "[experiment\nseed = 1\n", "", 1, "to end table name"},
		{"unclosed table header on line 2", "# c\n[experiment\nseed = 1\n", "", 2, "to end table name"},
		{"duplicate key", "[experiment]\nseed = 1\nseed = 2\n", "", 3, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := writeLayer(t, tc.body)
			_, err := Load(dir)
			if err == nil {
				t.Fatal("Load succeeded, want a type error")
			}
			ce := asConfigError(t, err)
			if ce.File != path || ce.Line != tc.wantLine || (tc.wantKey != "" && ce.Key != tc.wantKey) {
				t.Errorf("got file %q key %q line %d, want %q %q %d (%v)", ce.File, ce.Key, ce.Line, path, tc.wantKey, tc.wantLine, err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
		})
	}
}

func TestLoadMissingLayerFile(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir)
	ce := asConfigError(t, err)
	want := filepath.Join(dir, LayerFile)
	if ce.File != want || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
}

// A --config-dir that does not exist (or is a file) is reported as such,
// not as a missing default.toml inside it.
func TestLoadMissingConfigDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ dir, want string }{
		{filepath.Join(t.TempDir(), "nope"), "does not exist"},
		{file, "is a file, not a directory"},
	}
	for _, tt := range tests {
		_, err := Load(tt.dir)
		ce := asConfigError(t, err)
		if !strings.Contains(ce.Msg, "config directory "+tt.dir+" "+tt.want) || strings.Contains(err.Error(), "no "+LayerFile) {
			t.Errorf("Load(%s) = %v, want it to say the directory %s", tt.dir, err, tt.want)
		}
	}
}

func TestValidateRanges(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(c *Config)
		wantKey string
	}{
		{"iterations 0", func(c *Config) { c.Experiment.Iterations = 0 }, "experiment.iterations"},
		{"coevo_interval 0", func(c *Config) { c.Experiment.CoevoInterval = 0 }, "experiment.coevo_interval"},
		{"advisor_buffer_max 0", func(c *Config) { c.Experiment.AdvisorBufferMax = 0 }, "experiment.advisor_buffer_max"},
		{"reward_mode", func(c *Config) { c.Experiment.RewardMode = "best" }, "experiment.reward_mode"},
		{"verifier_feedback", func(c *Config) { c.Experiment.VerifierFeedback = "everything" }, "experiment.verifier_feedback"},
		{"negative char cap", func(c *Config) { c.Experiment.ReportMaxChars = -1 }, "experiment.report_max_chars"},
		{"negative transcript budget", func(c *Config) { c.Mediator.TranscriptChars = -1 }, "mediator.transcript_chars"},
		{"routing", func(c *Config) { c.Experiment.Routing = "shared" }, "experiment.routing"},
		{"negative routing budget", func(c *Config) { c.Mediator.RouteItems = -1 }, "mediator.route_items"},
		{"validation rule", func(c *Config) { c.Validation.Rule = "vote" }, "validation.rule"},
		{"threshold 1", func(c *Config) { c.Validation.Threshold = 1 }, "validation.threshold"},
		{"threshold 0", func(c *Config) { c.Validation.Threshold = 0 }, "validation.threshold"},
		{"trials 0", func(c *Config) { c.Validation.TrialsPerTask = 0 }, "validation.trials_per_task"},
		{"max below trials", func(c *Config) { c.Validation.TrialsPerTask, c.Validation.MaxTrials = 3, 2 }, "validation.max_trials_per_task"},
		{"negative margin", func(c *Config) { c.Validation.Margin = -0.1 }, "validation.margin"},
		{"duplicate pool task", func(c *Config) { c.Validation.Pool = []string{"a", "a"} }, "validation.pool"},
		{"bucket fraction", func(c *Config) { c.Reflection.BucketFraction = 0 }, "reflection.bucket_fraction"},
		{"negative n_candidates", func(c *Config) { c.Tournament.NCandidates = -1 }, "tournament.n_candidates"},
		{"validate_top above n_candidates", func(c *Config) { c.Tournament.NCandidates, c.Tournament.ValidateTop = 2, 3 }, "tournament.validate_top"},
		{"negative meta_review_interval", func(c *Config) { c.Tournament.MetaReviewInterval = -2 }, "tournament.meta_review_interval"},
		{"negative elo_k", func(c *Config) { c.Tournament.EloK = -1 }, "tournament.elo_k"},
		{"NaN elo_initial", func(c *Config) { c.Tournament.EloInitial = math.NaN() }, "tournament.elo_initial"},
		{"tournament without a judge", func(c *Config) { c.Tournament.NCandidates = 3; delete(c.Models, conditions.RoleJudge) }, "models.judge"},
		{"provider", func(c *Config) { setModel(c, conditions.RolePlanner, func(m *Model) { m.Provider = "anthropic" }) }, "models.planner.provider"},
		{"openai without model", func(c *Config) { setModel(c, conditions.RoleCode, func(m *Model) { m.Model = "" }) }, "models.code.model"},
		{"openai without base_url", func(c *Config) { setModel(c, conditions.RoleCode, func(m *Model) { m.BaseURL = "" }) }, "models.code.base_url"},
		{"key pasted into api_key_env", func(c *Config) { setModel(c, conditions.RoleCode, func(m *Model) { m.APIKeyEnv = "sk-or-v1-abc" }) }, "models.code.api_key_env"},
		{"temperature", func(c *Config) { setModel(c, conditions.RoleCode, func(m *Model) { m.Temperature = ptr(3.0) }) }, "models.code.temperature"},
		{"negative cached price", func(c *Config) {
			setModel(c, conditions.RoleCode, func(m *Model) { m.PriceCachedInputPerMTok = ptr(-1.0) })
		}, "models.code.price_cached_input_per_mtok"},
		{"negative max_connections", func(c *Config) { setModel(c, conditions.RoleCode, func(m *Model) { m.MaxConnections = -1 }) }, "models.code.max_connections"},
		{"negative price", func(c *Config) { setModel(c, conditions.RoleCode, func(m *Model) { m.PriceOutputPerMTok = ptr(-1.0) }) }, "models.code.price_output_per_mtok"},
		{"zero timeout", func(c *Config) { setModel(c, conditions.RoleCode, func(m *Model) { m.Timeout = Duration{} }) }, "models.code.timeout"},
		{"missing role", func(c *Config) { delete(c.Models, conditions.RoleCompactor) }, "models.compactor"},
		{"missing default lab", func(c *Config) { delete(c.Labs, DefaultLab) }, "labs.default"},
		{"executor_mode", func(c *Config) { setLab(c, DefaultLab, func(l *Lab) { l.ExecutorMode = "swarm" }) }, "labs.default.executor_mode"},
		{"students 0", func(c *Config) { setLab(c, DefaultLab, func(l *Lab) { l.Students = Students{} }) }, "labs.default.students"},
		{"conclude margin too big", func(c *Config) { setLab(c, DefaultLab, func(l *Lab) { l.ConcludeMargin = 30 }) }, "labs.default.conclude_margin"},
		{"relative task skill dir", func(c *Config) { setLab(c, DefaultLab, func(l *Lab) { l.TaskSkillDirs = []string{"skills"} }) }, "labs.default.task_skill_dirs"},
		{"launcher kind", func(c *Config) { c.Launcher.Kind = "pbs" }, "launcher.kind"},
		{"launcher time limit", func(c *Config) { c.Launcher.TimeLimit = "4h" }, "launcher.time_limit"},
		{"launcher memory", func(c *Config) { c.Launcher.Memory = "8 GB" }, "launcher.memory"},
		{"launcher cpus", func(c *Config) { c.Launcher.CPUs = -1 }, "launcher.cpus"},
		{"launcher max_running", func(c *Config) { c.Launcher.MaxRunning = -1 }, "launcher.max_running"},
		{"launcher partition", func(c *Config) { c.Launcher.Partition = "a b" }, "launcher.partition"},
		{"launcher sbatch line", func(c *Config) { c.Launcher.Sbatch = []string{"#SBATCH --qos=x"} }, "launcher.sbatch"},
		{"launcher poll interval", func(c *Config) { c.Launcher.PollInterval = Duration{-time.Second} }, "launcher.poll_interval"},
		{"negative budget tokens", func(c *Config) { c.Budget.MaxTokens = -1 }, "budget.max_tokens"},
		{"negative budget usd", func(c *Config) { c.Budget.MaxUSD = -1 }, "budget.max_usd"},
		{"negative wall clock", func(c *Config) { c.Budget.WallClock = Duration{-time.Second} }, "budget.wall_clock"},
		{"network", func(c *Config) { c.ExecutorRuntime.Network = "host" }, "executor_runtime.network"},
		{"concurrency 0", func(c *Config) { c.ExecutorRuntime.Concurrency = 0 }, "executor_runtime.concurrency"},
		{"fewer containers than trials", func(c *Config) { c.ExecutorRuntime.MaxContainers = 1 }, "executor_runtime.max_containers"},
		{"cpus 0", func(c *Config) { c.ExecutorRuntime.CPUs = 0 }, "executor_runtime.cpus"},
		{"archive without sha", func(c *Config) { c.ExecutorRuntime.ArchiveURL = "https://example.org/t.zip" }, "executor_runtime.archive_sha256"},
		{"bad sha", func(c *Config) { c.ExecutorRuntime.ArchiveSHA256 = "abc" }, "executor_runtime.archive_sha256"},
		{"unknown backend", func(c *Config) { c.ExecutorRuntime.Backend = "kubernetes" }, "executor_runtime.backend"},
		{"docker_hosts beside docker_host", func(c *Config) {
			c.ExecutorRuntime.DockerHost = "unix:///a.sock"
			c.ExecutorRuntime.DockerHosts = []DockerHost{{Host: "unix:///b.sock", Capacity: 1}}
		}, "executor_runtime.docker_hosts"},
		{"docker_hosts without scheme", func(c *Config) { c.ExecutorRuntime.DockerHosts = []DockerHost{{Host: "node1:2376", Capacity: 1}} }, "executor_runtime.docker_hosts"},
		{"docker_hosts over http", func(c *Config) { c.ExecutorRuntime.DockerHosts = []DockerHost{{Host: "http://node1", Capacity: 1}} }, "executor_runtime.docker_hosts"},
		{"docker_hosts empty host", func(c *Config) { c.ExecutorRuntime.DockerHosts = []DockerHost{{Capacity: 1}} }, "executor_runtime.docker_hosts"},
		{"docker_hosts capacity 0", func(c *Config) { c.ExecutorRuntime.DockerHosts = []DockerHost{{Host: "tcp://node1:2376"}} }, "executor_runtime.docker_hosts"},
		{"docker_hosts repeated", func(c *Config) {
			c.ExecutorRuntime.DockerHosts = []DockerHost{{Host: "ssh://n1", Capacity: 1}, {Host: "ssh://n1", Capacity: 2}}
		}, "executor_runtime.docker_hosts"},
		{"archive over ftp", func(c *Config) {
			c.ExecutorRuntime.ArchiveURL, c.ExecutorRuntime.ArchiveSHA256 = "ftp://example.org/t.zip", strings.Repeat("a", 64)
		}, "executor_runtime.archive_url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mustDefault(t)
			tc.mutate(c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			ce := asConfigError(t, err)
			if ce.Key != tc.wantKey || !strings.Contains(err.Error(), tc.wantKey) {
				t.Errorf("error %q (key %q) does not name %s", err, ce.Key, tc.wantKey)
			}
		})
	}
	for _, archive := range []string{"/srv/tasks.zip", "tasks.tar.gz", "file:///srv/tasks.zip", "https://example.org/t.zip"} {
		t.Run("archive_url "+archive+" is accepted", func(t *testing.T) {
			c := mustDefault(t)
			c.ExecutorRuntime.ArchiveURL, c.ExecutorRuntime.ArchiveSHA256 = archive, strings.Repeat("a", 64)
			if err := c.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Run("offline models need no endpoint", func(t *testing.T) {
		c := mustDefault(t)
		setModel(c, conditions.RolePlanner, func(m *Model) { m.Provider, m.Model, m.BaseURL = ProviderOffline, "", "" })
		if err := c.Validate(); err != nil {
			t.Error(err)
		}
	})
}

// A layer that switches a role to another model must say that model's
// context window: the old one's could let transcripts overflow the new.
func TestLoadNewModelNeedsItsContextWindow(t *testing.T) {
	tests := []struct {
		name, body string
		wantErr    bool
	}{
		{"new model without a window", "# a comment\n[models.executor]\nmodel = \"Qwen/Qwen3-32B\"\n", true},
		{"new model with a window", "[models.executor]\nmodel = \"Qwen/Qwen3-32B\"\ncontext_tokens = 32768\n", false},
		{"same model at another endpoint", "[models.executor]\nbase_url = \"http://127.0.0.1:8000/v1\"\n", false},
		{"an offline role needs none", "[models.executor]\nprovider = \"offline\"\nmodel = \"\"\nbase_url = \"\"\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, path := writeLayer(t, tt.body)
			_, err := Load(dir)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			ce := asConfigError(t, err)
			if ce.File != path || ce.Line != 2 || ce.Key != "models.executor.context_tokens" ||
				!strings.Contains(ce.Msg, `to "Qwen/Qwen3-32B"`) || !strings.Contains(ce.Msg, "set it to the new model's context window") {
				t.Errorf("error = %+v", ce)
			}
		})
	}
}

func TestLoadPointsRangeErrorsAtTheFile(t *testing.T) {
	dir, path := writeLayer(t, "[experiment]\nseed = 1\niterations = 0\n[validation]\ntrials_per_task = 11\n")
	_, err := Load(dir)
	if err == nil {
		t.Fatal("Load accepted iterations = 0")
	}
	var found []string
	for _, e := range unwrapAll(err) {
		ce := asConfigError(t, e)
		if ce.File != path {
			t.Errorf("%v: file %q, want %q", ce, ce.File, path)
		}
		found = append(found, ce.Key)
		switch ce.Key {
		case "experiment.iterations":
			if ce.Line != 3 {
				t.Errorf("%v: line %d, want 3", ce, ce.Line)
			}
		case "validation.max_trials_per_task":
			// Set by the defaults, broken by the file's trials_per_task:
			// only the file can be named.
			if ce.Line != 4 {
				t.Errorf("%v: line %d, want 4 (the [validation] header)", ce, ce.Line)
			}
		}
	}
	if !slices.Equal(found, []string{"experiment.iterations", "validation.max_trials_per_task"}) {
		t.Errorf("errors for %v", found)
	}
}

func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestWriteResolvedRoundTrips(t *testing.T) {
	c := mustDefault(t)
	c.Experiment.Iterations = 7
	c.Validation.Pool = []string{"t1", "t2"}
	setModel(c, conditions.RolePlanner, func(m *Model) { m.TopP, m.Seed = ptr(0.9), ptr(int64(5)) })
	setModel(c, conditions.RoleCode, func(m *Model) { m.Temperature, m.PriceInputPerMTok = nil, nil })
	// A lab not in the defaults, written whole: a standalone file does not
	// fill labs from the default lab.
	c.Labs["mine"] = Lab{Students: Students{Count: 2}, ExecutorMode: ModeSingle, MaxModelCalls: 5, ConcludeMargin: 1,
		SubagentMaxCalls: 3, CommandTimeout: Duration{time.Minute}, OutputCapBytes: 10, TaskSkillDirs: []string{}}
	// Student tables, a model only a student names, and an assignment
	// round-trip too.
	c.Models["cheap"] = c.Models[conditions.RoleExecutor]
	het := c.Labs["mine"]
	het.Assignment = AssignAll
	het.Students = Students{ByID: map[string]Student{"strong": {},
		"weak-1": {Model: "cheap", ExecutorMode: ModeHierarchical}}}
	c.Labs["het"] = het
	meta := RunMeta{Args: []string{"run", "--tasks", "a,b"}, Version: "v1.2.3", GitCommit: "abc123",
		Offline: true, Extra: map[string]string{"row": "full_coevolution"}}

	got, gotMeta, buf := writeAndParse(t, c, meta)
	if !reflect.DeepEqual(got, c) {
		t.Errorf("config did not round-trip:\n got %+v\nwant %+v", got, c)
	}
	if !reflect.DeepEqual(gotMeta, meta) {
		t.Errorf("meta = %+v, want %+v", gotMeta, meta)
	}
	if Fingerprint(got) != Fingerprint(c) {
		t.Error("fingerprint changed over a round trip")
	}
	if p, err := Parse(buf.Bytes(), "config.toml"); err != nil || !reflect.DeepEqual(p, c) {
		t.Errorf("Parse: %v", err)
	}
}

func TestWriteResolvedHoldsNoSecret(t *testing.T) {
	const secret = "secret-value"
	t.Setenv("OPENROUTER_API_KEY", secret)
	t.Setenv("OTHER_KEY", "another-secret-1234")
	c := mustDefault(t)
	setModel(c, conditions.RoleMediator, func(m *Model) { m.APIKeyEnv = "OTHER_KEY" })
	c.Experiment.SharedNotes = "the key is " + secret
	c.ExecutorRuntime.TaskDirs = []string{"/tmp/" + secret}
	meta := RunMeta{
		Args:  []string{"run", "--api-key", secret, "--x=another-secret-1234"},
		Extra: map[string]string{"note": secret, secret: "v"},
	}
	var buf bytes.Buffer
	if err := WriteResolved(&buf, c, meta); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{secret, "another-secret-1234"} {
		if strings.Contains(out, s) {
			t.Errorf("resolved config contains %q:\n%s", s, out)
		}
	}
	if !strings.Contains(out, Redacted) || !strings.Contains(out, `api_key_env = "OPENROUTER_API_KEY"`) {
		t.Errorf("want redaction markers and variable names in:\n%s", out)
	}
	if c.Experiment.SharedNotes != "the key is "+secret {
		t.Error("WriteResolved changed the caller's config")
	}
	if _, _, err := ParseResolved(buf.Bytes(), "config.toml"); err != nil {
		t.Errorf("redacted file does not parse: %v", err)
	}
}

// A short dummy key (local servers take any) is redacted where it stands
// alone, never inside other text, so the file still reads back unchanged.
func TestWriteResolvedShortKeyLeavesOtherTextAlone(t *testing.T) {
	t.Setenv("OPENROUTER_API_KEY", "1")
	t.Setenv("OTHER_KEY", "none")
	c := mustDefault(t)
	setModel(c, conditions.RolePlanner, func(m *Model) { m.BaseURL = "http://127.0.0.1:8000/v1" })
	setModel(c, conditions.RoleMediator, func(m *Model) { m.APIKeyEnv = "OTHER_KEY" })
	c.ExecutorRuntime.Network = "none"
	meta := RunMeta{Args: []string{"run", "--seed=1", "--key=1", "1"}, Extra: map[string]string{}}
	got, gotMeta, buf := writeAndParse(t, c, meta)
	if !reflect.DeepEqual(got, c) {
		t.Errorf("config changed by redacting a short key:\n%s", buf.String())
	}
	want := []string{"run", "--seed=" + Redacted, "--key=" + Redacted, Redacted}
	if !slices.Equal(gotMeta.Args, want) {
		t.Errorf("args = %q, want %q", gotMeta.Args, want)
	}
}

func TestParseIsStrictAndStandalone(t *testing.T) {
	if _, err := Parse([]byte("[experiment]\nIterations = 3\n"), "x.toml"); err == nil ||
		!strings.Contains(err.Error(), "x.toml") {
		t.Errorf("Parse of an unknown key: %v", err)
	}
	// Without the defaults underneath, a partial file is incomplete.
	_, err := Parse([]byte("[experiment]\niterations = 3\n"), "x.toml")
	if err == nil || !strings.Contains(err.Error(), "models.planner") {
		t.Errorf("Parse of a partial file: %v", err)
	}
}

func TestCloneIsDeep(t *testing.T) {
	c := mustDefault(t)
	setModel(c, conditions.RolePlanner, func(m *Model) { m.Seed = ptr(int64(1)) })
	c.Validation.Pool = []string{"a"}
	c.ExecutorRuntime.TaskDirs = []string{"/t"}
	orig := mustDefault(t)
	setModel(orig, conditions.RolePlanner, func(m *Model) { m.Seed = ptr(int64(1)) })
	orig.Validation.Pool = []string{"a"}
	orig.ExecutorRuntime.TaskDirs = []string{"/t"}

	cl := c.Clone()
	if !reflect.DeepEqual(cl, c) {
		t.Fatal("clone differs from the original")
	}
	*cl.Models[conditions.RolePlanner].Temperature = 1.5
	*cl.Models[conditions.RolePlanner].Seed = 9
	*cl.Models[conditions.RolePlanner].PriceInputPerMTok = 99
	cl.Models[conditions.RoleCode] = Model{}
	cl.Labs[DefaultLab].TaskSkillDirs[0] = "/changed"
	cl.Labs["new"] = Lab{}
	cl.Validation.Pool[0] = "b"
	cl.ExecutorRuntime.TaskDirs[0] = "/u"
	if !reflect.DeepEqual(c, orig) {
		t.Error("changing the clone changed the original")
	}
	if (*Config)(nil).Clone() != nil {
		t.Error("Clone of nil")
	}
}

func TestSetOffline(t *testing.T) {
	c := mustDefault(t)
	before := Fingerprint(c)
	c.SetOffline()
	for _, role := range conditions.ModelRoles() {
		if m := c.Models[role]; m.Provider != ProviderOffline {
			t.Errorf("models.%s provider = %q", role, m.Provider)
		}
	}
	if c.Models[conditions.RolePlanner].Model != "anthropic/claude-sonnet-4.6" {
		t.Error("SetOffline changed more than the provider")
	}
	if err := c.Validate(); err != nil {
		t.Errorf("offline config does not validate: %v", err)
	}
	if Fingerprint(c) == before {
		t.Error("going offline did not change the fingerprint")
	}
}

func TestModelLabAndAPIKey(t *testing.T) {
	c := mustDefault(t)
	t.Setenv("OPENROUTER_API_KEY", "k-123")
	m, err := c.Model(conditions.RoleExecutor)
	if err != nil || m.APIKey() != "k-123" {
		t.Errorf("Model(executor) = %+v, %v; key %q", m, err, m.APIKey())
	}
	*m.Temperature = 0
	if *c.Models[conditions.RoleExecutor].Temperature == 0 {
		t.Error("Model returned shared memory")
	}
	if (Model{}).APIKey() != "" {
		t.Error("a model without api_key_env has a key")
	}
	if _, err := c.Model("referee"); err == nil || !strings.Contains(err.Error(), "planner") {
		t.Errorf("Model(referee): %v", err)
	}
	if l, err := c.Lab(""); err != nil || l.ExecutorMode != ModeSingle {
		t.Errorf(`Lab("") = %+v, %v`, l, err)
	}
	if l, err := c.Lab("hierarchical"); err != nil || l.ExecutorMode != ModeHierarchical {
		t.Errorf("Lab(hierarchical) = %+v, %v", l, err)
	}
	_, err = c.Lab("nope")
	if err == nil || !strings.Contains(err.Error(), "default, hierarchical") {
		t.Errorf("Lab(nope): %v", err)
	}
	asConfigError(t, err)
	if got := c.APIKeyEnvs(); !slices.Equal(got, []string{"OPENROUTER_API_KEY"}) {
		t.Errorf("APIKeyEnvs = %v", got)
	}
}

func TestFingerprint(t *testing.T) {
	base := mustDefault(t)
	fp := Fingerprint(base)
	if len(fp) != 64 || Fingerprint(mustDefault(t)) != fp {
		t.Fatalf("fingerprint %q is not a stable sha256", fp)
	}
	tests := []struct {
		name    string
		mutate  func(c *Config)
		changes bool
	}{
		{"iterations (a run may be extended)", func(c *Config) { c.Experiment.Iterations++ }, false},
		{"seed", func(c *Config) { c.Experiment.Seed++ }, true},
		{"model", func(c *Config) { setModel(c, conditions.RolePlanner, func(m *Model) { m.Model = "x" }) }, true},
		{"lab", func(c *Config) { setLab(c, DefaultLab, func(l *Lab) { l.MaxModelCalls++ }) }, true},
		{"validation rule", func(c *Config) { c.Validation.Rule = RuleMargin }, true},
		{"agent timeout", func(c *Config) { c.ExecutorRuntime.AgentTimeout = Duration{time.Hour} }, true},
		{"concurrency", func(c *Config) { c.ExecutorRuntime.Concurrency = 8; c.ExecutorRuntime.MaxContainers = 16 }, false},
		{"budget", func(c *Config) { c.Budget.MaxUSD = 10 }, false},
		{"nil instead of empty list", func(c *Config) { c.Validation.Pool = nil }, false},
		{"docker host", func(c *Config) { c.ExecutorRuntime.DockerHost = "tcp://x:2375" }, false},
		{"key variable", func(c *Config) { setModel(c, conditions.RolePlanner, func(m *Model) { m.APIKeyEnv = "K" }) }, false},
		{"mediator transcript budget", func(c *Config) { c.Mediator.TranscriptChars = 100 }, true},
		{"launcher", func(c *Config) {
			c.Launcher = Launcher{Kind: LauncherSlurm, Partition: "p", Sbatch: []string{"--qos=x"}}
		}, false},
		{"max connections", func(c *Config) { setModel(c, conditions.RolePlanner, func(m *Model) { m.MaxConnections = 4 }) }, false},
		{"cached input price", func(c *Config) {
			setModel(c, conditions.RolePlanner, func(m *Model) { v := 0.3; m.PriceCachedInputPerMTok = &v })
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base.Clone()
			tc.mutate(c)
			if got := Fingerprint(c) != fp; got != tc.changes {
				t.Errorf("fingerprint changed = %v, want %v", got, tc.changes)
			}
		})
	}
}

// A run written before [mediator] existed reads back with no transcript
// budget, and its configuration encodes, and so fingerprints, as it did.
func TestConfigWithoutMediatorSection(t *testing.T) {
	c := mustDefault(t)
	var buf bytes.Buffer
	if err := WriteResolved(&buf, c, RunMeta{}); err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(buf.String(), "\n[mediator]\ntranscript_chars = 6000\nroute_items = 2\n", "", 1)
	if old == buf.String() {
		t.Fatalf("resolved file lacks the [mediator] section:\n%s", buf.String())
	}
	parsed, err := Parse([]byte(old), "old config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Mediator.TranscriptChars != 0 {
		t.Errorf("transcript_chars = %d, want 0 for a file without it", parsed.Mediator.TranscriptChars)
	}
	var again bytes.Buffer
	if err := WriteResolved(&again, parsed, RunMeta{}); err != nil {
		t.Fatal(err)
	}
	if again.String() != old {
		t.Errorf("a file without [mediator] is rewritten with it:\n%s", again.String())
	}
}

// A run written before verifier_feedback existed showed the models all the
// verifier printed: it reads back as diagnostics and keeps its fingerprint.
func TestConfigWithoutVerifierFeedback(t *testing.T) {
	c := mustDefault(t)
	if got := c.Experiment.Verifier(); got != conditions.VerifierTests {
		t.Fatalf("default verifier feedback %q, want tests", got)
	}
	var buf bytes.Buffer
	if err := WriteResolved(&buf, c, RunMeta{}); err != nil {
		t.Fatal(err)
	}
	old := strings.Replace(buf.String(), "verifier_feedback = \"tests\"\n", "", 1)
	if old == buf.String() {
		t.Fatalf("resolved file lacks verifier_feedback:\n%s", buf.String())
	}
	parsed, err := Parse([]byte(old), "old config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if got := parsed.Experiment.Verifier(); got != conditions.VerifierDiagnostics {
		t.Errorf("a file without verifier_feedback reads as %q, want diagnostics", got)
	}
	var again bytes.Buffer
	if err := WriteResolved(&again, parsed, RunMeta{}); err != nil {
		t.Fatal(err)
	}
	if again.String() != old {
		t.Errorf("a file without verifier_feedback is rewritten with it:\n%s", again.String())
	}
}

func TestLoadRefusesAnEmptyVerifierFeedback(t *testing.T) {
	tests := []struct {
		body    string
		wantErr string
	}{
		{"[experiment]\nverifier_feedback = \"\"\n", "verifier_feedback is empty"},
		{"[experiment]\nverifier_feedback = \"all\"\n", "must be one of outcome, tests, diagnostics"},
		{"[experiment]\nverifier_feedback = \"outcome\"\n", ""},
	}
	for _, tt := range tests {
		dir, _ := writeLayer(t, tt.body)
		c, err := Load(dir)
		if tt.wantErr == "" {
			if err != nil || c.Experiment.Verifier() != conditions.VerifierOutcome {
				t.Errorf("%q: %v", tt.body, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: error %v, want %q on line 2", tt.body, err, tt.wantErr)
		}
	}
}

func TestKeyLinesSkipsInsidesOfValues(t *testing.T) {
	doc := `# comment = 1
[experiment]
notes = """
fake = 1
"""
list = [
  "a = b",
  { inner = 2 },
]
'quoted.key' = 1
"dq" . x = 2
[[arr]]
y = 3
[ spaced . table ]  # c
z = 4
`
	got := keyLines([]byte(doc))
	want := map[string]int{
		"experiment": 2, "experiment.notes": 3, "experiment.list": 6, `experiment."quoted.key"`: 10,
		"experiment.dq": 11, "experiment.dq.x": 11, "arr": 12, "arr.y": 13,
		"spaced": 14, "spaced.table": 14, "spaced.table.z": 15,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keyLines = %v, want %v", got, want)
	}
}

func setModel(c *Config, role conditions.Role, f func(m *Model)) {
	m := c.Models[role]
	f(&m)
	c.Models[role] = m
}

func setLab(c *Config, name string, f func(l *Lab)) {
	l := c.Labs[name]
	f(&l)
	c.Labs[name] = l
}

func ptr[T any](v T) *T { return &v }

// writeAndParse writes c and meta with WriteResolved and reads them back.
func writeAndParse(t *testing.T, c *Config, meta RunMeta) (*Config, RunMeta, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteResolved(&buf, c, meta); err != nil {
		t.Fatal(err)
	}
	got, gotMeta, err := ParseResolved(buf.Bytes(), "config.toml")
	if err != nil {
		t.Fatalf("ParseResolved: %v\n%s", err, buf.String())
	}
	return got, gotMeta, &buf
}

// The launcher is left out of the fingerprint whole, so runs written before
// [launcher] existed keep theirs, and a configuration without the section
// reads back as the local launcher.
func TestLauncherOutsideFingerprint(t *testing.T) {
	c := mustDefault(t)
	if c.Launcher.Kind != LauncherLocal || c.Launcher.PollInterval.Duration <= 0 {
		t.Errorf("default launcher = %+v, want local with a poll interval", c.Launcher)
	}
	var buf bytes.Buffer
	if err := WriteResolved(&buf, c, RunMeta{}); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(buf.String(), "\n[launcher]\n")
	if i < 0 {
		t.Fatalf("resolved file lacks the [launcher] section:\n%s", buf.String())
	}
	// The section is the last one written; cut it as an older file lacks it.
	old := buf.String()[:i+1]
	parsed, err := Parse([]byte(old), "old config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Launcher.Kind != "" || Fingerprint(parsed) != Fingerprint(c) {
		t.Errorf("without [launcher]: kind %q, fingerprint equal %v; want empty and equal", parsed.Launcher.Kind, Fingerprint(parsed) == Fingerprint(c))
	}
}

// A configuration written before tournaments has neither [tournament] nor
// [models.judge]: it stays valid and reads as one candidate per batch.
func TestTournamentDefaultsOfAnOlderConfiguration(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Tournament; got.Candidates() != 1 || got.Top() != 1 || got.Active() || got.K() != 32 || got.Initial() != 1000 {
		t.Errorf("shipped [tournament] = %+v: want one candidate, K 32, initial 1000", got)
	}
	c.Tournament = Tournament{}
	delete(c.Models, conditions.RoleJudge)
	if issues := c.validate(); len(issues) != 0 {
		t.Errorf("a configuration without [tournament] and [models.judge] is refused: %v", issues)
	}
	if got := c.Tournament; got.Candidates() != 1 || got.Active() || got.K() != DefaultEloK || got.Initial() != DefaultEloInitial {
		t.Errorf("zero [tournament] reads as %d candidates (active %v), K %v, initial %v", got.Candidates(), got.Active(), got.K(), got.Initial())
	}
	c.Tournament = Tournament{NCandidates: 4, ValidateTop: 2}
	if got := c.Tournament; !got.Active() || got.Top() != 2 {
		t.Errorf("n_candidates 4, validate_top 2: active %v, top %d", got.Active(), got.Top())
	}
}
