package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// How a box's network is confined on this host.
type netMode int

const (
	netOpen      netMode = iota // this machine's network, as the process's user has it
	netNamespace                // a network namespace of its own behind the proxy (Hooks.OpenNetwork)
	netPorts                    // Landlock: TCP connections to the allowed ports only
)

// netMode says how c's network is confined here, and when not by a
// namespace, why.
func (c Confinement) netMode(ns bool) (netMode, string) {
	h := probeHost()
	var why string
	switch {
	case c.Network.Open:
		return netOpen, "left open: the box uses this machine's network"
	case !ns:
		why = "no network namespace without the box's user namespace"
	case h.netErr != nil:
		why = "no network namespace here: " + h.netErr.Error()
	case hooks.OpenNetwork == nil:
		why = "this program builds no network for its boxes"
	default:
		return netNamespace, ""
	}
	if _, all := c.Network.Allow.TCPPorts(); h.abi >= 4 && !all {
		return netPorts, why
	}
	return netOpen, why
}

// netRow is the status row of c's network; none when c leaves the
// network open by choice (nothing is asked, so nothing is missing).
func (c Confinement) netRow(ns bool) (Defence, bool) {
	if c.Network.Open {
		return Defence{}, false
	}
	mode, why := c.netMode(ns)
	d := Defence{Name: DefNetwork}
	n := len(c.Network.Allow.Rules())
	switch mode {
	case netNamespace:
		d.Enforced = true
		d.Detail = fmt.Sprintf("a network namespace of its own: out only through baton's proxy, to %d allowlist entries and the agent's model API; "+
			"no loopback service of this machine, DNS answered in the box; refusals recorded", n)
	case netPorts:
		ports, _ := c.Network.Allow.TCPPorts()
		d.Detail = fmt.Sprintf("%s; Landlock ABI %d lets TCP connect only to the allowed ports (%s, and the model API's), but to any host on them, "+
			"this machine's loopback included; UDP and DNS are open; nothing is recorded", why, probeHost().abi, portList(ports))
	default:
		d.Detail = why + "; the box uses this machine's network: any host, its loopback services (baton's API, databases) and DNS"
	}
	return d, true
}

func portList(ports []int) string {
	if len(ports) == 0 {
		return "none"
	}
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}

// openNetwork gives b the network c's policy asks for, as this host
// allows: a namespace with the proxy's way out, or Landlock's ports.
func (c Confinement) openNetwork(b *box, ns bool) error {
	switch mode, _ := c.netMode(ns); mode {
	case netNamespace:
		if len(c.Network.Allow.Rules()) == 0 && c.Network.OnRefuse == nil {
			// Nothing to reach and no one to tell: a namespace with no
			// way out, and no proxy (baton's own git in a worktree).
			b.newNet = true
			return nil
		}
		start, err := hooks.OpenNetwork(c.Network)
		if err != nil {
			return fmt.Errorf("open the box's network: %w", err)
		}
		if start.Close != nil {
			b.undo = append(b.undo, start.Close)
		}
		if len(start.Spec) == 0 {
			return errors.New("open the box's network: no spec for the init")
		}
		b.files = append(b.files, start.Files...)
		b.spec.Network = start.Spec
		b.spec.Keep = append(b.spec.Keep, start.Paths...)
		b.spec.Env = withEnv(b.spec.Env, start.Env)
		b.newNet = true
	case netPorts:
		b.spec.NetLimit = true
		b.spec.NetPorts, _ = c.Network.Allow.TCPPorts()
	}
	return nil
}

// probeNetwork builds a box with namespaces and a network namespace of
// its own, and nothing in it.
func probeNetwork() error {
	cmd := &exec.Cmd{Args: []string{InitProgram}, Env: []string{}}
	b := &box{spec: spec{Probe: true, Namespaces: true}, newNet: true}
	if _, err := b.start(cmd, nil); err != nil {
		return err
	}
	err := cmd.Wait()
	b.release()
	return err
}
