package config

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mediated-coevo/harness/conditions"
)

// Allowed values of the enumerated keys.
const (
	RewardVerifier = "verifier" // [experiment] reward_mode
	RewardBinary   = "binary"
	RewardFraction = "fraction"

	RuleNoRegress = "no_regress" // [validation] rule
	RuleMargin    = "margin"
	RulePosterior = "posterior"

	ProviderOpenAI  = "openai" // [models.<role>] provider
	ProviderOffline = "offline"

	ModeSingle       = "single" // [labs.<name>] executor_mode
	ModeHierarchical = "hierarchical"

	NetworkTask = "task" // [executor_runtime] network
	NetworkNone = "none"
)

var (
	rewardModes     = []string{RewardVerifier, RewardBinary, RewardFraction}
	validationRules = []string{RuleNoRegress, RuleMargin, RulePosterior}
	providers       = []string{ProviderOpenAI, ProviderOffline}
	executorModes   = []string{ModeSingle, ModeHierarchical}
	networkPolicies = []string{NetworkTask, NetworkNone}
	sandboxBackends = []string{BackendDocker}
	// dockerHostSchemes are the addresses the engine client can reach.
	dockerHostSchemes = []string{"unix", "tcp", "ssh"}
)

var (
	labNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	sha256RE  = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
)

// Validate checks ranges and allowed values of every key and returns every
// problem found (joined), each an *Error naming its key.
func (c *Config) Validate() error {
	issues := c.validate()
	out := make([]error, len(issues))
	for i, is := range issues {
		out[i] = is.err()
	}
	return joinErrors(out)
}

// issue is one validation problem; key keeps the parts so a line can be
// found even for lab names that need quoting.
type issue struct {
	key toml.Key
	msg string
}

func (is issue) err() *Error {
	k := is.key.String()
	return &Error{Key: k, Msg: k + " " + is.msg}
}

type checker struct{ issues []issue }

func (c *checker) add(k toml.Key, format string, args ...any) {
	c.issues = append(c.issues, issue{key: slices.Clone(k), msg: fmt.Sprintf(format, args...)})
}

func (c *checker) atLeast(k toml.Key, v, lo int64) {
	if v < lo {
		c.add(k, "must be at least %d (got %d)", lo, v)
	}
}

func routings() []string {
	var out []string
	for _, r := range conditions.Routings() {
		out = append(out, string(r))
	}
	return out
}

func verifierLevels() []string {
	var out []string
	for _, v := range conditions.VerifierLevels() {
		out = append(out, string(v))
	}
	return out
}

func (c *checker) oneOf(k toml.Key, v string, allowed []string) {
	if !slices.Contains(allowed, v) {
		c.add(k, "must be one of %s (got %q)", strings.Join(allowed, ", "), v)
	}
}

func (c *checker) positive(k toml.Key, d Duration) {
	if d.Duration <= 0 {
		c.add(k, "must be a positive duration such as \"90s\" (got %q)", d.Duration.String())
	}
}

func (c *checker) notNegative(k toml.Key, v float64) {
	if v < 0 {
		c.add(k, "must not be negative (got %v)", v)
	}
}

func key(parts ...string) toml.Key { return toml.Key(parts) }

func (c *Config) validate() []issue {
	var ck checker
	c.validateExperiment(&ck)
	c.validateValidation(&ck)
	c.validateReflection(&ck)
	c.validateTournament(&ck)
	c.validateModels(&ck)
	c.validateLabs(&ck)
	c.validateAgents(&ck)
	c.validateBudget(&ck)
	c.validateRuntime(&ck)
	c.validateLauncher(&ck)
	ck.atLeast(key("mediator", "transcript_chars"), int64(c.Mediator.TranscriptChars), 0)
	ck.atLeast(key("mediator", "route_items"), int64(c.Mediator.RouteItems), 0)
	ck.atLeast(key("evaluation", "trials_per_task"), int64(c.Evaluation.TrialsPerTask), 0)
	if e := c.Stats.EffectOfInterest; e < 0 || e > 1 || math.IsNaN(e) {
		ck.add(key("stats", "effect_of_interest"), "must be a difference in mean reward in (0, 1] (got %v)", e)
	}
	for _, k := range []struct {
		name string
		v    float64
	}{{"task_sd", c.Stats.TaskSD}, {"seed_sd", c.Stats.SeedSD}} {
		if k.v < 0 || k.v > 1 || math.IsNaN(k.v) {
			ck.add(key("stats", k.name), "must be a standard deviation of mean reward in [0, 1] (got %v)", k.v)
		}
	}
	return ck.issues
}

