// Command baton gives coding agents the right context at every step.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/baton-agent/baton/internal/cli"
)

func main() {
	harden()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], wire())
	stop()
	os.Exit(code)
}
