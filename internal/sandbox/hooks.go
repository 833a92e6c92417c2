package sandbox

import (
	"encoding/json"
	"os"
	"sync/atomic"
)

// Hooks are what other packages add to the box. Main takes them; a
// program that sets none builds boxes on this machine's network.
type Hooks struct {
	// Network, when set, runs in the init inside the box's namespaces
	// (its own network namespace among them), before the process starts,
	// with the spec OpenNetwork made for this box and the files it handed
	// on. An error stops the start; stop, when not nil, runs once the
	// process ended, before the init exits.
	Network func(spec json.RawMessage, files []*os.File) (stop func(), err error)
	// OpenNetwork, when set, makes a box's way out of its network
	// namespace, outside the box, for each start whose Confinement has a
	// network policy (internal/egress: a proxy that allows only
	// n.Allow).
	OpenNetwork func(n Network) (NetworkStart, error)
	// Init, when set, finds a program to start as the box's init in
	// place of this one, which starts faster than a program that links
	// more than the init needs (internal/sandbox/boxinit: the
	// baton-box-init beside baton, when it is the same build). It returns
	// a descriptor of the very program to run, which the box's start
	// execs, or -1 and why this program is its own init. It is called
	// once, at the first box.
	Init func() (fd int, choice InitChoice)
}

// NetworkStart is one box's network as OpenNetwork made it.
type NetworkStart struct {
	// Spec and Files are what the init's Hooks.Network gets.
	Spec  json.RawMessage
	Files []*os.File
	// Env is set in the process's environment (the proxy variables).
	Env []string
	// Paths are what the init's Hooks.Network opens by path (its
	// proxy's socket): the box shows them even where it hides the
	// directory they are in (see socketDirs).
	Paths []string
	// Close runs after the box ended: what it refused is recorded by
	// then.
	Close func()
}

// InitProgram is the init's argv[0], by which Main knows itself and ps
// shows it, and the name of the program that is only a box's init
// (cmd/baton-box-init), which baton names in Hooks.Init.
const InitProgram = "baton-box-init"

var (
	hooks      Hooks
	mainCalled atomic.Bool // Main returned: this program can be the init
)

// NamespacesVar turns the box's namespaces off when "off": baton then
// builds the box as on a host without user namespaces, to test that path
// or to run where namespaces misbehave.
const NamespacesVar = "BATON_SANDBOX_NAMESPACES"
