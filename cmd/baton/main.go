// Command baton gives coding agents the right context at every step.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/baton-agent/baton/internal/cli"
	"github.com/baton-agent/baton/internal/egress"
	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/sandbox/boxinit"
)

func main() {
	h := egress.Hooks()
	h.Init = boxinit.Beside(sandbox.InitProgram) // its boxes' init, when the one beside baton is the same build
	sandbox.Main(h)                              // as the box's init, runs it and never returns
	harden()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], wire())
	stop()
	os.Exit(code)
}
