package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mediated-coevo/harness/executor"
)

// The verifier on a root image runs in one exec (tests in on stdin, logs
// out on stdout): fixtures and modes arrive, test.sh's exit code and output
// are reported, and output past the cap loses neither the code nor the logs.
func TestDockerStreamedVerifier(t *testing.T) {
	t.Parallel() // see runTrial
	d := newTestDocker(t)
	task := writeTask(t, "greet", greetConfig(), greetFiles, map[string]string{
		"tests/fixture.txt": "fixture-content\n",
		"tests/helper.sh":   "#!/bin/bash\necho helper ran\n",
		"tests/test.sh": "#!/bin/bash\nhead -c 200000 /dev/zero | tr '\\0' x\necho\n" +
			"grep -q fixture-content /tests/fixture.txt && /tests/helper.sh && echo 0.5 > /logs/verifier/reward.txt\nexit 5\n",
	})
	c := startTestContainer(t, d, task, "streamed")
	logDir := filepath.Join(t.TempDir(), "verifier")
	var execs int
	r := executor.RunVerifier(context.Background(), countingSandbox{c, &execs}, task, executor.VerifyOptions{Timeout: 30 * time.Second, LogDir: logDir, OutputCap: 1024})
	if r.Err != nil || r.Reward != 0.5 {
		t.Fatalf("reward %v err %v output %q", r.Reward, r.Err, executor.Clip(r.Output, 300))
	}
	if r.ExitCode != 5 || r.TimedOut {
		t.Errorf("exit code %d timed out %v, want test.sh's 5", r.ExitCode, r.TimedOut)
	}
	if len(r.Output) > 1024 {
		t.Errorf("output of %d bytes passed the 1024-byte cap", len(r.Output))
	}
	if r.Stream.Produced < 200000 || r.Stream.Kept != int64(len(r.Output)) {
		t.Errorf("stream record %+v: want over 200000 bytes produced and the %d kept", r.Stream, len(r.Output))
	}
	if data, err := os.ReadFile(filepath.Join(logDir, "test-stdout.txt")); err != nil || !strings.Contains(string(data), "helper ran") || len(data) < 200000 {
		t.Errorf("test-stdout.txt: %d bytes, %v", len(data), err)
	}
	if execs != 1 {
		t.Errorf("the verifier took %d execs, want 1", execs)
	}
}

// An image without tar still gets verified, through the engine's copy API.
func TestDockerVerifierWithoutTar(t *testing.T) {
	t.Parallel() // see runTrial
	d := newTestDocker(t)
	task := writeTask(t, "greet-no-tar", greetConfig(), greetFiles, map[string]string{
		"environment/Dockerfile": greetFiles["environment/Dockerfile"] + "RUN rm -f /bin/tar /usr/bin/tar\n",
	})
	tr, jobDir := runTrial(t, d, context.Background(), task, executor.OracleAgent{}, executor.RewardModeVerifier)
	if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 1 {
		t.Fatalf("oracle without tar: status %s reward %v errors %v", tr.Status, tr.Reward, tr.Errors)
	}
	if _, err := os.Stat(filepath.Join(jobDir, "verifier", "ctrf.json")); err != nil {
		t.Errorf("logs not copied out: %v", err)
	}
}

// countingSandbox counts the execs of a sandbox whose default user is root.
type countingSandbox struct {
	*Container
	n *int
}

func (s countingSandbox) Exec(ctx context.Context, req executor.ExecRequest) (executor.ExecResult, error) {
	*s.n++
	return s.Container.Exec(ctx, req)
}

