package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/conditions"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/harness"
	"github.com/mediated-coevo/harness/harness/rundir"
)

// result is one command line's outcome.
type result struct {
	code        int
	out, errOut string
}

// runCLI executes args against a fresh command tree with captured streams.
func runCLI(t *testing.T, f *Factory, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	if f == nil {
		f = testFactory()
	}
	f.IO = IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := Run(context.Background(), f, args)
	return result{code, out.String(), errOut.String()}
}

// listing describes a tree (paths, modes, sizes and content hashes) so two
// listings are equal only if nothing changed.
func listing(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&b, "%s %v %d", rel, info.Mode(), info.Size())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			fmt.Fprintf(&b, " %s", hex.EncodeToString(sum[:]))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// prepopulated returns an output directory holding one file.
func prepopulated(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("earlier results"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRunRefusesEachDesignRuleAndTouchesNothing(t *testing.T) {
	tests := []struct {
		condition, updates string
		rule               conditions.Rule
	}{
		{"no_feedback", "planner", conditions.RuleNoFeedbackNoUpdates},
		{"full_traces", "mediator", conditions.RuleMediatorNeedsLearned},
		{"shared_notes", "executor", conditions.RuleSharedNotesNoExecutor},
		{"static_mediator", "mediator", conditions.RuleStaticMediatorNeverEvolve},
	}
	for _, tt := range tests {
		t.Run(string(tt.rule), func(t *testing.T) {
			out := prepopulated(t)
			cwd := t.TempDir()
			t.Chdir(cwd)
			before, beforeCwd := listing(t, out), listing(t, cwd)
			r := runCLI(t, nil, "run", "--tasks", "t1", "--condition", tt.condition, "--skill-updates", tt.updates, "--out", out)
			if r.code != ExitUsage {
				t.Errorf("exit code = %d, want %d (stderr %q)", r.code, ExitUsage, r.errOut)
			}
			if !strings.Contains(r.errOut, string(tt.rule)) {
				t.Errorf("stderr %q does not name the rule %q", r.errOut, tt.rule)
			}
			if after := listing(t, out); after != before {
				t.Errorf("--out changed:\nbefore:\n%safter:\n%s", before, after)
			}
			if after := listing(t, cwd); after != beforeCwd {
				t.Errorf("working directory changed:\n%s", after)
			}
		})
	}
}

func TestMatrixFileWithBadRowTouchesNothing(t *testing.T) {
	out := prepopulated(t)
	mf := filepath.Join(t.TempDir(), "ablation.toml")
	text := `name = "ablation"
[[rows]]
preset = "full_coevolution"
[[rows]]
name = "broken"
condition = "shared_notes"
skill_updates = "executor,planner"
`
	if err := os.WriteFile(mf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	before := listing(t, out)
	r := runCLI(t, nil, "matrix", "--tasks", "t1", "--matrix", mf, "--out", out)
	if r.code != ExitUsage {
		t.Errorf("exit code = %d, want 2 (stderr %q)", r.code, r.errOut)
	}
	for _, want := range []string{`"broken"`, string(conditions.RuleSharedNotesNoExecutor), mf} {
		if !strings.Contains(r.errOut, want) {
			t.Errorf("stderr %q does not mention %s", r.errOut, want)
		}
	}
	if after := listing(t, out); after != before {
		t.Errorf("--out changed:\n%s", after)
	}
}

func TestMatrixDryRunShowsBaselineRows(t *testing.T) {
	out := filepath.Join(t.TempDir(), "never")
	r := runCLI(t, nil, "matrix", "--tasks", "csv-parser,log-analysis", "--dry-run", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	lines := strings.Split(r.out, "\n")
	for _, p := range conditions.Presets() {
		found := slices.ContainsFunc(lines, func(l string) bool {
			f := strings.Fields(l)
			return len(f) >= 3 && f[0] == p.Name && f[1] == string(p.Condition) && f[2] == p.Policy.String()
		})
		if !found {
			t.Errorf("no row line %q %s %s in:\n%s", p.Name, p.Condition, p.Policy, r.out)
		}
	}
	for _, want := range []string{"csv-parser, log-analysis", "Iterations:", "Trials:", "360", "Estimated tokens", "Estimated cost", "Images to build or reuse", "planner"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.out)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("dry run created %s", out)
	}
}

func TestMatrixDryRunJSON(t *testing.T) {
	r := runCLI(t, nil, "matrix", "--tasks", "csv-parser,log-analysis", "--dry-run", "--json", "--iterations", "3", "--out", t.TempDir())
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var p harness.Plan
	if err := json.Unmarshal([]byte(r.out), &p); err != nil {
		t.Fatalf("stdout is not a plan: %v\n%s", err, r.out)
	}
	if len(p.Rows) != 6 || p.Kind != "matrix" || p.Trials != 6*2*3 || !slices.Equal(p.Tasks, []string{"csv-parser", "log-analysis"}) {
		t.Errorf("plan = %+v", p)
	}
	if p.Rows[5].Condition != conditions.LearnedMediator || p.Rows[5].Policy != conditions.PolicyAll {
		t.Errorf("last row = %+v, want full_coevolution", p.Rows[5])
	}
}

// A preview refuses what the run would refuse: tasks found nowhere.
func TestDryRunRefusesMissingTasks(t *testing.T) {
	cache := t.TempDir()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "default.toml"), []byte(fmt.Sprintf("[executor_runtime]\ntask_cache_dir = %q\n", cache)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"run", "matrix"} {
		r := runCLI(t, nil, cmd, "--tasks", "csv-parser,no-such-task", "--offline", "--dry-run", "--config-dir", dir)
		if r.code != ExitUsage || !strings.Contains(r.errOut, "not found: no-such-task") {
			t.Errorf("%s --dry-run with a missing task: exit %d, stderr %q", cmd, r.code, r.errOut)
		}
		if entries, _ := os.ReadDir(cache); len(entries) != 0 {
			t.Errorf("%s --dry-run wrote into the task cache", cmd)
		}
	}
}

func TestRunDryRunTaskSetAndOverrides(t *testing.T) {
	r := runCLI(t, nil, "run", "--task-set", "smoke", "--tasks", "orbital-period", "--offline", "--iterations", "2", "--seed", "0",
		"--agent", "oracle", "--lab", "hierarchical", "-j", "3", "--budget-tokens", "1000", "--dry-run", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var p harness.Plan
	if err := json.Unmarshal([]byte(r.out), &p); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Tasks, []string{"orbital-period"}) {
		t.Errorf("tasks = %v, want --tasks to override --task-set", p.Tasks)
	}
	if p.Iterations != 2 || p.Rows[0].Seed != 0 || p.Agent != "oracle" || p.Rows[0].Lab != "hierarchical" ||
		p.Concurrency != 3 || p.BudgetTokens != 1000 || !p.Offline || p.EstimatedCostUSD != 0 {
		t.Errorf("plan = %+v", p)
	}
	for role, m := range p.Models {
		if !strings.HasPrefix(m, "offline") {
			t.Errorf("--offline left %s on %s", role, m)
		}
	}
}

func TestConfigErrorsExit2(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"unknown key", "[experiment]\niterationz = 3\n", []string{"experiment.iterationz"}},
		{"key differing only in case", "[experiment]\nIterations = 3\n", []string{"experiment.Iterations"}},
		{"wrong type names its line", "[experiment]\n\niterations = \"many\"\n", []string{"line 3", "iterations"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "default.toml")
			if err := os.WriteFile(file, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, nil, "run", "--tasks", "a", "--config-dir", dir, "--dry-run")
			if r.code != ExitUsage {
				t.Errorf("exit code = %d, want 2", r.code)
			}
			for _, w := range append(tt.want, file) {
				if !strings.Contains(r.errOut, w) {
					t.Errorf("stderr %q does not mention %q", r.errOut, w)
				}
			}
			if r.out != "" {
				t.Errorf("printed a plan despite the bad configuration:\n%s", r.out)
			}
		})
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	resumeDir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"run", "--tasks", "a", "--bogus"}, "unknown flag"},
		{"bad flag value", []string{"run", "--tasks", "a", "--iterations", "many"}, "invalid argument"},
		{"unknown command", []string{"runn"}, "unknown command"},
		{"positional argument", []string{"run", "--tasks", "a", "extra"}, "takes no arguments"},
		{"no tasks", []string{"run"}, "--task-set"},
		{"unknown task set", []string{"run", "--task-set", "nope"}, "smoke"},
		{"unknown condition", []string{"run", "--tasks", "a", "--condition", "nope"}, "unknown condition"},
		{"bad policy", []string{"run", "--tasks", "a", "--skill-updates", "none,planner"}, "cannot be combined"},
		{"unknown agent", []string{"run", "--tasks", "a", "--agent", "human"}, "unknown agent"},
		{"unknown lab", []string{"run", "--tasks", "a", "--lab", "nolab"}, "nolab"},
		{"zero iterations", []string{"run", "--tasks", "a", "--iterations", "0"}, "--iterations"},
		{"zero jobs", []string{"matrix", "--tasks", "a", "-j", "0"}, "-j"},
		{"negative budget", []string{"run", "--tasks", "a", "--budget-usd", "-1"}, "--budget-usd"},
		{"seed and seeds", []string{"matrix", "--tasks", "a", "--seed", "1", "--seeds", "2"}, "--seeds"},
		{"preset and matrix", []string{"matrix", "--tasks", "a", "--preset", "no_feedback", "--matrix", "m.toml"}, "--matrix"},
		{"unknown preset", []string{"matrix", "--tasks", "a", "--preset", "best"}, "unknown preset"},
		{"missing matrix file", []string{"matrix", "--tasks", "a", "--matrix", filepath.Join(resumeDir, "none.toml")}, "none.toml"},
		{"design flag with resume", []string{"run", "--resume", resumeDir, "--condition", "no_feedback"}, "--condition cannot be combined with --resume"},
		{"unknown launcher", []string{"matrix", "--tasks", "a", "--launcher", "pbs"}, "--launcher must be local or slurm"},
		{"row without resume", []string{"matrix", "--tasks", "a", "--row", "x"}, "--row runs one row of an existing matrix"},
		{"row on slurm", []string{"matrix", "--resume", resumeDir, "--row", "x", "--launcher", "slurm"}, "cannot be combined with --launcher slurm"},
		{"detach without slurm", []string{"matrix", "--tasks", "a", "--detach"}, "--detach needs --launcher slurm"},
		{"resume of a non-run directory", []string{"run", "--resume", resumeDir}, "run.json"},
		{"skills with two dirs", []string{"skills", "validate", "a", "b"}, "at most one"},
		{"skills of a missing dir", []string{"skills", "validate", filepath.Join(resumeDir, "nope")}, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, nil, tt.args...)
			if r.code != ExitUsage {
				t.Errorf("exit code = %d, want 2 (stderr %q)", r.code, r.errOut)
			}
			if !strings.Contains(r.errOut, tt.want) {
				t.Errorf("stderr %q does not mention %q", r.errOut, tt.want)
			}
		})
	}
}

