package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/mediated-coevo/harness/benchmarks"
	"github.com/mediated-coevo/harness/config"
	"github.com/mediated-coevo/harness/executor"
	"github.com/mediated-coevo/harness/internal/dockertest"
)

// These tests drive the real engine. They skip when no engine answers, and
// when the base image is missing (CI builds it first with
// benchmarks/baseimage/build.sh).

const baseImage = dockertest.BaseImage

func testRuntime() config.ExecutorRuntime {
	return config.ExecutorRuntime{
		Network:         NetworkTask,
		BuildTimeout:    config.Duration{Duration: 5 * time.Minute},
		AgentTimeout:    config.Duration{Duration: time.Minute},
		VerifierTimeout: config.Duration{Duration: time.Minute},
		PidsLimit:       256,
		MemoryMB:        512,
		CPUs:            1,
	}
}

func newTestDocker(t *testing.T) *Backend {
	t.Helper()
	return newTestDockerRT(t, testRuntime())
}

func newTestDockerRT(t *testing.T, rt config.ExecutorRuntime) *Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := New(ctx, rt)
	if err != nil {
		dockertest.Unavailable(t, "no Docker engine: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	ok, err := d.imageExists(ctx, baseImage)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		dockertest.Unavailable(t, "%s is absent: build it with benchmarks/baseimage/build.sh before running the Docker tests", baseImage)
	}
	return d
}

func randomID(t *testing.T) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// fixture files of a small task: the verifier passes when /app/greeting.txt
// holds "$GREETING" (verifier env); the solution writes "$PREFIX world"
// (solution env, and name.txt baked into the image).
var greetFiles = map[string]string{
	"environment/Dockerfile": "FROM " + baseImage + "\nWORKDIR /app\nRUN printf 'world\\n' > /app/name.txt\n",
	"tests/test.sh": `#!/bin/bash
echo "checking greeting"
if [ "$(cat /app/greeting.txt 2>/dev/null)" = "$GREETING" ]; then r=1; s=passed; else r=0; s=failed; fi
echo $r > /logs/verifier/reward.txt
printf '{"results":{"tool":{"name":"sh"},"summary":{"start":1769665755.5},"tests":[{"name":"greeting","status":"%s","duration":0.5},{"name":"always","status":"passed","duration":0.1}]}}' $s > /logs/verifier/ctrf.json
exit 3 # the exit code must not matter
`,
	"solution/solve.sh": "#!/bin/bash\necho solving\necho \"$PREFIX $(cat /app/name.txt)\" > /app/greeting.txt\n",
}

func greetConfig() benchmarks.TaskConfig {
	return benchmarks.TaskConfig{
		Verifier:    benchmarks.VerifierConfig{TimeoutSec: 30, Env: map[string]string{"GREETING": "hello world"}},
		Solution:    benchmarks.SolutionConfig{Env: map[string]string{"PREFIX": "hello"}},
		Environment: benchmarks.EnvConfig{Workdir: "/app"},
	}
}

