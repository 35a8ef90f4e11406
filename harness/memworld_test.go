package harness

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/mediated-coevo/harness/llm/providers"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/executor"
)

// memWorld is the offline world without an engine: every trial runs the
// real lab agent (its offline player included) in an in-memory sandbox
// holding the task's /app files, and its verifier scores 1 when every
// file the instruction names and the image lacks was written, else 0. It
// is the one true effect of the offline world, the diligence advice,
// reduced to what decides a reward, so the whole pipeline (plans, trials,
// gate, evaluation, ledger) runs in a unit test.
type memWorld struct{}

func (memWorld) EnsureImage(ctx context.Context, task *benchmarks.Task) (string, bool, error) {
	return "mem/" + task.ID, false, nil
}

func (memWorld) StartSandbox(ctx context.Context, spec executor.ContainerSpec) (executor.ClosableSandbox, error) {
	files, err := appFiles(spec.Task)
	if err != nil {
		return nil, &executor.EnvError{Op: "start", Err: err}
	}
	return &memSandbox{files: files, want: wantedOutputs(spec.Task.Instruction, files)}, nil
}

// appFiles reads the task's environment/app into sandbox paths under /app.
func appFiles(task *benchmarks.Task) (map[string]string, error) {
	files := map[string]string{}
	root := filepath.Join(task.Dir, "environment", "app")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files["/app/"+filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return files, nil
}

var memPath = regexp.MustCompile(`/app/[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*`)

// wantedOutputs are the files under /app the instruction names that the
// image does not hold.
func wantedOutputs(instruction string, files map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range memPath.FindAllString(instruction, -1) {
		p = strings.TrimRight(p, ".")
		if _, ok := files[p]; ok || seen[p] || path.Ext(p) == "" {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// memSandbox emulates the lab tools' helper scripts and the verifier.
type memSandbox struct {
	mu     sync.Mutex
	files  map[string]string
	want   []string
	reward string
}

func (s *memSandbox) ID() string                      { return "mem" }
func (s *memSandbox) Close(ctx context.Context) error { return nil }

func (s *memSandbox) Exec(ctx context.Context, req executor.ExecRequest) (executor.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return executor.ExecResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := req.Cmd
	switch {
	case len(cmd) >= 4 && cmd[3] == "harness-discover":
		return executor.ExecResult{Stdout: "pwd\t/app\napp\tyes\n"}, nil
	case len(cmd) == 5 && cmd[3] == "harness-list":
		return s.list(cmd[4]), nil
	case len(cmd) == 3 && strings.Contains(cmd[2], "/tests/test.sh"):
		s.reward = "1"
		for _, p := range s.want {
			if _, ok := s.files[p]; !ok {
				s.reward = "0"
			}
		}
		return executor.ExecResult{Stdout: "reward " + s.reward + "\n"}, nil
	}
	return executor.ExecResult{Stdout: "ran\n"}, nil
}

func (s *memSandbox) list(dir string) executor.ExecResult {
	dir = strings.TrimSuffix(dir, "/") + "/"
	seen := map[string]bool{}
	var lines []string
	for p, c := range s.files {
		rel, ok := strings.CutPrefix(p, dir)
		if !ok {
			continue
		}
		parts := strings.Split(rel, "/")
		for i := 1; i < len(parts) && i <= 2; i++ {
			if d := strings.Join(parts[:i], "/"); !seen[d] {
				seen[d] = true
				lines = append(lines, "d\t4096\t"+d)
			}
		}
		if len(parts) <= 2 {
			lines = append(lines, fmt.Sprintf("f\t%d\t%s", len(c), rel))
		}
	}
	if len(lines) == 0 {
		return executor.ExecResult{ExitCode: 2, Stderr: "no such file or directory: " + dir}
	}
	sort.Strings(lines)
	return executor.ExecResult{Stdout: strings.Join(lines, "\n") + "\n"}
}

func (s *memSandbox) ReadFile(ctx context.Context, user, p string, max int) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.files[p]
	if !ok {
		return nil, fmt.Errorf("read %s: no such file", p)
	}
	if max > 0 && len(c) > max {
		c = c[:max]
	}
	return []byte(c), nil
}

func (s *memSandbox) WriteFile(ctx context.Context, user, p string, data []byte, mode int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[p] = string(data)
	return nil
}

func (s *memSandbox) CopyDirIn(ctx context.Context, hostDir, dst string) error { return nil }

// CopyOut sends the verifier's logs: its reward.
func (s *memSandbox) CopyOut(ctx context.Context, p string, w io.Writer) error {
	s.mu.Lock()
	reward := s.reward
	s.mu.Unlock()
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "verifier/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		return err
	}
	if reward != "" {
		if err := tw.WriteHeader(&tar.Header{Name: "verifier/reward.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(reward))}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, reward); err != nil {
			return err
		}
	}
	return tw.Close()
}

// onMemWorld completes o for the in-memory world: the plan's smoke tasks
// (and validation pool) resolved from the embedded set, the memWorld
// backend and the configured (offline or fake-server) providers.
func onMemWorld(t *testing.T, o ExecOptions) ExecOptions {
	t.Helper()
	cfg := o.Plan.Config()
	cfg.ExecutorRuntime.TaskCacheDir = filepath.Join(t.TempDir(), "cache")
	r, err := benchmarks.NewResolver(cfg.ExecutorRuntime)
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(ids []string) []*benchmarks.Task {
		if len(ids) == 0 {
			return nil
		}
		tasks, err := r.Resolve(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		return tasks
	}
	o.Tasks = resolve(o.Plan.Tasks)
	o.ValidateSplit, o.HeldOut = resolve(o.Plan.ValidateTasks), resolve(o.Plan.HeldOutTasks)
	if o.ValidateSplit == nil {
		o.Pool = resolve(cfg.Validation.Pool)
	}
	o.Backend = memWorld{}
	if o.Providers == nil {
		o.Providers = providers.New
	}
	return o
}
