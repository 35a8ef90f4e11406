package benchmarks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mediated-coevo/harness/benchmarks/compose"
)

// ValidationResult is what `harness tasks validate` prints for one task.
type ValidationResult struct {
	// Path is the task directory as given (or found under a given directory).
	Path string `json:"path"`
	// ID is the task's name; empty when Path is not a task at all.
	ID       string   `json:"id,omitempty"`
	Errors   []string `json:"errors,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Skills are the skills the task ships (see checkSkills); SkillDirs
	// the folders in the image the agent's skill index reads.
	Skills    []SkillInfo `json:"skills,omitempty"`
	SkillDirs []string    `json:"skill_dirs,omitempty"`
	// Task is the loaded task when there are no errors.
	Task *Task `json:"-"`
	// problems are the errors as Load reports them.
	problems []*TaskError
}

// OK reports whether the task loaded without errors (warnings allowed).
func (r ValidationResult) OK() bool { return len(r.Errors) == 0 }

// Validate loads the task in dir and reports every error and warning,
// including checks that Load does not make (a verifier that never writes a
// reward file, for instance).
func Validate(dir string) ValidationResult {
	return validate(dir, os.LookupEnv)
}

func validate(dir string, lookup func(string) (string, bool)) ValidationResult {
	res := ValidationResult{Path: dir}
	t, probs := loadTask(dir, lookup)
	if t != nil {
		res.ID = t.ID
		res.Warnings = append(res.Warnings, t.Warnings...)
		configRead := !hasProblemIn(probs, filepath.Join(t.Dir, "task.toml"))
		res.Warnings = append(res.Warnings, extraChecks(t, configRead)...)
		if configRead {
			var warns []string
			res.Skills, warns = checkSkills(t)
			res.SkillDirs = t.SkillDirs
			res.Warnings = append(res.Warnings, warns...)
		}
		w, err := compose.Validate(t.EnvironmentDir())
		res.Warnings = append(res.Warnings, w...)
		if err != nil {
			probs = append(probs, composeProblem(t.EnvironmentDir(), err))
		}
	}
	res.problems = probs
	for _, p := range probs {
		res.Errors = append(res.Errors, p.Error())
	}
	if len(res.Errors) == 0 {
		t.Warnings = res.Warnings
		res.Task = t
	}
	return res
}

// composeProblem is a compose file's error as a task problem, named by the
// file (whose path the compose reader's message starts with).
func composeProblem(envDir string, err error) *TaskError {
	path := compose.Find(envDir)
	msg := strings.TrimPrefix(err.Error(), "read ")
	msg = strings.TrimPrefix(msg, path+": ")
	return &TaskError{Path: path, Msg: msg}
}

func hasProblemIn(probs []*TaskError, path string) bool {
	for _, p := range probs {
		if p.Path == path {
			return true
		}
	}
	return false
}

// extraChecks are warnings about things that load but are likely mistakes.
// configRead is false when task.toml had errors: its values are then not
// what the file says, so nothing is concluded from them.
func extraChecks(t *Task, configRead bool) []string {
	var w []string
	test := filepath.Join(t.TestsDir(), "test.sh")
	if data, err := os.ReadFile(test); err == nil {
		s := string(data)
		switch {
		case strings.TrimSpace(s) == "":
			w = append(w, fmt.Sprintf("%s: empty; the verifier must write /logs/verifier/reward.txt", test))
		case !strings.Contains(s, "reward"):
			w = append(w, fmt.Sprintf("%s: never mentions a reward file; it must write /logs/verifier/reward.txt or reward.json (else every trial is a verifier error)", test))
		}
	}
	if !configRead {
		return w
	}
	if t.Config.Agent.TimeoutSec == 0 {
		w = append(w, fmt.Sprintf("%s: [agent] timeout_sec not set; the runtime default applies", filepath.Join(t.Dir, "task.toml")))
	}
	if t.Config.Verifier.TimeoutSec == 0 {
		w = append(w, fmt.Sprintf("%s: [verifier] timeout_sec not set; the runtime default applies", filepath.Join(t.Dir, "task.toml")))
	}
	return w
}

// ValidatePaths validates every task named by paths. A path is either a task
// directory (it holds task.toml) or a directory whose subdirectories are
// tasks (a dataset such as a SkillsBench checkout's tasks/). A path that is
// neither gets a result with an error.
func ValidatePaths(paths []string) []ValidationResult {
	var out []ValidationResult
	for _, p := range paths {
		dirs, err := taskDirsUnder(p)
		if err != nil {
			out = append(out, ValidationResult{Path: p, Errors: []string{err.Error()}})
			continue
		}
		for _, d := range dirs {
			out = append(out, Validate(d))
		}
	}
	return out
}

// taskDirsUnder returns the task folders at p or up to MaxTaskDepth levels
// below it (folders holding task.toml, so that a task missing its
// instruction is still found and reported), sorted; p may also name a
// task.toml file.
func taskDirsUnder(p string) ([]string, error) {
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		if filepath.Base(p) == "task.toml" {
			return []string{filepath.Dir(p)}, nil
		}
		return nil, fmt.Errorf("%s: not a directory; give a task directory or a directory of tasks", p)
	}
	s, err := findTasks(p, false)
	if err != nil {
		return nil, err
	}
	if len(s.Dirs) == 0 {
		return nil, fmt.Errorf("%s: no task.toml here or up to %d levels below; a task directory holds task.toml, instruction.md, environment/Dockerfile and tests/test.sh", p, MaxTaskDepth)
	}
	return s.Dirs, nil
}