// writeTask writes a task directory from base with overrides (an empty
// value deletes a file).
func writeTask(t *testing.T, id string, cfg benchmarks.TaskConfig, base map[string]string, overrides map[string]string) *benchmarks.Task {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	files := map[string]string{}
	for k, v := range base {
		files[k] = v
	}
	for k, v := range overrides {
		files[k] = v
	}
	for name, content := range files {
		if content == "" {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return &benchmarks.Task{ID: id, Dir: dir, Config: cfg}
}

func listByLabel(t *testing.T, d *Backend, label string) []container.Summary {
	t.Helper()
	list, err := d.cli.ContainerList(context.Background(), container.ListOptions{
		All: true, Filters: filters.NewArgs(filters.Arg("label", label)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// runTrial runs one trial under the shared run id "test-run" with a trial id
// of its own. A test that only runs its own trials and sandboxes (no garbage
// collection, no image removal, no timing bound) calls t.Parallel(): go test
// runs such tests side by side once every sequential test has finished, so
// they never meet one that removes what they use.
func runTrial(t *testing.T, d *Backend, ctx context.Context, task *benchmarks.Task, agent executor.Agent, mode string) (*executor.Trace, string) {
	t.Helper()
	r := &executor.Runner{Backend: d, Runtime: testRuntime(), RewardMode: mode}
	trial := "trial-" + randomID(t)
	jobDir := filepath.Join(t.TempDir(), "job")
	tr := r.Run(ctx, executor.TrialSpec{
		Task: task, Agent: agent, JobDir: jobDir,
		RunID: "test-run", Row: "row", Iteration: 1, TrialID: trial, Seed: 1, Caller: "executor/test",
	})
	if tr == nil {
		t.Fatal("Run returned nil")
	}
	if left := listByLabel(t, d, LabelTrial+"="+trial); len(left) != 0 {
		t.Errorf("container of trial %s still exists after Run: %v", trial, left[0].ID)
	}
	return tr, jobDir
}

func TestDockerOracleScoresOne(t *testing.T) {
	t.Parallel() // see runTrial
	d := newTestDocker(t)
	task := writeTask(t, "greet", greetConfig(), greetFiles, nil)
	tr, jobDir := runTrial(t, d, context.Background(), task, executor.OracleAgent{}, executor.RewardModeVerifier)
	if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 1 {
		t.Fatalf("oracle: status %s reward %v errors %v", tr.Status, tr.Reward, tr.Errors)
	}
	if tr.Tests.Total != 2 || tr.Tests.Passed != 2 {
		t.Errorf("CTRF tests = %+v, want 2 passed of 2", tr.Tests)
	}
	if !strings.Contains(tr.VerifierOutput, "checking greeting") || !strings.Contains(tr.AgentOutput, "solving") {
		t.Errorf("outputs not captured: agent %q verifier %q", tr.AgentOutput, tr.VerifierOutput)
	}
	for _, f := range []string{"trace.json", "verifier/reward.txt", "verifier/ctrf.json", "verifier/test-stdout.txt", "agent/solve-stdout.txt"} {
		if _, err := os.Stat(filepath.Join(jobDir, f)); err != nil {
			t.Errorf("job dir lacks %s: %v", f, err)
		}
	}
	if !strings.HasPrefix(tr.Image, "harness-task-greet:") {
		t.Errorf("image = %q", tr.Image)
	}
}

// A task's disk limit is either applied to the container or, where the
// storage driver cannot enforce one, the trial still runs and its trace says
// the limit was not enforced; the limit is never dropped silently.
func TestDockerStorageLimit(t *testing.T) {
	d := newTestDocker(t)
	cfg := greetConfig()
	cfg.Environment.StorageMB = 2048
	task := writeTask(t, "greet", cfg, greetFiles, nil)
	tr, _ := runTrial(t, d, context.Background(), task, executor.OracleAgent{}, executor.RewardModeVerifier)
	if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 1 {
		t.Fatalf("status %s reward %v errors %v", tr.Status, tr.Reward, tr.Errors)
	}
	c := startTestContainer(t, d, task, "storage")
	ins, err := d.cli.ContainerInspect(context.Background(), c.ID())
	if err != nil {
		t.Fatal(err)
	}
	if size := ins.HostConfig.StorageOpt["size"]; size != "" {
		if size != "2048M" || len(tr.Warnings) != 0 || len(c.Warnings()) != 0 {
			t.Errorf("enforced size %q, trace warnings %v, container warnings %v", size, tr.Warnings, c.Warnings())
		}
		return
	}
	for _, w := range [][]string{tr.Warnings, c.Warnings()} {
		if len(w) != 1 || !strings.Contains(w[0], "storage_mb = 2048 is not enforced") {
			t.Errorf("unenforced disk limit reported as %q", w)
		}
	}
}

// createLog records, for every container create sent to the engine, whether
// it asked for a storage size and whether the engine refused it.
type createLog struct {
	inner http.RoundTripper
	mu    sync.Mutex
	sized []bool
	fails int
}

func (l *createLog) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/containers/create") {
		return l.inner.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var sent struct {
		HostConfig struct{ StorageOpt map[string]string }
	}
	_ = json.Unmarshal(body, &sent)
	resp, err := l.inner.RoundTrip(req)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sized = append(l.sized, sent.HostConfig.StorageOpt["size"] != "")
	if err != nil || resp.StatusCode >= 400 {
		l.fails++
	}
	return resp, err
}

// Once the backend knows whether the engine limits a container's disk, no
// create asks for what the engine would refuse, and the unenforced limit is
// still reported on every container.
func TestDockerStorageOptLearnedOnce(t *testing.T) {
	d := newTestDocker(t)
	log := &createLog{inner: d.cli.HTTPClient().Transport}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithHost(d.cli.DaemonHost()),
		client.WithHTTPClient(&http.Client{Transport: log}), client.WithVersion(d.cli.ClientVersion()))
	if err != nil {
		t.Fatal(err)
	}
	d.cli = cli
	cfg := greetConfig()
	cfg.Environment.StorageMB = 2048
	task := writeTask(t, "greet", cfg, greetFiles, nil)
	info, err := d.cli.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	known := storageOptUnsupported(info.Driver, info.DriverStatus)
	first := startTestContainer(t, d, task, "storage-once")
	second := startTestContainer(t, d, task, "storage-once")
	ins, err := d.cli.ContainerInspect(context.Background(), second.ID())
	if err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	sized, fails := slices.Clone(log.sized), log.fails
	log.mu.Unlock()
	if len(sized) < 2 {
		t.Fatalf("%d creates recorded; want 2", len(sized))
	}
	if ins.HostConfig.StorageOpt["size"] == "2048M" {
		// This engine enforces the limit: every create asks for it.
		if fails != 0 || !sized[len(sized)-1] {
			t.Errorf("enforcing engine: %d refused creates, sizes sent %v", fails, sized)
		}
		return
	}
	if sized[len(sized)-1] {
		t.Errorf("the second create asked for a storage size again (sizes sent %v)", sized)
	}
	if allowed := map[bool]int{true: 0, false: 1}[known]; fails > allowed {
		t.Errorf("%d creates refused; want at most %d (driver known to refuse: %v, sizes sent %v)", fails, allowed, known, sized)
	}
	for i, c := range []*Container{first, second} {
		if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "storage_mb = 2048 is not enforced") {
			t.Errorf("container %d: unenforced disk limit reported as %q", i+1, w)
		}
	}
}

// The engine receives the build context docker build would send: what
// .dockerignore excludes never reaches the image.
func TestDockerBuildHonoursDockerignore(t *testing.T) {
	d := newTestDocker(t)
	task := writeTask(t, "dockerignore", greetConfig(), greetFiles, map[string]string{
		"environment/Dockerfile":    "FROM " + baseImage + "\nCOPY . /ctx/\n",
		"environment/.dockerignore": "secret.txt\nlogs/\n",
		"environment/secret.txt":    "do not ship\n",
		"environment/logs/run.log":  "noise\n",
		"environment/keep.txt":      "ship\n",
	})
	c := startTestContainer(t, d, task, "dockerignore")
	res, err := c.Exec(context.Background(), executor.ExecRequest{Cmd: []string{"ls", "-A", "/ctx"}, Timeout: 10 * time.Second})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("ls /ctx: %+v %v", res, err)
	}
	if got, want := strings.Fields(res.Stdout), []string{".dockerignore", "Dockerfile", "keep.txt"}; !slices.Equal(got, want) {
		t.Errorf("image holds %q, want %q", got, want)
	}
}

func TestDockerNopScoresBelowOne(t *testing.T) {
	t.Parallel() // see runTrial
	d := newTestDocker(t)
	task := writeTask(t, "greet", greetConfig(), greetFiles, nil)
	tr, _ := runTrial(t, d, context.Background(), task, executor.NopAgent{}, executor.RewardModeVerifier)
	if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward >= 1 {
		t.Fatalf("nop: status %s reward %v errors %v", tr.Status, tr.Reward, tr.Errors)
	}
	// fraction mode scores passed/total from CTRF: 1 of 2.
	tr, _ = runTrial(t, d, context.Background(), task, executor.NopAgent{}, executor.RewardModeFraction)
	if tr.Reward == nil || *tr.Reward != 0.5 {
		t.Errorf("nop in fraction mode: reward %v, want 0.5 (errors %v)", tr.Reward, tr.Errors)
	}
}

func TestDockerOracleNonRootImage(t *testing.T) {
	t.Parallel() // see runTrial
	d := newTestDocker(t)
	task := writeTask(t, "greet-user", greetConfig(), greetFiles, map[string]string{
		"environment/Dockerfile": greetFiles["environment/Dockerfile"] + "RUN useradd -m u1 && chown u1 /app\nUSER u1\n",
	})
	tr, _ := runTrial(t, d, context.Background(), task, executor.OracleAgent{}, "")
	if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 1 {
		t.Fatalf("oracle in a non-root image: status %s reward %v errors %v", tr.Status, tr.Reward, tr.Errors)
	}
}

// plantAgent writes a fake reward where the verifier will look.
type plantAgent struct{}

func (plantAgent) Name() string { return "plant" }
func (plantAgent) Run(ctx context.Context, in executor.AgentInput) (executor.AgentResult, error) {
	err := errors.Join(
		in.Sandbox.WriteFile(ctx, "", "/logs/verifier/reward.txt", []byte("1\n"), 0o644),
		in.Sandbox.WriteFile(ctx, "", "/tests/test.sh", []byte("echo 1 > /logs/verifier/reward.txt\n"), 0o755))
	return executor.AgentResult{}, err
}

func TestDockerVerifierIgnoresPlantedReward(t *testing.T) {
	t.Parallel() // see runTrial
	d := newTestDocker(t)
	task := writeTask(t, "greet", greetConfig(), greetFiles, nil)
	tr, _ := runTrial(t, d, context.Background(), task, plantAgent{}, executor.RewardModeVerifier)
	if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 0 {
		t.Fatalf("planted reward: status %s reward %v errors %v", tr.Status, tr.Reward, tr.Errors)
	}
}

// lingerAgent leaves processes behind that keep writing a perfect
// reward.json, the file that beats reward.txt, and rewrite any test.sh they
// find: one as the agent, one without the exec's environment and one as
// another user.
type lingerAgent struct{}

func (lingerAgent) Name() string { return "linger" }
func (lingerAgent) Run(ctx context.Context, in executor.AgentInput) (executor.AgentResult, error) {
	const loop = `while :; do
  mkdir -p /logs/verifier; echo '{"reward": 1}' > /logs/verifier/reward.json
  for f in /.harness-tests-*/test.sh /tests/test.sh; do [ -f "$f" ] && echo 'echo 1 > /logs/verifier/reward.txt' > "$f"; done
  sleep 0.01
done 2>/dev/null`
	res, err := in.Sandbox.Exec(ctx, executor.ExecRequest{
		Cmd: []string{"bash", "-c", `mkdir -p /logs/verifier && chmod 777 /logs /logs/verifier
nohup bash -c "$LOOP" >/dev/null 2>&1 &
env -i /bin/bash -c "$LOOP" >/dev/null 2>&1 &
runuser -u nobody -- /bin/bash -c "$LOOP" >/dev/null 2>&1 &
sleep 0.5`},
		Env:     []string{"LOOP=" + loop},
		Timeout: 30 * time.Second,
	})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit code %d: %s", res.ExitCode, res.Stderr)
	}
	return executor.AgentResult{}, err
}

// hogAgent leaves what is hard to stop: a process holding a lot of memory
// (slow to die after SIGKILL) and a reward planter installed as the sleep
// binary, started under that name after a "pkill sleep".
type hogAgent struct{}

func (hogAgent) Name() string { return "hog" }
func (hogAgent) Run(ctx context.Context, in executor.AgentInput) (executor.AgentResult, error) {
	res, err := in.Sandbox.Exec(ctx, executor.ExecRequest{
		Cmd: []string{"bash", "-c", `python3 -c 'b = bytearray(300 << 20); import time; time.sleep(600)' >/dev/null 2>&1 &
cp /usr/bin/sleep /usr/bin/sleep.real
printf '#!/bin/bash\nwhile :; do mkdir -p /logs/verifier; echo "{\\"reward\\": 1}" > /logs/verifier/reward.json 2>/dev/null; /usr/bin/sleep.real 0.01; done\n' > /usr/bin/sleep
chmod 755 /usr/bin/sleep
pkill -TERM -x sleep
nohup sleep 1 >/dev/null 2>&1 &
/usr/bin/sleep.real 1`},
		Timeout: 30 * time.Second,
	})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit code %d: %s", res.ExitCode, res.Stderr)
	}
	return executor.AgentResult{}, err
}

