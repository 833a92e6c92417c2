package egress

import (
	"github.com/baton-agent/baton/internal/sandbox"
)

// Hooks give sandbox's boxes their network: Init in the box's init,
// Open outside it for each start. A program passes them to sandbox.Main;
// one that does not (baton-hook, whose confined commands serve an agent
// session that is not boxed) builds boxes on this machine's network.
func Hooks() sandbox.Hooks {
	return sandbox.Hooks{Network: Init, OpenNetwork: openNetwork}
}

// openNetwork opens a box's proxy for n.
func openNetwork(n sandbox.Network) (sandbox.NetworkStart, error) {
	b, err := Open(n.Allow, n.OnRefuse)
	if err != nil {
		return sandbox.NetworkStart{}, err
	}
	return sandbox.NetworkStart{Spec: b.Spec(), Env: b.Env(), Paths: []string{b.dir}, Close: func() { _ = b.Close() }}, nil
}
