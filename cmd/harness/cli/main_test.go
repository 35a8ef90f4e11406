package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// asHarnessEnv makes this test binary behave as the harness program: the
// Slurm tests' array elements run it so (see slurmFactory).
const asHarnessEnv = "HARNESS_CLI_TEST_AS_HARNESS"

// stopDelayEnv, a duration, makes the binary acting as the harness react
// to SIGINT or SIGTERM only that long after it: an element whose trials
// take that long to stop, so that a test can tell an element given time to
// save its row from one killed after the cluster's KillWait.
const stopDelayEnv = "HARNESS_CLI_TEST_STOP_DELAY"

func TestMain(m *testing.M) {
	if os.Getenv(asHarnessEnv) == "1" {
		os.Exit(runAsHarness())
	}
	os.Exit(m.Run())
}

// runAsHarness is the harness's main on this binary: the first SIGINT or
// SIGTERM cancels the command (after the stop delay, if set) and releases
// the signals, so that a second one kills the process.
func runAsHarness() int {
	var delay time.Duration
	if v := os.Getenv(stopDelayEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "error: %s=%q is not a duration (like 6s): %v\n", stopDelayEnv, v, err)
			return ExitUsage
		}
		delay = d
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
			return
		}
		signal.Stop(sigs)
		time.Sleep(delay)
		cancel()
	}()
	f := engineFactory()
	f.IO = IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	return Run(ctx, f, os.Args[1:])
}
