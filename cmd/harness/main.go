// Command harness runs and measures experiments on mediated co-evolution of
// LLM agents. See `harness --help` and docs/.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/mediated-coevo/harness/cmd/harness/cli"
	"github.com/mediated-coevo/harness/cmd/harness/factory"
)

func main() {
	quietLibraryLogs()
	// The first SIGINT/SIGTERM cancels ctx so the run can remove its
	// containers, save its state and exit 130. Releasing the signals right
	// after lets a second one kill a process that is stuck.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := cli.Run(ctx, factory.New(), os.Args[1:])
	stop()
	os.Exit(code)
}

// quietLibraryLogs stops libraries that log through logrus's process-wide
// logger (the compose-spec reader) from writing raw lines onto stderr, in
// the middle of the progress display and of --json output. What they warn
// about, the harness reports itself, as a task's warnings. logrus has one
// global logger, so this is done once, here, before any command runs.
func quietLibraryLogs() {
	logrus.SetOutput(io.Discard)
}
