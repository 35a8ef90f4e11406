// Package config holds the typed configuration of an experiment: its sections,
// the embedded defaults (default.toml), loading with strict key checks, range
// validation, and a writer for the resolved configuration that never holds a
// secret. Of this module it imports only conditions, for the role names.
package config

import (
	"slices"
	"time"

	"github.com/mediated-coevo/harness/conditions"
)

// Config is the whole resolved configuration of a run or matrix.
type Config struct {
	Experiment Experiment `toml:"experiment"`
	Validation Validation `toml:"validation"`
	Reflection Reflection `toml:"reflection"`
	// Tournament is left out of an encoding when zero, as in a run written
	// before the section existed, so such a run keeps its fingerprint; zero
	// reads as one candidate per batch, the behaviour before tournaments.
	Tournament Tournament `toml:"tournament,omitempty"`
	// Models are by model role, and by any other key a lab's student
	// names ([labs.<name>.students.<id>] model).
	Models          map[conditions.Role]Model `toml:"models"`
	Labs            map[string]Lab            `toml:"labs"`
	Budget          Budget                    `toml:"budget"`
	ExecutorRuntime ExecutorRuntime           `toml:"executor_runtime"`
	// Mediator is left out of an encoding when zero, as in a run written
	// before the section existed, so such a run keeps its fingerprint.
	Mediator Mediator `toml:"mediator,omitempty"`
	// Evaluation and Stats are left out of an encoding when zero, for the
	// same reason.
	Evaluation Evaluation `toml:"evaluation,omitempty"`
	Stats      Stats      `toml:"stats,omitempty"`
	// Network is [network], the settings of `harness network`; nil when no
	// file sets it, and then left out of an encoding, so other runs keep
	// their fingerprint (a struct holding lists is never "empty" to the
	// encoder).
	Network *Network `toml:"network,omitempty"`
	// Launcher says where a matrix's rows run. It never changes what a row
	// measures, so it is kept out of the fingerprint: it is not encoded with
	// the rest, and WriteResolved writes it as a table of its own, as [run].
	Launcher Launcher `toml:"-"`

	// Agents are the installed agents ([agents.<name>]), left out of an
	// encoding when none is configured so older runs keep their fingerprint.
	Agents map[string]Agent `toml:"agents,omitempty"`

	// warnings are what loading changed that the user did not write, such
	// as prices dropped with a switched model (see Warnings).
	warnings []string
}

// Warnings lists what loading the configuration changed without being
// asked to in so many words (prices dropped when a role switched model or
// endpoint): a command prints them, so nothing changes silently.
func (c *Config) Warnings() []string { return slices.Clone(c.warnings) }

// Launchers of a matrix ([launcher] kind).
const (
	LauncherLocal = "local"
	LauncherSlurm = "slurm"
)

// Launcher is [launcher]: how `harness matrix` runs its rows, in this
// process or as the elements of a Slurm job array (docs/scale.md).
type Launcher struct {
	Kind string `toml:"kind"`
	// Partition, TimeLimit, CPUs and Memory are sbatch's --partition,
	// --time, --cpus-per-task and --mem for every element; empty or 0
	// leaves them to the cluster.
	Partition string `toml:"partition"`
	TimeLimit string `toml:"time_limit"`
	CPUs      int    `toml:"cpus"`
	Memory    string `toml:"memory"`
	// Sbatch are further options, each written as one #SBATCH line.
	Sbatch []string `toml:"sbatch"`
	// Setup is shell run at the start of every element, before the harness.
	Setup string `toml:"setup"`
	// MaxRunning caps the elements running at once (sbatch --array=...%N);
	// 0 leaves it to the cluster.
	MaxRunning int `toml:"max_running"`
	// PollInterval is how often a waiting `harness matrix` asks the
	// scheduler and reads the row directories.
	PollInterval Duration `toml:"poll_interval"`
}

// Stats is [stats]: what the power statements of the dry run and of
// inspect --compare are held against. A run written before the section
// existed reads back zero; the statistics then use their defaults.
type Stats struct {
	// EffectOfInterest is the difference in mean reward worth detecting.
	EffectOfInterest float64 `toml:"effect_of_interest"`
	// TaskSD and SeedSD are planning guesses for the dry run: the standard
	// deviation of a row's effect across tasks, and of a seed's shift of it.
	TaskSD float64 `toml:"task_sd"`
	SeedSD float64 `toml:"seed_sd"`
}

// Evaluation is [evaluation]: how frozen skill checkpoints are scored on
// held-out tasks.
type Evaluation struct {
	// TrialsPerTask is the trials of each held-out task per checkpoint.
	TrialsPerTask int `toml:"trials_per_task"`
}

