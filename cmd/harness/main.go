// Command harness runs and measures experiments on mediated co-evolution of
// LLM agents. See `harness --help` and docs/.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mediated-coevo/harness/cmd/harness/cli"
	"github.com/mediated-coevo/harness/cmd/harness/factory"
)

func main() {
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
