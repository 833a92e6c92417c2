// Command baton-box-init is the init of the boxes baton confines agents
// and commands in. baton starts it in place of itself when it lies beside
// baton's executable and is the same build (`baton doctor` says which
// init boxes use, and why): it links only the box's init and the box's
// side of its network, so it starts in a fraction of baton's time, and a
// delivery starts a dozen boxes. `go install ./cmd/...`, the release
// archives, packages and images put it beside baton. It is not run by
// hand.
//
//	baton-box-init --version
package main

import (
	"os"

	"github.com/baton-agent/baton/internal/buildinfo"
	"github.com/baton-agent/baton/internal/egress"
	"github.com/baton-agent/baton/internal/sandbox"
)

// version and commit are set at link time by release builds, as baton's
// are, and must be the same as baton's for baton to use this program.
var version, commit = "", ""

func main() {
	sandbox.Main(sandbox.Hooks{Network: egress.Init}) // as the box's init, runs it and never returns
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		os.Stdout.WriteString(buildinfo.Line(sandbox.InitProgram, buildinfo.Version(version), buildinfo.Commit(commit)) + "\n")
		return
	}
	os.Stderr.WriteString("baton-box-init is the init of the boxes baton starts, not run by hand; `baton doctor` says whether baton uses it.\n")
	os.Exit(2)
}