func TestDockerVerifierStopsHardProcesses(t *testing.T) {
	t.Parallel() // see runTrial
	d := newTestDocker(t)
	task := writeTask(t, "greet", greetConfig(), greetFiles, map[string]string{
		"tests/test.sh": strings.Replace(greetFiles["tests/test.sh"], "exit 3", "/usr/bin/sleep.real 1\nexit 3", 1),
	})
	tr, _ := runTrial(t, d, context.Background(), task, hogAgent{}, executor.RewardModeVerifier)
	if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 0 {
		t.Fatalf("status %s reward %v rewards %v errors %v; want the verifier's 0", tr.Status, tr.Reward, tr.Rewards, tr.Errors)
	}
}

// Processes the agent left running are stopped before the verifier, so
// they can neither plant a reward while test.sh runs nor rewrite the tests
// once they are copied in, on every verifier path; the sandbox stays up for
// the verifier.
func TestDockerVerifierStopsAgentProcesses(t *testing.T) {
	t.Parallel() // see runTrial
	d := newTestDocker(t)
	noTar := greetFiles["environment/Dockerfile"] + "RUN rm -f /bin/tar /usr/bin/tar\n"
	tests := []struct {
		name, verifierUser, dockerfile string
	}{
		{"root verifier, streamed", "", ""},
		{"root verifier, copied", "", noTar},
		{"verifier as nobody", "nobody", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := greetConfig()
			cfg.Verifier.User = tt.verifierUser
			files := map[string]string{
				// Time for a planter to strike after test.sh wrote its reward.
				"tests/test.sh": strings.Replace(greetFiles["tests/test.sh"], "exit 3", "sleep 1\nexit 3", 1),
			}
			if tt.dockerfile != "" {
				files["environment/Dockerfile"] = tt.dockerfile
			}
			task := writeTask(t, "greet", cfg, greetFiles, files)
			tr, _ := runTrial(t, d, context.Background(), task, lingerAgent{}, executor.RewardModeVerifier)
			if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 0 {
				t.Fatalf("status %s reward %v rewards %v errors %v; want the verifier's 0", tr.Status, tr.Reward, tr.Rewards, tr.Errors)
			}
		})
	}
}