// Overlapping splits are refused with exit 2 before anything starts.
func TestOverlappingSplitsAreRefused(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"held out and evolved", []string{"run", "--tasks", "a,b", "--heldout-tasks", "b"}, `task "b" is in both the evolve and the held-out split`},
		{"validated and held out", []string{"matrix", "--tasks", "a", "--validate-tasks", "c", "--heldout-tasks", "c"}, `task "c" is in both the validate and the held-out split`},
		{"counts that do not add up", []string{"matrix", "--tasks", "a,b,c", "--split", "2:2:1"}, "adds up to 5 tasks, but 3 are listed"},
		{"both ways", []string{"run", "--tasks", "a,b,c", "--split", "1:1:1", "--heldout-tasks", "d"}, "cannot be combined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := prepopulated(t)
			before := listing(t, out)
			called := false
			f := &Factory{Execute: func(context.Context, *ValidatedPlan) error { called = true; return nil }}
			r := runCLI(t, f, append(tt.args, "--out", out)...)
			if r.code != ExitUsage || !strings.Contains(r.errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.errOut, tt.want)
			}
			if called || listing(t, out) != before {
				t.Error("a refused split started something")
			}
		})
	}
}

func TestRunWithoutExecutorExits1(t *testing.T) {
	out := prepopulated(t)
	before := listing(t, out)
	r := runCLI(t, nil, "run", "--tasks", "a", "--out", out)
	if r.code != ExitFailed || !strings.Contains(r.errOut, "execution is not available in this build") {
		t.Errorf("exit %d, stderr %q", r.code, r.errOut)
	}
	if listing(t, out) != before {
		t.Error("a run without an executor changed --out")
	}
}

