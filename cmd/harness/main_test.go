package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediated-coevo/harness/cmd/harness/cli"
	"github.com/mediated-coevo/harness/cmd/harness/factory"
)

const validateDirEnv = "HARNESS_TEST_VALIDATE_DIR"

// TestValidateHelperProcess is the program as main starts it, validating
// the task the parent names. It does nothing in a normal test run.
func TestValidateHelperProcess(t *testing.T) {
	dir := os.Getenv(validateDirEnv)
	if dir == "" {
		t.Skip("helper process for TestComposeLibraryWritesNothingRawOnStderr")
	}
	quietLibraryLogs()
	os.Exit(cli.Run(context.Background(), factory.New(), []string{"tasks", "validate", dir}))
}

// A compose file with the obsolete version attribute makes the compose
// library log a warning through logrus; the program reports it as the
// task's warning on stdout and nothing raw reaches stderr.
func TestComposeLibraryWritesNothingRawOnStderr(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "versioned")
	files := map[string]string{
		"task.toml":                       "version = \"1.0\"\n[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\n",
		"instruction.md":                  "Write hello to /app/out.txt.\n",
		"environment/Dockerfile":          "FROM harness-base:bookworm\n",
		"environment/docker-compose.yaml": "version: \"3.8\"\nservices:\n  main:\n    build: .\n",
		"tests/test.sh":                   "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
		"solution/solve.sh":               "#!/bin/bash\necho hello > /app/out.txt\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestValidateHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), validateDirEnv+"="+dir, "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tasks validate: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "level=") || strings.Contains(s, "obsolete") {
		t.Errorf("a library's log line reached stderr:\n%s", s)
	}
	if !strings.Contains(stdout.String(), "version attribute is obsolete") {
		t.Errorf("stdout lacks the task's warning about version:\n%s", stdout.String())
	}
}
