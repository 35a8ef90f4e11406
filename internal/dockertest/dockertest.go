// Package dockertest decides what a test that needs a Docker engine does
// when none is usable: skip on a developer machine, fail where the engine is
// required (CI sets HARNESS_REQUIRE_DOCKER=1), so integration tests can never
// pass there by not running. It also names the base image those tests build
// on and checks that the engine has it.
package dockertest

import (
	"context"
	"fmt"
	"os"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
)

// BaseImage is the image the Docker tests build their tasks on;
// benchmarks/baseimage/build.sh (make base-image) builds it.
const BaseImage = "harness-base:bookworm"

// RequireEnv names the variable that turns skips into failures.
const RequireEnv = "HARNESS_REQUIRE_DOCKER"

// Unavailable ends t: a failure when RequireEnv is "1", else a skip.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (%s=1: Docker tests must run here)", msg, RequireEnv)
	}
	t.Skip(msg)
}

// RequireImage ends t through Unavailable when the engine at host (empty:
// the DOCKER_* environment) does not have the image ref, and fails it when
// the engine cannot be asked.
func RequireImage(t testing.TB, host, ref string) {
	t.Helper()
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		t.Fatalf("configure the Docker client: %v", err)
	}
	defer cli.Close()
	_, err = cli.ImageInspect(context.Background(), ref)
	switch {
	case cerrdefs.IsNotFound(err):
		Unavailable(t, "%s is absent: build it with benchmarks/baseimage/build.sh before running the Docker tests", ref)
	case err != nil:
		t.Fatalf("inspect image %s: %v", ref, err)
	}
}
