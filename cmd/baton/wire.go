package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"golang.org/x/term"

	"github.com/baton-agent/baton/internal/buildinfo"
	"github.com/baton-agent/baton/internal/cli"
	"github.com/baton-agent/baton/internal/fsstore"
	"github.com/baton-agent/baton/internal/github"
)

// version and commit are set at link time by release builds
// (-ldflags "-X main.version=v1.2.3 -X main.commit=<sha>"); without them
// the module version or "devel", and the commit go build recorded, are
// reported.
var version, commit = "", ""

// wire builds the factory: the only place that reads the process
// environment and chooses concrete adapters (the context store, databases,
// the queue, forges, GitHub access). Each is opened when a command first
// asks for it, so `baton hook` opens the context store and nothing else.
func wire() *cli.Factory {
	wd, err := os.Getwd()
	if err != nil {
		wd = "."
	}
	exe, err := os.Executable()
	if err == nil {
		if p, err := filepath.EvalSymlinks(exe); err == nil {
			exe = p
		}
	}
	// baton's own secrets may come from files instead of the environment;
	// every other variable is read as it is.
	sec := cli.NewSecrets(os.Getenv)
	// One App cache for the process: its installations and their tokens
	// are shared by every client.
	gh := github.Access{Getenv: sec.Getenv, UserAgent: "baton/" + buildinfo.Version(version), Apps: &github.Apps{}}
	dw := deliveryWiring{getenv: sec.Getenv, secretErr: sec.ErrOf, workDir: wd, github: gh, warn: os.Stderr}
	return &cli.Factory{
		OpenStore: func(root string) *fsstore.Store {
			return fsstore.Open(root, fsstore.Options{Now: time.Now})
		},
		Deliveries:           dw.open,
		Serve:                dw.serve,
		ServeHTTP:            dw.serveHTTP,
		DeliveriesConfigured: dw.configured,
		DataDir:              dw.dataDir,
		GitHub:               dw.githubClient,
		IO: cli.IO{
			In:     os.Stdin,
			Out:    os.Stdout,
			Err:    os.Stderr,
			InTTY:  isTerminal(os.Stdin),
			OutTTY: isTerminal(os.Stdout),
		},
		Now:        time.Now,
		Getenv:     sec.Getenv,
		Secrets:    sec,
		WorkDir:    wd,
		Version:    buildinfo.Version(version),
		Commit:     buildinfo.Commit(commit),
		Executable: exe,

		DynamicallyLinked: builtWithCgo(),
	}
}

// builtWithCgo reports whether this binary links libc dynamically.
func builtWithCgo() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "CGO_ENABLED" {
				return s.Value == "1"
			}
		}
	}
	return false
}

// isTerminal reports whether f is a terminal (not merely a character
// device such as /dev/null): hooks run with pipes and must never wait on
// a TTY, and confirmations need a real one.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