// [verifier] user decides who runs test.sh and [agent] user who runs the
// oracle's solve.sh, whatever the image's default user is.
func TestDockerVerifierAndOracleUsers(t *testing.T) {
	t.Parallel() // see runTrial
	d := newTestDocker(t)
	// solve.sh records who ran it; test.sh scores 1 only when it runs as
	// the expected user and sees the solver's record.
	files := map[string]string{
		"solution/solve.sh": "#!/bin/bash\nid -un > /tmp/solver\n",
		"tests/test.sh": "#!/bin/bash\n" +
			"if [ \"$(id -un)\" = \"$WANT_TESTER\" ] && [ \"$(cat /tmp/solver)\" = \"$WANT_SOLVER\" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n" +
			"echo \"tester $(id -un) solver $(cat /tmp/solver)\"\n",
	}
	rootImage := "FROM " + baseImage + "\nRUN useradd -m tester && useradd -m solver\n"
	userImage := rootImage + "USER solver\n"
	tests := []struct {
		name         string
		dockerfile   string
		verifierUser string
		agentUser    string
		wantTester   string
		wantSolver   string
	}{
		{"root image, defaults", rootImage, "", "", "root", "root"},
		{"root image, named users", rootImage, "tester", "solver", "tester", "solver"},
		{"non-root image, defaults", userImage, "", "", "solver", "solver"},
		{"non-root image, root verifier", userImage, "root", "", "root", "solver"},
		{"non-root image, uid 0 verifier", userImage, "0", "", "root", "solver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := greetConfig()
			cfg.Verifier.User = tt.verifierUser
			cfg.Agent.User = tt.agentUser
			cfg.Verifier.Env = map[string]string{"WANT_TESTER": tt.wantTester, "WANT_SOLVER": tt.wantSolver}
			overrides := map[string]string{"environment/Dockerfile": tt.dockerfile}
			for k, v := range files {
				overrides[k] = v
			}
			task := writeTask(t, "users", cfg, greetFiles, overrides)
			tr, _ := runTrial(t, d, context.Background(), task, executor.OracleAgent{}, executor.RewardModeVerifier)
			if tr.Status != executor.StatusScored || tr.Reward == nil || *tr.Reward != 1 {
				t.Errorf("status %s reward %v; verifier said %q; errors %v", tr.Status, tr.Reward, strings.TrimSpace(tr.VerifierOutput), tr.Errors)
			}
		})
	}
}

// Only the verifier's own script can report that it failed to prepare its
// directories: test.sh printing the old fixed text, even with the prepare
// code as its exit code, keeps its reward, while a real failure (the agent
// turned /logs into a file) is still a verifier error.
func TestDockerVerifierIgnoresFakePrepareMarker(t *testing.T) {
	t.Parallel() // see runTrial
	d := newTestDocker(t)
	fake := "#!/bin/bash\necho 'harness: could not prepare the verifier directories' >&2\n" +
		"echo 'harness: could not prepare the verifier directories'\necho 1 > /logs/verifier/reward.txt\nexit 97\n"
	noTar := greetFiles["environment/Dockerfile"] + "RUN rm -f /bin/tar /usr/bin/tar\n"
	tests := []struct {
		name       string
		dockerfile string
		setup      string // run in the container before the verifier
		wantErr    string
	}{
		{"streamed, fake marker", "", "", ""},
		{"copying, fake marker", noTar, "", ""},
		{"streamed, real failure", "", "rm -rf /logs && touch /logs", "prepare"},
		{"copying, real failure", noTar, "rm -rf /logs && touch /logs", "prepare"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"tests/test.sh": fake}
			if tt.dockerfile != "" {
				files["environment/Dockerfile"] = tt.dockerfile
			}
			task := writeTask(t, "fake-marker", greetConfig(), greetFiles, files)
			c := startTestContainer(t, d, task, "fake-marker")
			ctx := context.Background()
			if tt.setup != "" {
				if res, err := c.Exec(ctx, executor.ExecRequest{Cmd: []string{"sh", "-c", tt.setup}, Timeout: 10 * time.Second}); err != nil || res.ExitCode != 0 {
					t.Fatalf("setup: %+v %v", res, err)
				}
			}
			r := executor.RunVerifier(ctx, c, task, executor.VerifyOptions{Timeout: 30 * time.Second, LogDir: filepath.Join(t.TempDir(), "verifier")})
			if tt.wantErr != "" {
				if r.Err == nil || !strings.Contains(r.Err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one about %q", r.Err, tt.wantErr)
				}
				return
			}
			if r.Err != nil || r.Reward != 1 || r.ExitCode != 97 {
				t.Fatalf("reward %v exit code %d err %v; want test.sh's reward 1 and exit code 97", r.Reward, r.ExitCode, r.Err)
			}
		})
	}
}