// serviceAgent leaves a named background process running, as an agent asked
// to start a service would.
type serviceAgent struct{}

func (serviceAgent) Name() string { return "service" }
func (serviceAgent) Run(ctx context.Context, in executor.AgentInput) (executor.AgentResult, error) {
	res, err := in.Sandbox.Exec(ctx, executor.ExecRequest{
		Cmd:     []string{"bash", "-c", "nohup bash -c 'exec -a harness-test-service sleep 300' >/dev/null 2>&1 & sleep 0.2"},
		Timeout: 30 * time.Second,
	})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit code %d: %s", res.ExitCode, res.Stderr)
	}
	return executor.AgentResult{}, err
}

// keep_agent_processes leaves a service the agent started up for the
// verifier; by default it is gone when test.sh starts.
func TestDockerKeepAgentProcesses(t *testing.T) {
	d := newTestDocker(t)
	task := writeTask(t, "service", greetConfig(), greetFiles, map[string]string{
		"tests/test.sh": "#!/bin/bash\nif pgrep -f harness-test-service >/dev/null; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n",
	})
	tests := []struct {
		name string
		keep bool
		want float64
	}{
		{"stopped by default", false, 0},
		{"kept on request", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := testRuntime()
			rt.KeepAgentProcesses = tt.keep
			r := &executor.Runner{Backend: d, Runtime: rt}
			tr := r.Run(context.Background(), executor.TrialSpec{Task: task, Agent: serviceAgent{}, JobDir: filepath.Join(t.TempDir(), "job"),
				RunID: "test-run", Row: "row", Iteration: 1, TrialID: "trial-" + randomID(t), Seed: 1, Caller: "executor/test"})
			if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != tt.want {
				t.Errorf("status %s reward %v errors %v; want reward %v", tr.Status, tr.Reward, tr.Errors, tt.want)
			}
		})
	}
}

func TestDockerEnsureImageReusesTag(t *testing.T) {
	d := newTestDocker(t)
	ctx := context.Background()
	// A unique file makes a fresh context, so the first call must build.
	task := writeTask(t, "reuse", greetConfig(), greetFiles, map[string]string{"environment/nonce.txt": randomID(t)})
	img, built, err := d.EnsureImage(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.cli.ImageRemove(context.Background(), img, image.RemoveOptions{Force: true, PruneChildren: true})
	})
	if !built {
		t.Errorf("first EnsureImage of a new context: built = false")
	}
	img2, built, err := d.EnsureImage(ctx, task)
	if err != nil || img2 != img || built {
		t.Errorf("second EnsureImage = %q, built %v, %v; want %q, false", img2, built, err, img)
	}
	ins, err := d.cli.ImageInspect(ctx, img)
	if err != nil || ins.Config == nil || ins.Config.Labels[LabelManaged] != "1" || ins.Config.Labels[LabelTask] != "reuse" {
		t.Errorf("image labels missing: %v", err)
	}
}

// docker_image wins when the engine has it, as in Harbor; otherwise the
// Dockerfile beside it is built.
func TestDockerImagePrefersPrebuilt(t *testing.T) {
	d := newTestDocker(t)
	tests := []struct {
		name, dockerImage string
		wantPrebuilt      bool
	}{
		{"present prebuilt image", baseImage, true},
		{"absent prebuilt image falls back to the Dockerfile", "harness-test-absent:none", false},
		{"no prebuilt image", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := greetConfig()
			cfg.Environment.DockerImage = tt.dockerImage
			task := writeTask(t, "prebuilt", cfg, greetFiles, nil)
			img, built, err := d.EnsureImage(context.Background(), task)
			if err != nil {
				t.Fatal(err)
			}
			if got := img == baseImage; got != tt.wantPrebuilt || (tt.wantPrebuilt && built) {
				t.Errorf("EnsureImage = %q (built %v); want the prebuilt image: %v", img, built, tt.wantPrebuilt)
			}
			if !tt.wantPrebuilt && !strings.HasPrefix(img, "harness-task-prebuilt:") {
				t.Errorf("EnsureImage = %q, want the task's own build", img)
			}
		})
	}
}

