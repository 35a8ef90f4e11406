package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// asHarnessEnv makes this test binary behave as the harness program: the
// Slurm tests' array elements run it so (see harnessExecutable).
const asHarnessEnv = "HARNESS_CLI_TEST_AS_HARNESS"

func TestMain(m *testing.M) {
	if os.Getenv(asHarnessEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		go func() {
			<-ctx.Done()
			stop()
		}()
		f := engineFactory()
		f.IO = IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
		code := Run(ctx, f, os.Args[1:])
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