// Experiment is [experiment]: the shape of the co-evolution loop.
type Experiment struct {
	Iterations             int    `toml:"iterations"`
	Seed                   int64  `toml:"seed"`
	CoevoInterval          int    `toml:"coevo_interval"`
	AdvisorBufferMax       int    `toml:"advisor_buffer_max"`
	AllowCrossTaskFeedback bool   `toml:"allow_cross_task_feedback"`
	SharedNotes            string `toml:"shared_notes"`
	// SkillsDir is the skills tree a run starts from; empty means the shipped defaults.
	SkillsDir        string `toml:"skills_dir"`
	FullTracesWindow int    `toml:"full_traces_window"`
	RewardMode       string `toml:"reward_mode"` // verifier | binary | fraction
	// VerifierFeedback is how much of what the verifier reported may reach
	// any model (outcome | tests | diagnostics; see Verifier). Left out of
	// an encoding when empty, as in a run written before the setting
	// existed, so such a run keeps its fingerprint.
	VerifierFeedback string `toml:"verifier_feedback,omitempty"`
	// ReportMaxChars caps a Mediator report; PlannerContextMaxChars caps the
	// prior context handed to the Planner; TaskOutputMaxChars caps any task
	// output (command output, verifier output) before it reaches a prompt.
	ReportMaxChars         int `toml:"report_max_chars"`
	PlannerContextMaxChars int `toml:"planner_context_max_chars"`
	TaskOutputMaxChars     int `toml:"task_output_max_chars"`
	RecentRejectionsShown  int `toml:"recent_rejections_shown"`
	// Routing is how students' evidence reaches each other's own executor
	// skills (isolated | pooled | mediated; see conditions.Routing), the
	// value --routing defaults to. Empty, as in a run written before the
	// setting existed, is isolated.
	Routing string `toml:"routing,omitempty"`
}

// Mediator is [mediator]: what the Mediator is shown of a trial.
type Mediator struct {
	// TranscriptChars is the budget, in characters, of the condensed
	// Executor transcript in the Mediator's prompt; 0 shows none.
	TranscriptChars int `toml:"transcript_chars"`
	// RouteItems is the most items the Mediator may route to one student
	// per iteration under mediated routing; 0 (a run written before the
	// setting existed) means DefaultRouteItems.
	RouteItems int `toml:"route_items,omitempty"`
}

// DefaultRouteItems is the routing budget of a run that records none.
const DefaultRouteItems = 2

// RouteBudget is the most items routed to one student per iteration.
func (m Mediator) RouteBudget() int {
	if m.RouteItems <= 0 {
		return DefaultRouteItems
	}
	return m.RouteItems
}

// Validation is [validation]: the validate-before-apply gate for executor skills.
type Validation struct {
	Enabled       bool     `toml:"enabled"`
	Rule          string   `toml:"rule"` // no_regress | margin | posterior
	TrialsPerTask int      `toml:"trials_per_task"`
	MaxTrials     int      `toml:"max_trials_per_task"`
	Margin        float64  `toml:"margin"`
	Threshold     float64  `toml:"threshold"`
	Tolerance     float64  `toml:"tolerance"`
	EarlyStop     bool     `toml:"early_stop"`
	RequireUsable bool     `toml:"require_all_usable"`
	Pool          []string `toml:"pool"`
	PoolSize      int      `toml:"pool_size"`
	MinTagOverlap int      `toml:"min_tag_overlap"`
}

// Reflection is [reflection]: contrastive-pair reflection of meta-skills.
type Reflection struct {
	MaxPairs        int     `toml:"max_pairs"`
	BucketFraction  float64 `toml:"bucket_fraction"`
	MinRewardGap    float64 `toml:"min_reward_gap"`
	MinChangedWords int     `toml:"min_changed_words"`
}

// Tournament is [tournament]: how many executor-skill candidates an
// approved batch yields, how they are ranked before the gate, and how often
// the Reflector summarises the critiques for the Planner.
type Tournament struct {
	// NCandidates is how many candidates the Planner drafts from an
	// approved batch, each with an operator; 1 (or 0) drafts one, as before
	// tournaments, and calls no judge.
	NCandidates int `toml:"n_candidates"`
	// ValidateTop is how many of the best-rated candidates go to the gate.
	ValidateTop int `toml:"validate_top"`
	// MetaReviewInterval is how many iterations apart the Reflector
	// summarises recurring critiques into a note for the Planner; 0 never.
	MetaReviewInterval int `toml:"meta_review_interval"`
	// EloK is the Elo K factor: the most a rating moves in one comparison.
	EloK float64 `toml:"elo_k"`
	// EloInitial is a new candidate's rating.
	EloInitial float64 `toml:"elo_initial"`
}