func TestDockerBuildFailureIsEnvError(t *testing.T) {
	d := newTestDocker(t)
	tests := []struct {
		name  string
		files map[string]string
		cfg   benchmarks.TaskConfig
		want  string
	}{
		{"failing step", map[string]string{"environment/Dockerfile": "FROM " + baseImage + "\nRUN echo boom-" + randomID(t) + " && false\n"}, greetConfig(), "returned a non-zero code"},
		{"missing base image", map[string]string{"environment/Dockerfile": "FROM harness-test-absent:none\n"}, greetConfig(), "base image harness-test-absent:none is not present"},
		{"missing docker_image", map[string]string{"environment/Dockerfile": ""}, benchmarks.TaskConfig{Environment: benchmarks.EnvConfig{DockerImage: "harness-test-absent:none"}}, "never pulled"},
		{"no environment", map[string]string{"environment/Dockerfile": ""}, benchmarks.TaskConfig{}, "no environment/Dockerfile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := writeTask(t, "broken", tt.cfg, greetFiles, tt.files)
			_, _, err := d.EnsureImage(context.Background(), task)
			var envErr *executor.EnvError
			if !errors.As(err, &envErr) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want *EnvError containing %q", err, tt.want)
			}
			tr, _ := runTrial(t, d, context.Background(), task, executor.NopAgent{}, "")
			if tr.Status != executor.StatusEnvFailure || tr.Reward != nil {
				t.Errorf("trace status %s reward %v, want env_failure without reward", tr.Status, tr.Reward)
			}
		})
	}
}

func TestDockerAgentTimeoutStillVerifies(t *testing.T) {
	d := newTestDocker(t)
	cfg := greetConfig()
	cfg.Agent.TimeoutSec = 2
	// The late write must never happen: the solution is killed at the timeout.
	task := writeTask(t, "greet", cfg, greetFiles, map[string]string{
		"solution/solve.sh": "#!/bin/bash\nsleep 4\necho \"hello world\" > /app/greeting.txt\n",
		"tests/test.sh":     strings.Replace(greetFiles["tests/test.sh"], "echo \"checking greeting\"", "sleep 3", 1),
	})
	tr, _ := runTrial(t, d, context.Background(), task, executor.OracleAgent{}, "")
	if tr.Status != executor.StatusAgentTimeout {
		t.Fatalf("status %s, want agent_timeout (errors %v)", tr.Status, tr.Errors)
	}
	if tr.Reward == nil || *tr.Reward != 0 || tr.Tests.Total != 2 {
		t.Errorf("verifier result missing after agent timeout: reward %v tests %+v errors %v", tr.Reward, tr.Tests, tr.Errors)
	}
}

func TestDockerVerifierHangIsVerifierError(t *testing.T) {
	d := newTestDocker(t)
	cfg := greetConfig()
	cfg.Verifier.TimeoutSec = 2
	task := writeTask(t, "greet", cfg, greetFiles, map[string]string{
		"tests/test.sh": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\necho hanging\nsleep 600\n",
	})
	tr, jobDir := runTrial(t, d, context.Background(), task, executor.OracleAgent{}, "")
	if tr.Status != executor.StatusVerifierError || tr.Reward != nil {
		t.Fatalf("status %s reward %v, want verifier_error without reward (errors %v)", tr.Status, tr.Reward, tr.Errors)
	}
	// Not a speed test: a hang guard, far above the 2 s limit plus grace.
	if tr.Timings.Verifier > 45*time.Second {
		t.Errorf("verifier took %s despite its 2 s timeout", tr.Timings.Verifier)
	}
	if !strings.Contains(strings.Join(tr.Errors, "\n"), "verifier timeout") {
		t.Errorf("errors do not name the timeout: %v", tr.Errors)
	}
	if data, err := os.ReadFile(filepath.Join(jobDir, "verifier", "test-stdout.txt")); err != nil || !strings.Contains(string(data), "hanging") {
		t.Errorf("test-stdout.txt of the hung verifier: %q, %v", data, err)
	}
}

func TestDockerBadRewardIsVerifierError(t *testing.T) {
	t.Parallel() // see runTrial
	d := newTestDocker(t)
	for _, content := range []string{"nan", "1.5", "", "0.5 0.7"} {
		t.Run(content, func(t *testing.T) {
			task := writeTask(t, "greet", greetConfig(), greetFiles, map[string]string{
				"tests/test.sh": "#!/bin/bash\nprintf '" + content + "' > /logs/verifier/reward.txt\n",
			})
			tr, _ := runTrial(t, d, context.Background(), task, executor.OracleAgent{}, "")
			if tr.Status != executor.StatusVerifierError || tr.Reward != nil {
				t.Errorf("reward.txt %q: status %s reward %v", content, tr.Status, tr.Reward)
			}
		})
	}
}

// blockAgent waits for its context to end, telling the test when it started.
type blockAgent struct{ started chan<- struct{} }

func (blockAgent) Name() string { return "block" }
func (a blockAgent) Run(ctx context.Context, in executor.AgentInput) (executor.AgentResult, error) {
	close(a.started)
	_, err := in.Sandbox.Exec(ctx, executor.ExecRequest{Cmd: []string{"sleep", "300"}, Timeout: 5 * time.Minute})
	return executor.AgentResult{}, err
}

