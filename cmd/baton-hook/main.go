// Command baton-hook answers a harness's hook exactly as `baton hook`
// does, and starts faster: a harness starts a hook process on every tool
// call and every stop, and most of what `baton` links (SQLite, River,
// PostgreSQL, GitHub, MCP, the dashboard) is pages a hook would touch only
// to start. It links the hook's own code and nothing else. `go install
// ./cmd/...`, the release archives, packages and images put it beside
// baton; `baton install` writes it into the harness's settings when it
// is there.
//
//	echo '{"session_id":"s1","cwd":"'"$PWD"'"}' | baton-hook session-start --harness claude
//	baton-hook --version
package main

import (
	"context"
	"os"
	"time"

	"github.com/baton-agent/baton/internal/buildinfo"
	"github.com/baton-agent/baton/internal/harness"
	"github.com/baton-agent/baton/internal/hook"
	"github.com/baton-agent/baton/internal/sandbox"
)

// version and commit are set at link time by release builds, as baton's
// are: a baton-hook left behind by an older install says which it is.
var version, commit = "", ""

func main() {
	sandbox.Main(sandbox.Hooks{}) // as the box's init, runs it and never returns
	wd, err := os.Getwd()
	if err != nil {
		wd = "."
	}
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "-h", "--help":
			os.Stdout.WriteString("baton-hook <session-start|stop|post-tool-use|pre-compact> --harness claude|codex|droid|pi [--root DIR]\nbaton-hook --version\n\nAnswers a harness hook as `baton hook` does; see `baton hook --help`.\n")
			return
		case "--version":
			os.Stdout.WriteString(buildinfo.Line(harness.HookBinary, buildinfo.Version(version), buildinfo.Commit(commit)) + "\n")
			return
		}
	}
	os.Exit(hook.Main(context.Background(), "baton-hook", os.Args[1:], os.Stdin, os.Stdout, os.Stderr,
		hook.Env{Getenv: os.Getenv, Now: time.Now, WorkDir: wd}, ""))
}