// Candidates is how many candidates an approved batch yields (at least 1).
func (t Tournament) Candidates() int { return max(1, t.NCandidates) }

// Active reports whether batches run a tournament: more than one candidate.
func (t Tournament) Active() bool { return t.Candidates() > 1 }

// Top is how many candidates are validated (at least 1, at most Candidates).
func (t Tournament) Top() int { return min(max(1, t.ValidateTop), t.Candidates()) }

// The Elo settings a zero [tournament] table stands for.
const (
	DefaultEloK       = 32.0
	DefaultEloInitial = 1000.0
)

// K is the Elo K factor, DefaultEloK when unset.
func (t Tournament) K() float64 {
	if t.EloK == 0 {
		return DefaultEloK
	}
	return t.EloK
}

// Initial is a new candidate's Elo rating, DefaultEloInitial when unset.
func (t Tournament) Initial() float64 {
	if t.EloInitial == 0 {
		return DefaultEloInitial
	}
	return t.EloInitial
}

// Model is [models.<key>]: one model endpoint, for the role of that name
// or, under any other key, for the students that name it.
type Model struct {
	Provider    string   `toml:"provider"` // openai | offline
	BaseURL     string   `toml:"base_url"`
	Model       string   `toml:"model"`
	APIKeyEnv   string   `toml:"api_key_env"`
	Temperature *float64 `toml:"temperature"`
	TopP        *float64 `toml:"top_p"`
	Seed        *int64   `toml:"seed"`
	MaxTokens   int      `toml:"max_tokens"`
	// ContextTokens is the model's context window, used for compaction.
	ContextTokens int      `toml:"context_tokens"`
	Timeout       Duration `toml:"timeout"`
	MaxRetries    int      `toml:"max_retries"`
	// Prices in USD per million tokens; nil means unknown.
	PriceInputPerMTok  *float64 `toml:"price_input_per_mtok"`
	PriceOutputPerMTok *float64 `toml:"price_output_per_mtok"`
	// PriceCachedInputPerMTok is the price of input tokens the endpoint
	// reports as read from its prompt cache; nil prices them as fresh input.
	PriceCachedInputPerMTok *float64 `toml:"price_cached_input_per_mtok,omitempty"`
	// MaxConnections caps the calls in flight at once to this model at this
	// endpoint, across every role and row sharing it; 0 means no cap.
	MaxConnections int `toml:"max_connections,omitzero"`
	// OfflineDiligence is this model's behaviour profile under the offline
	// provider: the share of trials its offline Executor writes the task's
	// outputs without advice that tells it to. nil means the player's
	// default (0.35). Left out of an encoding when nil, so a run recorded
	// before the key existed keeps its fingerprint.
	OfflineDiligence *float64 `toml:"offline_diligence,omitempty"`
}

// Network is [network]: a network experiment of several labs exchanging
// knowledge (harness network). Its command-line flags replace these.
type Network struct {
	// Labs names the [labs.<name>] tables that take part.
	Labs []string `toml:"labs,omitempty"`
	// Topology is isolated, ring, star, full, or an edge list such as
	// "a->b,b->c" (who may send to whom).
	Topology string `toml:"topology,omitempty"`
	// Diffusion lists the treatments: none, broadcast, mediated.
	Diffusion []string `toml:"diffusion,omitempty"`
	// DiffusionInterval is how many iterations lie between exchanges.
	DiffusionInterval int `toml:"diffusion_interval,omitempty"`
	// TokenBudget caps what a mediated item carries, in tokens.
	TokenBudget int `toml:"token_budget,omitempty"`
	// StabilityBound is the largest seed-to-seed spread (standard deviation
	// of the seeds' mean rewards) a baseline may show for a network to run.
	StabilityBound float64 `toml:"stability_bound,omitempty"`
}

