package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/github"
	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/sandbox"
)

// sandboxOptions are the flags of commands that run agents and check
// commands: serve, worker, delivery run, run step and run loop.
type sandboxOptions struct {
	mode        string
	read, write []string
	procs       int
	// The box's network: entries added to the allowlist, and whether the
	// default registries and github.com are on it.
	egressAllow    []string
	egressDefaults string
}

func (o *sandboxOptions) register(fl *pflag.FlagSet) {
	fl.StringVar(&o.mode, "sandbox", "", "confine agents and check commands in baton's box: auto (what this host allows), required (refuse to run them without every defence) or off (default $BATON_SANDBOX, else auto)")
	fl.StringArrayVar(&o.read, "sandbox-read", nil, "a `path` confined agents and commands may also read (repeatable; also $BATON_SANDBOX_READ, a list)")
	fl.StringArrayVar(&o.write, "sandbox-write", nil, "a `path` confined agents and commands may also write, e.g. where a deploy command writes (repeatable; also $BATON_SANDBOX_WRITE, a list)")
	fl.StringArrayVar(&o.egressAllow, "egress-allow", nil, "a host the box's network may also reach: host, host:port, *.domain, an address with its port, or a URL (repeatable; also $"+netpolicy.AllowVar+", a list)")
	fl.StringVar(&o.egressDefaults, "egress-defaults", "", "on: the box reaches the package registries and github.com besides its agent's model API and the forge; off: not (default $"+netpolicy.DefaultsVar+", else on)")
	fl.IntVar(&o.procs, "sandbox-procs", 0, fmt.Sprintf("at most this many processes and threads in one agent's or command's box (default $BATON_SANDBOX_PROCS, else %d)", sandbox.DefaultMaxProcs))
}

// confinement is what the flags and the environment ask for. The files
// baton's secrets came from are always denied.
func (o sandboxOptions) confinement(f *Factory) (sandbox.Confinement, error) {
	c, err := sandbox.Configure(f.env, f.WorkDir, o.mode, o.read, o.write)
	if err != nil {
		return sandbox.Confinement{}, usageError("%s", err.Error())
	}
	if o.procs < 0 {
		return sandbox.Confinement{}, usageError("--sandbox-procs must be at least 1")
	}
	if o.procs > 0 {
		c.MaxProcs = o.procs
	}
	if f.Secrets != nil {
		c.Policy.Deny = f.Secrets.Paths()
	}
	forge, err := forgeHosts(f.env)
	if err != nil {
		return sandbox.Confinement{}, err
	}
	c.Network.Allow, err = netpolicy.Configure(f.env, netpolicy.Settings{Allow: o.egressAllow, Defaults: o.egressDefaults, Forge: forge})
	if err != nil {
		return sandbox.Confinement{}, usageError("%s", baton.ErrorMessage(err))
	}
	return c, nil
}

// forgeHosts are the forge hosts baton is configured for besides
// github.com's, for the box's allowlist: each GitHub Enterprise host
// with its API host, and the API URL baton uses for github.com.
func forgeHosts(getenv func(string) string) ([]string, error) {
	hosts, err := github.HostsFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range hosts.Enterprise() {
		out = append(out, h)
		if !strings.Contains(h, ":") {
			out = append(out, "api."+h)
		}
	}
	if u := getenv(github.APIURLVar); u != "" {
		out = append(out, u)
	}
	return out, nil
}

// sandboxNotice says at start whether what the command runs for agents
// will be confined, with a line per defence of the box saying whether
// this host enforces it, and what an unconfined agent can reach.
func sandboxNotice(w io.Writer, c sandbox.Confinement) {
	st := c.Status()
	switch {
	case c.Mode == sandbox.ModeOff:
		fmt.Fprintf(w, "warning: --sandbox=off: %s\n", sandbox.Exposure)
		return
	case st.Available():
		fmt.Fprintf(w, "sandbox: agents and check commands are confined (%s):\n", st)
	case c.Mode == sandbox.ModeRequired:
		fmt.Fprintf(w, "sandbox: %s; --sandbox=required: no agent or check command will run\n", st.Why)
	default:
		fmt.Fprintf(w, "warning: agents cannot be confined here (%s): %s; --sandbox=off says that is intended, --sandbox=required refuses to run them\n", st.Why, sandbox.Exposure)
	}
	for _, l := range st.Lines() {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if missing := st.Missing(); len(missing) > 0 && st.Available() {
		if c.Mode == sandbox.ModeRequired {
			fmt.Fprintf(w, "sandbox: --sandbox=required and %d defence(s) not enforced here: no agent or check command will run\n", len(missing))
		} else {
			fmt.Fprintf(w, "warning: sandbox: %d defence(s) not enforced here (NO above); --sandbox=required refuses to run without them\n", len(missing))
		}
	}
}