func (c *Config) validateExperiment(ck *checker) {
	e := c.Experiment
	k := func(name string) toml.Key { return key("experiment", name) }
	ck.atLeast(k("iterations"), int64(e.Iterations), 1)
	ck.atLeast(k("coevo_interval"), int64(e.CoevoInterval), 1)
	ck.atLeast(k("advisor_buffer_max"), int64(e.AdvisorBufferMax), 1)
	ck.atLeast(k("full_traces_window"), int64(e.FullTracesWindow), 1)
	ck.oneOf(k("reward_mode"), e.RewardMode, rewardModes)
	// Empty is how a run written before the setting reads back (see
	// Experiment.Verifier); Load refuses it in a configuration layer.
	if e.VerifierFeedback != "" {
		ck.oneOf(k("verifier_feedback"), e.VerifierFeedback, verifierLevels())
	}
	if e.Routing != "" {
		ck.oneOf(k("routing"), e.Routing, routings())
	}
	ck.atLeast(k("report_max_chars"), int64(e.ReportMaxChars), 1)
	ck.atLeast(k("planner_context_max_chars"), int64(e.PlannerContextMaxChars), 1)
	ck.atLeast(k("task_output_max_chars"), int64(e.TaskOutputMaxChars), 1)
	ck.atLeast(k("recent_rejections_shown"), int64(e.RecentRejectionsShown), 0)
}

func (c *Config) validateValidation(ck *checker) {
	v := c.Validation
	k := func(name string) toml.Key { return key("validation", name) }
	ck.oneOf(k("rule"), v.Rule, validationRules)
	ck.atLeast(k("trials_per_task"), int64(v.TrialsPerTask), 1)
	if v.MaxTrials < v.TrialsPerTask {
		ck.add(k("max_trials_per_task"), "must be at least trials_per_task (%d), got %d", v.TrialsPerTask, v.MaxTrials)
	}
	if v.Margin < 0 || v.Margin >= 1 {
		ck.add(k("margin"), "must be in [0, 1) (got %v)", v.Margin)
	}
	if v.Threshold <= 0 || v.Threshold >= 1 {
		ck.add(k("threshold"), "must be strictly between 0 and 1 (got %v)", v.Threshold)
	}
	if v.Tolerance < 0 || v.Tolerance >= 1 {
		ck.add(k("tolerance"), "must be in [0, 1) (got %v)", v.Tolerance)
	}
	ck.atLeast(k("pool_size"), int64(v.PoolSize), 1)
	ck.atLeast(k("min_tag_overlap"), int64(v.MinTagOverlap), 0)
	seen := map[string]bool{}
	for i, id := range v.Pool {
		switch {
		case strings.TrimSpace(id) == "":
			ck.add(k("pool"), "item %d is empty", i+1)
		case seen[id]:
			ck.add(k("pool"), "lists task %q twice", id)
		}
		seen[id] = true
	}
}

func (c *Config) validateReflection(ck *checker) {
	r := c.Reflection
	k := func(name string) toml.Key { return key("reflection", name) }
	ck.atLeast(k("max_pairs"), int64(r.MaxPairs), 1)
	if r.BucketFraction <= 0 || r.BucketFraction > 1 {
		ck.add(k("bucket_fraction"), "must be in (0, 1] (got %v)", r.BucketFraction)
	}
	if r.MinRewardGap < 0 || r.MinRewardGap > 1 {
		ck.add(k("min_reward_gap"), "must be in [0, 1] (got %v)", r.MinRewardGap)
	}
	ck.atLeast(k("min_changed_words"), int64(r.MinChangedWords), 0)
}

func (c *Config) validateTournament(ck *checker) {
	t := c.Tournament
	k := func(name string) toml.Key { return key("tournament", name) }
	ck.atLeast(k("n_candidates"), int64(t.NCandidates), 0)
	ck.atLeast(k("validate_top"), int64(t.ValidateTop), 0)
	ck.atLeast(k("meta_review_interval"), int64(t.MetaReviewInterval), 0)
	if t.ValidateTop > t.Candidates() {
		ck.add(k("validate_top"), "must not exceed n_candidates (%d; got %d): only drafted candidates can be validated", t.Candidates(), t.ValidateTop)
	}
	if t.EloK < 0 || math.IsNaN(t.EloK) || math.IsInf(t.EloK, 0) {
		ck.add(k("elo_k"), "must be a positive K factor such as 32 (got %v)", t.EloK)
	}
	if t.EloInitial < 0 || math.IsNaN(t.EloInitial) || math.IsInf(t.EloInitial, 0) {
		ck.add(k("elo_initial"), "must be a positive rating such as 1000 (got %v)", t.EloInitial)
	}
}