func TestExecuteHookReceivesPlanAndSetsExitCode(t *testing.T) {
	var got *ValidatedPlan
	f := &Factory{Execute: func(_ context.Context, x *ValidatedPlan) error {
		got = x
		return &ExitError{Code: ExitBudget, Err: errors.New("budget reached")}
	}}
	r := runCLI(t, f, "matrix", "--tasks", "a", "--preset", "no_feedback,full_coevolution", "--seeds", "1,2", "--budget-usd", "20", "--out", "somewhere")
	if r.code != ExitBudget || !strings.Contains(r.errOut, "budget reached") {
		t.Errorf("exit %d, stderr %q", r.code, r.errOut)
	}
	if got == nil {
		t.Fatal("Execute was not called")
	}
	if len(got.Plan.Rows) != 4 || got.Plan.Name != "presets" || got.Plan.OutDir != "somewhere" || got.Config.Budget.MaxUSD != 20 {
		t.Errorf("execution = plan %+v, budget %v", got.Plan, got.Config.Budget.MaxUSD)
	}
	if len(got.Args) == 0 || got.Args[0] != "matrix" || !slices.Contains(got.Args, "--seeds=1,2") {
		t.Errorf("recorded args = %q", got.Args)
	}
}

func TestNewCmdRunParsesFlags(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		check func(*testing.T, *RunOptions)
	}{
		{"defaults", []string{"--tasks", "a,b"}, func(t *testing.T, o *RunOptions) {
			if !slices.Equal(o.Tasks, []string{"a", "b"}) || o.Condition != "learned_mediator" || o.SkillUpdates != "all" ||
				o.Agent != "lab" || o.Out != DefaultOut || o.Seed != nil || o.Iterations != 0 || o.BudgetUSD != nil || o.DryRun {
				t.Errorf("options = %+v", o)
			}
		}},
		{"explicit values", []string{"--task-set", "smoke", "--seed", "7", "--budget-usd", "0", "-v", "--json", "-j", "4"}, func(t *testing.T, o *RunOptions) {
			if o.TaskSet != "smoke" || o.Seed == nil || *o.Seed != 7 || o.BudgetUSD == nil || *o.BudgetUSD != 0 || !o.Verbose || !o.JSON || o.Jobs != 4 {
				t.Errorf("options = %+v", o)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *RunOptions
			cmd := NewCmdRun(&Factory{}, func(_ context.Context, o *RunOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(&bytes.Buffer{})
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
}

func TestHelpExitCodes(t *testing.T) {
	r := runCLI(t, nil, "help", "exit-codes")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	for _, code := range []string{"0", "1", "2", "3", "4", "130"} {
		found := slices.ContainsFunc(strings.Split(r.out, "\n"), func(l string) bool {
			f := strings.Fields(l)
			return len(f) > 1 && f[0] == code
		})
		if !found {
			t.Errorf("exit code %s not listed:\n%s", code, r.out)
		}
	}
	if root := runCLI(t, nil, "--help"); !strings.Contains(root.out, "exit-codes") {
		t.Errorf("root help does not point at the exit-codes topic:\n%s", root.out)
	}
}

func TestCompletionAndVersion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := runCLI(t, nil, "completion", shell)
		if r.code != 0 || !strings.Contains(r.out, "harness") || len(r.out) < 200 {
			t.Errorf("completion %s: exit %d, %d bytes", shell, r.code, len(r.out))
		}
	}
	r := runCLI(t, nil, "__complete", "run", "--condition", "static")
	if !strings.Contains(r.out, "static_mediator") {
		t.Errorf("condition completion = %q", r.out)
	}
	r = runCLI(t, nil, "--version")
	if r.code != 0 || !strings.HasPrefix(r.out, "harness "+rundir.Version) {
		t.Errorf("--version = %q (exit %d)", r.out, r.code)
	}
}

func TestSkillsValidate(t *testing.T) {
	r := runCLI(t, nil, "skills", "validate")
	if r.code != 0 || strings.Count(r.out, "ok ") != 3 {
		t.Errorf("built-in skills: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	bad := t.TempDir()
	for _, role := range []string{"executor", "planner", "mediator"} {
		os.MkdirAll(filepath.Join(bad, role), 0o755)
		content := "---\nname: " + role + "\ndescription: test skill\n---\n# Body\n"
		if role == "planner" {
			content = "no front matter here\n"
		}
		os.WriteFile(filepath.Join(bad, role, "SKILL.md"), []byte(content), 0o644)
	}
	r = runCLI(t, nil, "skills", "validate", bad)
	if r.code != ExitFailed || !strings.Contains(r.out, "FAIL") || !strings.Contains(r.out, "planner") {
		t.Errorf("invalid tree: exit %d\n%s%s", r.code, r.out, r.errOut)
	}

	r = runCLI(t, nil, "skills", "validate", "--json", bad)
	var rep struct {
		OK    bool `json:"ok"`
		Roles []struct {
			Role string `json:"role"`
			OK   bool   `json:"ok"`
		} `json:"roles"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.out)
	}
	if rep.OK || len(rep.Roles) != 3 || rep.Roles[1].OK {
		t.Errorf("--json report = %+v", rep)
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"plain failure", errors.New("boom"), 1},
		{"typed", &ExitError{Code: 3}, 3},
		{"wrapped typed", fmt.Errorf("run: %w", &ExitError{Code: 4, Err: errors.New("budget")}), 4},
		{"cancelled", fmt.Errorf("trial: %w", context.Canceled), 130},
		{"design rule", &conditions.RuleError{Rule: conditions.RuleNoFeedbackNoUpdates}, 2},
		{"cobra unknown command", errors.New(`unknown command "x" for "harness"`), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.err); got != tt.want {
				t.Errorf("ExitCode = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestInterruptedExecutionExits130(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &Factory{Execute: func(ctx context.Context, _ *ValidatedPlan) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}}
	var out, errOut bytes.Buffer
	f.IO = IOStreams{Out: &out, ErrOut: &errOut}
	if code := Run(ctx, f, []string{"run", "--tasks", "a"}); code != ExitInterrupted {
		t.Errorf("exit code = %d, want 130 (stderr %q)", code, errOut.String())
	}
}

func TestRunResumeDryRunShowsSkips(t *testing.T) {
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	d, err := rundir.Create(t.TempDir(), rundir.Spec{
		Manifest: rundir.Manifest{Kind: rundir.KindRun, Condition: "full_traces", Policy: "none",
			Seed: 3, Tasks: []string{"csv-parser"}, Iterations: 6},
		Config: cfg,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.UpdateManifest(func(m *rundir.Manifest) { m.CompletedIterations = 2 }); err != nil {
		t.Fatal(err)
	}
	before := listing(t, d.Path)
	r := runCLI(t, nil, "run", "--resume", d.Path, "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	for _, want := range []string{"full_traces", "resumes at iteration 3", "Resuming " + d.Path, "6, of which 4 remain to run"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.out)
		}
	}
	if listing(t, d.Path) != before {
		t.Error("a dry run changed the resumed directory")
	}
}

// A preview refuses what the run would refuse: a model key variable that is
// not set, named once with the roles that need it; --offline needs none.
func TestDryRunRefusesMissingAPIKeys(t *testing.T) {
	noKeys := testFactory()
	noKeys.Getenv = func(name string) string {
		if strings.HasSuffix(name, "_API_KEY") {
			return ""
		}
		return os.Getenv(name)
	}
	for _, cmd := range []string{"run", "matrix"} {
		for _, format := range [][]string{nil, {"--json"}} {
			out := filepath.Join(t.TempDir(), "never")
			args := append([]string{cmd, "--tasks", "csv-parser", "--dry-run", "--out", out}, format...)
			r := runCLI(t, noKeys, args...)
			if r.code != ExitUsage {
				t.Fatalf("%v without keys: exit %d, want %d\nstdout: %s\nstderr: %s", args, r.code, ExitUsage, r.out, r.errOut)
			}
			if n := strings.Count(r.errOut, "OPENROUTER_API_KEY"); n != 1 {
				t.Errorf("%v: stderr names OPENROUTER_API_KEY %d times, want once: %q", args, n, r.errOut)
			}
			if !strings.Contains(r.errOut, "planner, executor") || r.out != "" {
				t.Errorf("%v: stderr %q lacks the roles, or a plan was printed: %q", args, r.errOut, r.out)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%v created %s", args, out)
			}
		}
		if r := runCLI(t, noKeys, cmd, "--tasks", "csv-parser", "--dry-run", "--offline", "--out", t.TempDir()); r.code != 0 {
			t.Errorf("%s --offline --dry-run without keys: exit %d, stderr %q", cmd, r.code, r.errOut)
		}
	}
}

// A shared_notes row without notes is warned of: under WARNINGS in the dry
// run, and on stderr when the run starts.
func TestSharedNotesWithoutNotesIsWarned(t *testing.T) {
	const warning = "[experiment] shared_notes is empty"
	r := runCLI(t, nil, "run", "--tasks", "csv-parser", "--condition", "shared_notes", "--skill-updates", "none",
		"--offline", "--dry-run", "--out", t.TempDir())
	if r.code != 0 {
		t.Fatalf("dry run: exit %d: %s", r.code, r.errOut)
	}
	if !strings.Contains(r.out, "WARNINGS:") || !strings.Contains(r.out, warning) {
		t.Errorf("the dry run does not warn of the empty notes:\n%s", r.out)
	}
	f := testFactory()
	var started bool
	f.Execute = func(context.Context, *ValidatedPlan) error { started = true; return nil }
	r = runCLI(t, f, "run", "--tasks", "csv-parser", "--condition", "shared_notes", "--skill-updates", "none",
		"--offline", "--out", t.TempDir())
	if r.code != 0 || !started {
		t.Fatalf("run: exit %d, started %v: %s", r.code, started, r.errOut)
	}
	if !strings.Contains(r.errOut, "warning: row shared_notes uses condition shared_notes") || !strings.Contains(r.errOut, warning) {
		t.Errorf("the run does not warn of the empty notes on stderr: %q", r.errOut)
	}
}