func TestDockerCancelRemovesContainer(t *testing.T) {
	d := newTestDocker(t)
	task := writeTask(t, "greet", greetConfig(), greetFiles, nil)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go func() {
		<-started
		time.Sleep(300 * time.Millisecond) // let the exec begin
		cancel()
	}()
	tr, _ := runTrial(t, d, ctx, task, blockAgent{started: started}, "")
	if !tr.Cancelled || tr.Status != executor.StatusInterrupted || tr.Reward != nil {
		t.Fatalf("cancelled trial: cancelled %v status %s reward %v", tr.Cancelled, tr.Status, tr.Reward)
	}
	if !strings.Contains(strings.Join(tr.Errors, "\n"), "removed after cancellation") {
		t.Errorf("trace does not say the sandbox was removed: %v", tr.Errors)
	}
}

func startTestContainer(t *testing.T, d *Backend, task *benchmarks.Task, runID string) *Container {
	t.Helper()
	ctx := context.Background()
	img, _, err := d.EnsureImage(ctx, task)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Start(ctx, executor.ContainerSpec{Image: img, Task: task, RunID: runID, TrialID: "t-" + randomID(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func TestDockerNetwork(t *testing.T) {
	tests := []struct {
		name    string
		allow   bool
		network string
		onlyLo  bool
	}{
		{"task forbids internet", false, NetworkTask, true},
		{"runtime forbids internet", true, "none", true},
		{"task allows internet", true, NetworkTask, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := greetConfig()
			cfg.Environment.AllowInternet = tt.allow
			task := writeTask(t, "greet", cfg, greetFiles, nil)
			rt := testRuntime()
			rt.Network = tt.network
			c := startTestContainer(t, newTestDockerRT(t, rt), task, "net")
			res, err := c.Exec(context.Background(), executor.ExecRequest{Cmd: []string{"ls", "/sys/class/net"}, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			ifaces := strings.Fields(res.Stdout)
			onlyLo := len(ifaces) == 1 && ifaces[0] == "lo"
			if onlyLo != tt.onlyLo {
				t.Errorf("interfaces %v, want only lo: %v", ifaces, tt.onlyLo)
			}
		})
	}
}

func TestDockerContainerLockdown(t *testing.T) {
	d := newTestDocker(t)
	task := writeTask(t, "greet", greetConfig(), greetFiles, nil)
	c := startTestContainer(t, d, task, "lockdown")
	ins, err := d.cli.ContainerInspect(context.Background(), c.ID())
	if err != nil {
		t.Fatal(err)
	}
	hc := ins.HostConfig
	if hc.Memory != 512<<20 || hc.MemorySwap != hc.Memory || hc.NanoCPUs != 1e9 || hc.PidsLimit == nil || *hc.PidsLimit != 256 {
		t.Errorf("limits: memory %d swap %d cpus %d pids %v", hc.Memory, hc.MemorySwap, hc.NanoCPUs, hc.PidsLimit)
	}
	if ins.Config.Labels[LabelRun] != "lockdown" || ins.Config.Labels[LabelManaged] != "1" || ins.Config.WorkingDir != "/app" {
		t.Errorf("labels %v workdir %q", ins.Config.Labels, ins.Config.WorkingDir)
	}
	// NET_RAW is dropped, so a raw socket is refused even to root.
	res, err := c.Exec(context.Background(), executor.ExecRequest{
		Cmd:     []string{"python3", "-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)"},
		Timeout: 10 * time.Second,
	})
	if err != nil || res.ExitCode == 0 {
		t.Errorf("raw socket allowed: exit %d, %v", res.ExitCode, err)
	}
	// Killing every sleep (a common clean-up) must not stop the container.
	if _, err := c.Exec(context.Background(), executor.ExecRequest{Cmd: []string{"pkill", "sleep"}, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if res, err := c.Exec(context.Background(), executor.ExecRequest{Cmd: []string{"true"}, Timeout: 10 * time.Second}); err != nil || res.ExitCode != 0 {
		t.Errorf("container unusable after pkill sleep: %+v %v", res, err)
	}
	// A root shell can still do ordinary file work.
	res, err = c.Exec(context.Background(), executor.ExecRequest{
		Cmd:     []string{"bash", "-c", "useradd -m u1 && touch /tmp/f && chown u1 /tmp/f && chmod 600 /tmp/f && cat /tmp/f && su u1 -c 'id -un'"},
		Timeout: 20 * time.Second,
	})
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "u1" {
		t.Errorf("root file work failed: exit %d out %q err %q %v", res.ExitCode, res.Stdout, res.Stderr, err)
	}
}

func TestDockerExec(t *testing.T) {
	d := newTestDocker(t)
	task := writeTask(t, "greet", greetConfig(), greetFiles, nil)
	c := startTestContainer(t, d, task, "exec")
	ctx := context.Background()
	tests := []struct {
		name string
		req  executor.ExecRequest
		want executor.ExecResult
	}{
		{"demux and exit code", executor.ExecRequest{Cmd: []string{"bash", "-c", "echo out; echo err >&2; exit 7"}},
			executor.ExecResult{ExitCode: 7, Stdout: "out\n", Stderr: "err\n"}},
		{"working dir and env", executor.ExecRequest{Cmd: []string{"bash", "-c", "pwd; echo $FOO"}, Dir: "/tmp", Env: []string{"FOO=bar"}},
			executor.ExecResult{Stdout: "/tmp\nbar\n"}},
		{"image workdir", executor.ExecRequest{Cmd: []string{"pwd"}}, executor.ExecResult{Stdout: "/app\n"}},
		{"stdin", executor.ExecRequest{Cmd: []string{"cat"}, Stdin: strings.NewReader("piped")}, executor.ExecResult{Stdout: "piped"}},
		{"output cap", executor.ExecRequest{Cmd: []string{"bash", "-c", "head -c 5000 /dev/zero | tr '\\0' x"}, OutputCap: 100},
			executor.ExecResult{Stdout: strings.Repeat("x", 100), Truncated: true, StdoutBytes: 5000}},
		{"timeout", executor.ExecRequest{Cmd: []string{"sleep", "30"}, Timeout: 300 * time.Millisecond},
			executor.ExecResult{ExitCode: 124, TimedOut: true}},
		{"self-chosen 124 is no timeout", executor.ExecRequest{Cmd: []string{"bash", "-c", "exit 124"}},
			executor.ExecResult{ExitCode: 124}},
		{"user", executor.ExecRequest{Cmd: []string{"id", "-u"}, User: "65534"}, executor.ExecResult{Stdout: "65534\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.req.Timeout == 0 {
				tt.req.Timeout = 20 * time.Second
			}
			got, err := c.Exec(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			got.Duration = 0
			// Every byte written is counted, kept or not.
			if tt.want.StdoutBytes == 0 {
				tt.want.StdoutBytes = int64(len(tt.want.Stdout))
			}
			tt.want.StderrBytes = int64(len(tt.want.Stderr))
			if got != tt.want {
				t.Errorf("Exec = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDockerExecCancelKillsCommand(t *testing.T) {
	d := newTestDocker(t)
	task := writeTask(t, "greet", greetConfig(), greetFiles, nil)
	c := startTestContainer(t, d, task, "kill")
	for _, user := range []string{"", "65534"} {
		t.Run("user "+user, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(500*time.Millisecond, cancel)
			_, err := c.Exec(ctx, executor.ExecRequest{Cmd: []string{"bash", "-c", "sleep 123 & sleep 124; wait"}, Timeout: time.Minute, User: user})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			res, err := c.Exec(context.Background(), executor.ExecRequest{Cmd: []string{"ps", "-eo", "args"}, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(res.Stdout, "sleep 12") {
				t.Errorf("the cancelled command's processes survive:\n%s", res.Stdout)
			}
		})
	}
}

func TestDockerFiles(t *testing.T) {
	d := newTestDocker(t)
	task := writeTask(t, "greet", greetConfig(), greetFiles, nil)
	c := startTestContainer(t, d, task, "files")
	ctx := context.Background()

	if err := c.WriteFile(ctx, "", "/work/deep/dir/a.sh", []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := c.ReadFile(ctx, "", "/work/deep/dir/a.sh", 0)
	if err != nil || string(got) != "#!/bin/sh\necho hi\n" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	if res, err := c.Exec(ctx, executor.ExecRequest{Cmd: []string{"/work/deep/dir/a.sh"}, Timeout: 10 * time.Second}); err != nil || res.Stdout != "hi\n" {
		t.Errorf("written script does not run with its mode: %+v %v", res, err)
	}
	if err := c.WriteFile(ctx, "", "rel.txt", nil, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ReadFile(ctx, "", "/app/rel.txt", 0); err != nil || len(got) != 0 {
		t.Errorf("relative empty write: %q %v", got, err)
	}
	if got, err := c.ReadFile(ctx, "", "/app/name.txt", 3); err != nil || string(got) != "wor" {
		t.Errorf("capped read = %q, %v", got, err)
	}
	if _, err := c.ReadFile(ctx, "", "/nope", 0); err == nil || !strings.Contains(err.Error(), "No such file") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := c.ReadFile(ctx, "", "/app", 0); err == nil {
		t.Errorf("reading a directory did not fail")
	}

	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "sub", "x.sh"), []byte("echo x"), 0o755)
	os.WriteFile(filepath.Join(src, "y.txt"), []byte("y"), 0o644)
	if err := c.CopyDirIn(ctx, src, "/in/here"); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, executor.ExecRequest{Cmd: []string{"bash", "-c", "cat /in/here/y.txt; test -x /in/here/sub/x.sh && echo exec"}, Timeout: 10 * time.Second})
	if err != nil || res.Stdout != "yexec\n" {
		t.Errorf("CopyDirIn result: %+v %v", res, err)
	}
	var buf bytes.Buffer
	if err := c.CopyOut(ctx, "/in/here", &buf); err != nil {
		t.Fatal(err)
	}
	names := tarNames(t, &buf)
	if !slices.Contains(names, "here/y.txt") || !slices.Contains(names, "here/sub/x.sh") {
		t.Errorf("CopyOut entries = %v", names)
	}
}

// GC removes what a crashed run left behind (its process is gone), keeps
// the containers of a live run unless forced, and narrows to a run or task.
func TestDockerGCRemovesLeftover(t *testing.T) {
	d := newTestDocker(t)
	host, _ := os.Hostname()
	crashed := newTestDocker(t)
	crashed.owner = ownerLabel(host, 1<<30) // above any pid_max: no such process
	task := writeTask(t, "greet", greetConfig(), greetFiles, nil)
	runID := "gc-" + randomID(t)
	c := startTestContainer(t, crashed, task, runID) // never closed: a crashed run
	liveRun := "gc-live-" + randomID(t)
	live := startTestContainer(t, d, task, liveRun)
	ctx := context.Background()

	report, err := d.GC(ctx, GCOptions{RunID: runID, Task: "some-other-task"})
	if err != nil || len(report.Containers) != 0 {
		t.Errorf("GC narrowed to another task removed %v (%v)", report.Containers, err)
	}
	report, err = d.GC(ctx, GCOptions{RunID: runID, Task: "greet"})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Containers) != 1 || !strings.Contains(report.Containers[0], executor.ShortID(c.ID())) {
		t.Errorf("report = %+v, want the one leftover %s", report, executor.ShortID(c.ID()))
	}
	if left := listByLabel(t, d, LabelRun+"="+runID); len(left) != 0 {
		t.Errorf("leftover container survived GC")
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("Close after GC removed the container: %v", err)
	}

	report, err = d.GC(ctx, GCOptions{RunID: liveRun})
	if err != nil || len(report.Containers) != 0 || len(report.Kept) != 1 ||
		!strings.Contains(report.Kept[0], fmt.Sprintf("process %d is still running", os.Getpid())) {
		t.Errorf("GC of a live run: %+v (%v), want its container kept with the reason", report, err)
	}
	if left := listByLabel(t, d, LabelRun+"="+liveRun); len(left) != 1 {
		t.Fatalf("GC removed a live run's container")
	}
	report, err = d.GC(ctx, GCOptions{RunID: liveRun, Force: true})
	if err != nil || len(report.Containers) != 1 || !strings.Contains(report.Containers[0], executor.ShortID(live.ID())) {
		t.Errorf("forced GC of a live run: %+v (%v)", report, err)
	}
}

// Stale images of a task (earlier versions of its environment) go, its
// newest stays, and --images then removes the rest. Limited to one task id
// of this test's own, so images other tests use are never touched.
func TestDockerGCStaleImages(t *testing.T) {
	d := newTestDocker(t)
	ctx := context.Background()
	id := "gc-stale-" + randomID(t)
	var tags []string
	for i := range 2 {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond) // image creation times have whole seconds
		}
		task := writeTask(t, id, greetConfig(), greetFiles, map[string]string{
			"environment/Dockerfile": fmt.Sprintf("FROM %s\nLABEL test.version=%d\n", baseImage, i),
		})
		tag, built, err := d.EnsureImage(ctx, task)
		if err != nil || !built {
			t.Fatalf("build version %d: built %v, %v", i, built, err)
		}
		tags = append(tags, tag)
	}
	t.Cleanup(func() { d.GC(context.Background(), GCOptions{Images: true, Task: id}) })

	rep, err := d.GC(ctx, GCOptions{StaleImages: true, Task: id})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Images, tags[:1]) {
		t.Errorf("stale GC removed %v, want only the older %v", rep.Images, tags[:1])
	}
	for i, tag := range tags {
		ok, err := d.imageExists(ctx, tag)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (i == 1) {
			t.Errorf("image %s present = %v after stale GC", tag, ok)
		}
	}
	rep, err = d.GC(ctx, GCOptions{Images: true, Task: id})
	if err != nil || !slices.Equal(rep.Images, tags[1:]) {
		t.Errorf("GC of the task's images removed %v (%v), want %v", rep.Images, err, tags[1:])
	}
}

func TestNewUnreachableEngine(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "absent.sock")
	_, err := New(context.Background(), config.ExecutorRuntime{DockerHost: "unix://" + sock})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the Docker engine at unix://"+sock) ||
		!strings.Contains(err.Error(), "is it running?") {
		t.Fatalf("err = %v", err)
	}
}

func TestDockerConcurrentEnsureImageBuildsOnce(t *testing.T) {
	d := newTestDocker(t)
	task := writeTask(t, "concurrent", greetConfig(), greetFiles, map[string]string{"environment/nonce.txt": randomID(t)})
	const n = 3
	type result struct {
		img   string
		built bool
		err   error
	}
	results := make(chan result, n)
	for range n {
		go func() {
			img, built, err := d.EnsureImage(context.Background(), task)
			results <- result{img, built, err}
		}()
	}
	builds := 0
	var img string
	for range n {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		img = r.img
		if r.built {
			builds++
		}
	}
	d.cli.ImageRemove(context.Background(), img, image.RemoveOptions{Force: true, PruneChildren: true})
	if builds != 1 {
		t.Errorf("%d of %d concurrent EnsureImage calls built the image, want 1", builds, n)
	}
}

func TestDockerMaxContainers(t *testing.T) {
	rt := testRuntime()
	rt.MaxContainers = 1
	d := newTestDockerRT(t, rt)
	task := writeTask(t, "greet", greetConfig(), greetFiles, nil)
	first := startTestContainer(t, d, task, "slots")
	img, _, err := d.EnsureImage(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if c, err := d.Start(ctx, executor.ContainerSpec{Image: img, Task: task, RunID: "slots"}); err == nil {
		c.Close(context.Background())
		t.Fatalf("a second container started beyond max_containers 1")
	} else if !strings.Contains(err.Error(), "free container slot") {
		t.Errorf("err = %v", err)
	}
	first.Close(context.Background())
	second, err := d.Start(context.Background(), executor.ContainerSpec{Image: img, Task: task, RunID: "slots"})
	if err != nil {
		t.Fatalf("slot not freed by Close: %v", err)
	}
	second.Close(context.Background())
}

func TestDockerBaseImageChangeRebuilds(t *testing.T) {
	d := newTestDocker(t)
	ctx := context.Background()
	base := "harness-test-base-" + randomID(t) + ":1"
	buildBase := func(label string) {
		t.Helper()
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM "+baseImage+"\nLABEL variant="+label+"\n"), 0o644)
		if _, err := d.build(ctx, "test-base", buildSpec{Context: dir, Dockerfile: "Dockerfile"}, base); err != nil {
			t.Fatal(err)
		}
	}
	var tags []string
	t.Cleanup(func() {
		for _, ref := range append(tags, base) {
			d.cli.ImageRemove(context.Background(), ref, image.RemoveOptions{Force: true, PruneChildren: true})
		}
	})
	task := writeTask(t, "rebase", greetConfig(), nil, map[string]string{"environment/Dockerfile": "FROM " + base + "\n"})
	for _, variant := range []string{"one", "two"} {
		buildBase(variant)
		img, built, err := d.EnsureImage(ctx, task)
		if err != nil {
			t.Fatal(err)
		}
		tags = append(tags, img)
		if !built {
			t.Errorf("base variant %s: image %s not built", variant, img)
		}
	}
	if tags[0] == tags[1] {
		t.Errorf("rebuilt base image kept the task tag %s", tags[0])
	}
}