func (c *Config) validateModels(ck *checker) {
	named := c.studentModels()
	for _, role := range sortedKeys(c.Models) {
		switch {
		case role.IsModel():
		case slices.Contains(named, string(role)):
			validateModel(ck, role, c.Models[role])
		default:
			roles := conditions.RoleNames(conditions.ModelRoles())
			hint := ""
			switch s := suggest(string(role), roles); {
			case s != "" && strings.EqualFold(s, string(role)):
				hint = fmt.Sprintf(" (keys are lower case: did you mean %q?)", s)
			case s != "":
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			ck.add(key("models", string(role)), "is neither a model role (roles: %s) nor a model a lab's student names ([labs.<name>.students.<id>] model = %q)%s; fix the name or name it from a student",
				strings.Join(roles, ", "), role, hint)
		}
	}
	for _, role := range conditions.ModelRoles() {
		m, ok := c.Models[role]
		if !ok && role == conditions.RoleJudge && !c.Tournament.Active() {
			// The judge is called only in a tournament; a run written
			// before the role existed has no table for it.
			continue
		}
		if !ok {
			if role == conditions.RoleJudge {
				ck.add(key("models", string(role)), "is missing: [tournament] n_candidates = %d needs a judge; add a [models.judge] table", c.Tournament.NCandidates)
				continue
			}
			ck.add(key("models", string(role)), "is missing: every role needs a [models.%s] table", role)
			continue
		}
		validateModel(ck, role, m)
	}
}

func validateModel(ck *checker, role conditions.Role, m Model) {
	k := func(name string) toml.Key { return key("models", string(role), name) }
	ck.oneOf(k("provider"), m.Provider, providers)
	if m.APIKeyEnv != "" && !envNameRE.MatchString(m.APIKeyEnv) {
		// Most likely a key pasted where its variable's name belongs; do not
		// echo it.
		ck.add(k("api_key_env"), "must be the NAME of an environment variable (letters, digits, _), not the key itself")
	}
	if m.Provider == ProviderOpenAI {
		if strings.TrimSpace(m.Model) == "" {
			ck.add(k("model"), "must be set for provider %q", m.Provider)
		}
		if u, err := url.Parse(m.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			ck.add(k("base_url"), "must be an http(s) URL such as \"https://openrouter.ai/api/v1\" (got %q)", m.BaseURL)
		}
	}
	if m.Temperature != nil && (*m.Temperature < 0 || *m.Temperature > 2) {
		ck.add(k("temperature"), "must be in [0, 2] (got %v)", *m.Temperature)
	}
	if m.TopP != nil && (*m.TopP <= 0 || *m.TopP > 1) {
		ck.add(k("top_p"), "must be in (0, 1] (got %v)", *m.TopP)
	}
	ck.atLeast(k("max_tokens"), int64(m.MaxTokens), 1)
	ck.atLeast(k("context_tokens"), int64(m.ContextTokens), 1)
	if m.MaxTokens >= 1 && m.ContextTokens >= 1 && m.MaxTokens >= m.ContextTokens {
		ck.add(k("max_tokens"), "(%d) must be smaller than context_tokens (%d)", m.MaxTokens, m.ContextTokens)
	}
	ck.positive(k("timeout"), m.Timeout)
	ck.atLeast(k("max_retries"), int64(m.MaxRetries), 0)
	if m.PriceInputPerMTok != nil {
		ck.notNegative(k("price_input_per_mtok"), *m.PriceInputPerMTok)
	}
	if m.PriceOutputPerMTok != nil {
		ck.notNegative(k("price_output_per_mtok"), *m.PriceOutputPerMTok)
	}
	if m.PriceCachedInputPerMTok != nil {
		ck.notNegative(k("price_cached_input_per_mtok"), *m.PriceCachedInputPerMTok)
	}
	ck.atLeast(k("max_connections"), int64(m.MaxConnections), 0)
	if d := m.OfflineDiligence; d != nil && (*d < 0 || *d > 1 || math.IsNaN(*d)) {
		ck.add(k("offline_diligence"), "must be a share in [0, 1] (got %v)", *d)
	}
}

func (c *Config) validateLabs(ck *checker) {
	if _, ok := c.Labs[DefaultLab]; !ok {
		ck.add(key("labs", DefaultLab), "is missing: it is the lab used when --lab is not given")
	}
	for _, name := range sortedKeys(c.Labs) {
		l := c.Labs[name]
		k := func(field string) toml.Key { return key("labs", name, field) }
		if !labNameRE.MatchString(name) {
			ck.add(key("labs", name), "has an invalid name: use letters, digits, '-' and '_'")
		}
		c.validateStudents(ck, name, l)
		ck.oneOf(k("executor_mode"), l.ExecutorMode, executorModes)
		ck.atLeast(k("max_model_calls"), int64(l.MaxModelCalls), 1)
		if l.ConcludeMargin < 0 || (l.MaxModelCalls >= 1 && l.ConcludeMargin >= l.MaxModelCalls) {
			ck.add(k("conclude_margin"), "must be at least 0 and smaller than max_model_calls (%d), got %d", l.MaxModelCalls, l.ConcludeMargin)
		}
		ck.atLeast(k("subagent_max_calls"), int64(l.SubagentMaxCalls), 1)
		ck.atLeast(k("explore_quota"), int64(l.ExploreQuota), 0)
		ck.atLeast(k("plan_quota"), int64(l.PlanQuota), 0)
		if l.ExecutorMode == ModeHierarchical {
			// Without code dispatches nothing could change in the container.
			ck.atLeast(k("code_quota"), int64(l.CodeQuota), 1)
		} else {
			ck.atLeast(k("code_quota"), int64(l.CodeQuota), 0)
		}
		ck.positive(k("command_timeout"), l.CommandTimeout)
		ck.atLeast(k("output_cap_bytes"), int64(l.OutputCapBytes), 1)
		for i, d := range l.TaskSkillDirs {
			if !strings.HasPrefix(d, "/") {
				ck.add(k("task_skill_dirs"), "item %d must be an absolute path inside the task image (got %q)", i+1, d)
			}
		}
	}
}

func (c *Config) validateBudget(ck *checker) {
	b := c.Budget
	ck.atLeast(key("budget", "max_tokens"), b.MaxTokens, 0)
	ck.notNegative(key("budget", "max_usd"), b.MaxUSD)
	// Empty is a configuration recorded before the key existed: "sent".
	if b.ChargeFailed != "" {
		ck.oneOf(key("budget", "charge_failed"), b.ChargeFailed, []string{ChargeSent, ChargeReported})
	}
	if b.WallClock.Duration < 0 {
		ck.add(key("budget", "wall_clock"), "must not be negative (got %q; \"0s\" means unlimited)", b.WallClock.Duration.String())
	}
}

func (c *Config) validateRuntime(ck *checker) {
	r := c.ExecutorRuntime
	k := func(name string) toml.Key { return key("executor_runtime", name) }
	ck.atLeast(k("concurrency"), int64(r.Concurrency), 1)
	ck.atLeast(k("max_containers"), int64(r.MaxContainers), 1)
	if r.MaxContainers >= 1 && r.MaxContainers < r.Concurrency {
		ck.add(k("max_containers"), "(%d) must be at least concurrency (%d): every running trial needs a container", r.MaxContainers, r.Concurrency)
	}
	ck.positive(k("build_timeout"), r.BuildTimeout)
	ck.positive(k("agent_timeout"), r.AgentTimeout)
	ck.positive(k("verifier_timeout"), r.VerifierTimeout)
	if r.CPUs <= 0 {
		ck.add(k("cpus"), "must be positive (got %v)", r.CPUs)
	}
	ck.atLeast(k("memory_mb"), r.MemoryMB, 64)
	ck.atLeast(k("pids_limit"), r.PidsLimit, 1)
	ck.oneOf(k("network"), r.Network, networkPolicies)
	if r.ArchiveURL != "" {
		// No "://" means a local path, which the task resolver reads as one.
		if u, err := url.Parse(r.ArchiveURL); strings.Contains(r.ArchiveURL, "://") && (err != nil || !slices.Contains([]string{"http", "https", "file"}, u.Scheme)) {
			ck.add(k("archive_url"), "must be an http(s) URL, a file:// URL or a local path (got %q)", r.ArchiveURL)
		}
		if r.ArchiveSHA256 == "" {
			ck.add(k("archive_sha256"), "must be set when archive_url is: a URL alone does not pin the tasks")
		}
	}
	if r.ArchiveSHA256 != "" && !sha256RE.MatchString(r.ArchiveSHA256) {
		ck.add(k("archive_sha256"), "must be 64 hexadecimal digits (got %q)", r.ArchiveSHA256)
	}
	for i, d := range r.TaskDirs {
		if strings.TrimSpace(d) == "" {
			ck.add(k("task_dirs"), "item %d is empty", i+1)
		}
	}
	if r.Backend != "" {
		ck.oneOf(k("backend"), r.Backend, sandboxBackends)
	}
	validateDockerHosts(ck, r)
}

// validateDockerHosts checks [[executor_runtime.docker_hosts]]: each
// engine an address the Docker client takes, named once, with room for a
// trial; and no docker_host beside them, which would leave unclear where
// trials run.
func validateDockerHosts(ck *checker, r ExecutorRuntime) {
	k := key("executor_runtime", "docker_hosts")
	if len(r.DockerHosts) > 0 && r.DockerHost != "" {
		ck.add(k, "and docker_host are both set: list every engine in docker_hosts (docker_host %q included) and set docker_host = \"\"", r.DockerHost)
	}
	seen := map[string]int{}
	for i, h := range r.DockerHosts {
		scheme, rest, ok := strings.Cut(h.Host, "://")
		switch {
		case strings.TrimSpace(h.Host) == "":
			ck.add(k, "item %d has no host: give the engine's address, such as \"unix:///var/run/docker.sock\", \"tcp://node1:2376\" or \"ssh://user@node1\"", i+1)
		case !ok || rest == "" || !slices.Contains(dockerHostSchemes, scheme):
			ck.add(k, "item %d: host %q is not an engine address: write unix:///path/to/docker.sock, tcp://host:port or ssh://[user@]host", i+1, h.Host)
		}
		if j, dup := seen[h.Host]; dup && h.Host != "" {
			ck.add(k, "item %d repeats the host of item %d (%q): list each engine once and give it the capacity of both", i+1, j, h.Host)
		} else {
			seen[h.Host] = i + 1
		}
		if h.Capacity < 1 {
			ck.add(k, "item %d (%s): capacity must be at least 1 (got %d): it is how many trials run on that engine at once", i+1, h.Host, h.Capacity)
		}
	}
}

var (
	// slurmTimeRE is sbatch --time: minutes, MM:SS, HH:MM:SS, D-HH,
	// D-HH:MM or D-HH:MM:SS.
	slurmTimeRE = regexp.MustCompile(`^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}|UNLIMITED|INFINITE)$`)
	// slurmMemRE is sbatch --mem: a number with an optional unit.
	slurmMemRE = regexp.MustCompile(`^\d+[KMGT]?$`)
)

func (c *Config) validateLauncher(ck *checker) {
	l := c.Launcher
	if l.Kind != "" { // a run written before [launcher] existed reads back ""
		ck.oneOf(key("launcher", "kind"), l.Kind, []string{LauncherLocal, LauncherSlurm})
	}
	if l.TimeLimit != "" && !slurmTimeRE.MatchString(l.TimeLimit) {
		ck.add(key("launcher", "time_limit"), "must be a Slurm time limit such as \"90\" (minutes), \"4:00:00\" or \"1-12:00:00\" (got %q)", l.TimeLimit)
	}
	ck.atLeast(key("launcher", "cpus"), int64(l.CPUs), 0)
	ck.atLeast(key("launcher", "max_running"), int64(l.MaxRunning), 0)
	if l.Memory != "" && !slurmMemRE.MatchString(l.Memory) {
		ck.add(key("launcher", "memory"), "must be a Slurm memory size such as \"8G\" or \"16000M\" (got %q)", l.Memory)
	}
	if strings.ContainsAny(l.Partition, " \t\n#") {
		ck.add(key("launcher", "partition"), "must be one partition name, without spaces (got %q)", l.Partition)
	}
	for i, line := range l.Sbatch {
		if !strings.HasPrefix(line, "-") || strings.ContainsAny(line, "\n\r") {
			ck.add(key("launcher", "sbatch"), "entry %d must be one sbatch option such as \"--account=lab\", without the #SBATCH prefix (got %q)", i+1, line)
		}
	}
	if l.PollInterval.Duration < 0 {
		ck.add(key("launcher", "poll_interval"), "must be a positive duration such as \"5s\" (got %q)", l.PollInterval.Duration.String())
	}
}