// Lab is [labs.<name>]: the Executor side of a lab.
type Lab struct {
	// Students is a count of alike students or the lab's student tables
	// ([labs.<name>.students.<id>]); see Students.
	Students     Students `toml:"students"`
	ExecutorMode string   `toml:"executor_mode"` // single | hierarchical
	// Assignment says which student meets which task in which iteration
	// (AssignRotate, AssignAll). Left out of an encoding when empty, as in
	// a lab recorded before the key existed, so such a run keeps its
	// fingerprint; empty means rotate.
	Assignment string `toml:"assignment,omitempty"`
	// MaxModelCalls caps the model calls of one agent run (K).
	MaxModelCalls int `toml:"max_model_calls"`
	// ConcludeMargin: this many calls before the cap the agent is told to conclude.
	ConcludeMargin   int      `toml:"conclude_margin"`
	SubagentMaxCalls int      `toml:"subagent_max_calls"`
	ExploreQuota     int      `toml:"explore_quota"`
	PlanQuota        int      `toml:"plan_quota"`
	CodeQuota        int      `toml:"code_quota"`
	CommandTimeout   Duration `toml:"command_timeout"`
	OutputCapBytes   int      `toml:"output_cap_bytes"`
	TaskSkillDirs    []string `toml:"task_skill_dirs"`

	// SkillsDir, when set, is the lab's own skills tree, copied into each
	// of its runs in place of [experiment] skills_dir.
	SkillsDir string `toml:"skills_dir,omitempty"`

	// Agent names an [agents.<name>] table that does the lab's trials in
	// place of its own Executor; empty: the lab's Executor.
	Agent string `toml:"agent,omitempty"`
}

// Budget is [budget]: limits that stop a run or matrix cleanly.
type Budget struct {
	MaxTokens int64    `toml:"max_tokens"` // 0 = unlimited
	MaxUSD    float64  `toml:"max_usd"`    // 0 = unlimited
	WallClock Duration `toml:"wall_clock"` // 0 = unlimited
	// ChargeFailed says what a model call's failed attempts are charged:
	// ChargeSent, an estimate of every attempt the endpoint received, or
	// ChargeReported, only the usage an endpoint reported. Empty (a
	// configuration recorded before the key existed) means ChargeSent;
	// omitempty keeps the fingerprint, which encodes an empty [budget], as
	// it was before the key existed.
	ChargeFailed string `toml:"charge_failed,omitempty"`
}

// Values of [budget] charge_failed.
const (
	ChargeSent     = "sent"
	ChargeReported = "reported"
)

// ExecutorRuntime is [executor_runtime]: sandboxes and the task cache.
type ExecutorRuntime struct {
	DockerHost      string   `toml:"docker_host"` // empty: from the environment
	Concurrency     int      `toml:"concurrency"`
	MaxContainers   int      `toml:"max_containers"`
	BuildTimeout    Duration `toml:"build_timeout"`
	AgentTimeout    Duration `toml:"agent_timeout"`    // used when a task sets none
	VerifierTimeout Duration `toml:"verifier_timeout"` // used when a task sets none
	CPUs            float64  `toml:"cpus"`
	MemoryMB        int64    `toml:"memory_mb"`
	PidsLimit       int64    `toml:"pids_limit"`
	Network         string   `toml:"network"` // task | none: "none" disables network even where a task allows it
	KeepContainers  bool     `toml:"keep_containers"`
	// KeepAgentProcesses leaves the agent's processes running for the
	// verifier, for tasks whose tests check a service the agent started.
	KeepAgentProcesses bool     `toml:"keep_agent_processes"`
	ArchiveURL         string   `toml:"archive_url"`
	ArchiveSHA256      string   `toml:"archive_sha256"`
	RemoteFetch        bool     `toml:"remote_fetch"`
	TaskCacheDir       string   `toml:"task_cache_dir"`
	TaskDirs           []string `toml:"task_dirs"`

	// Backend selects the sandbox backend (BackendDocker, the default
	// when empty). omitempty keeps the fingerprint of runs recorded before
	// the key existed.
	Backend string `toml:"backend,omitempty"`
	// DockerHosts, when set, spreads a run's trials over several engines
	// instead of the one docker_host names.
	DockerHosts []DockerHost `toml:"docker_hosts,omitempty"`
}

// Sandbox backends of [executor_runtime] backend.
const BackendDocker = "docker"

// DockerHost is one engine of [[executor_runtime.docker_hosts]].
type DockerHost struct {
	// Host is the engine's address as the Docker client takes it:
	// unix:///path, tcp://host:port or ssh://[user@]host.
	Host string `toml:"host"`
	// Capacity is how many trials run on the engine at once.
	Capacity int `toml:"capacity"`
}

// Duration is a time.Duration written in TOML as a string such as "90s".
type Duration struct{ time.Duration }

// UnmarshalText reads a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalText writes a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// RoutingOr is the experiment's routing, isolated when none is recorded.
func (e Experiment) RoutingOr() conditions.Routing { return conditions.Routing(e.Routing).Or() }

// Verifier is the verifier feedback level of the experiment. A run written
// before the setting existed has none recorded and showed the models
// everything the verifier printed, which is what diagnostics means.
func (e Experiment) Verifier() conditions.VerifierFeedback {
	if e.VerifierFeedback == "" {
		return conditions.VerifierDiagnostics
	}
	return conditions.VerifierFeedback(e.VerifierFeedback)
}
