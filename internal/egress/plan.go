package egress

import (
	"github.com/baton-agent/baton/internal/netpolicy"
	"net/netip"
	"slices"
	"strconv"
)

// Plan is what the box's init needs to run its side of the network: it is
// made outside, where the policy is, and carries no policy itself.
type Plan struct {
	// Socket is the path of the Proxy's unix socket.
	Socket string `json:"socket"`
	// ProxyPort is the port of the HTTP proxy endpoint on the box's
	// 127.0.0.1, which the proxy variables name.
	ProxyPort uint16 `json:"proxy_port"`
	// Endpoints are the addresses the box may reach by address (an
	// allowed loopback endpoint, an address the allowlist names), each
	// listened on at the same address inside.
	Endpoints []netip.AddrPort `json:"endpoints,omitempty"`
}

// DefaultProxyPort is the in-box proxy endpoint's port unless an allowed
// loopback endpoint takes it.
const DefaultProxyPort = 3128

// NewPlan is the plan for a box whose proxy listens at socket and allows
// what a allows.
func NewPlan(socket string, a netpolicy.Allowlist) Plan {
	p := Plan{Socket: socket, Endpoints: a.Endpoints(), ProxyPort: DefaultProxyPort}
	for p.takes(p.ProxyPort) {
		p.ProxyPort++
	}
	return p
}

// takes reports whether an allowed endpoint at 127.0.0.1 uses port.
func (p Plan) takes(port uint16) bool {
	return slices.Contains(p.Endpoints, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port))
}

// Env is what a boxed process needs to find the proxy endpoint: the
// proxy variables in both cases (curl reads only the lower-case
// http_proxy; others only the upper), with the box's own loopback left
// direct, where an allowed loopback endpoint has a listener of its own
// and a test server the agent starts answers.
func (p Plan) Env() []string {
	u := "http://127.0.0.1:" + strconv.Itoa(int(p.ProxyPort))
	const direct = "localhost,127.0.0.1,::1"
	return []string{
		"HTTPS_PROXY=" + u, "https_proxy=" + u,
		"HTTP_PROXY=" + u, "http_proxy=" + u,
		"NO_PROXY=" + direct, "no_proxy=" + direct,
		// A proxy of this machine's network is out of the box's reach.
		"ALL_PROXY=", "all_proxy=",
	}
}

// ResolvConf is the resolv.conf the box's mount namespace puts in place
// of the system's: the stub is the only name server, with no search
// domains (a short name is not sent out under the machine's domain).
const ResolvConf = "# baton: the box's DNS stub answers only names its allowlist has\nnameserver 127.0.0.1\noptions attempts:1 timeout:5\n"
