package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"

	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/sandbox"
)

// BenchmarkOpen is what a box's network costs outside it at each start:
// a private directory with the resolv.conf, the proxy's socket, its
// serving goroutine, and all of it gone again.
func BenchmarkOpen(b *testing.B) {
	allow, err := netpolicy.Configure(nil, netpolicy.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		box, err := Open(allow, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := box.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStart is one boxed start of /bin/true with the network open
// and with a network of its own (namespace, proxy, forwarders, DNS stub,
// routes and the watch for refusals): the difference is the network's
// share of a box's start.
func BenchmarkStart(b *testing.B) {
	if sandbox.Probe().ABI == 0 {
		b.Skip("this host cannot box")
	}
	allow, err := netpolicy.Configure(nil, netpolicy.Settings{Allow: []string{"127.0.0.1:8080"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []struct {
		name string
		net  sandbox.Network
	}{{"network=open", sandbox.Network{Open: true}}, {"network=allowlist", sandbox.Network{Allow: allow}}} {
		b.Run(n.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("/bin/true")
				cmd.Env = os.Environ()
				c := sandbox.Confinement{Mode: sandbox.ModeRequired, Policy: sandbox.System(sandbox.EnvFrom(cmd.Env)), Network: n.net}
				release, _, err := c.Start(cmd)
				if err == nil {
					err = cmd.Wait()
				}
				release()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTunnel is one connection through the proxy to an allowed
// host and one round trip on it: what each connection from a box pays
// outside it.
func BenchmarkTunnel(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	allow, _ := netpolicy.Parse(l.Addr().String())
	box, err := Open(allow, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer box.Close()
	req := fmt.Sprintf("CONNECT %s HTTP/1.1\r\n\r\n", l.Addr())
	buf := make([]byte, 4)
	for b.Loop() {
		c, err := net.Dial("unix", box.plan.Socket)
		if err != nil {
			b.Fatal(err)
		}
		io.WriteString(c, req)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("CONNECT: %v %v", resp, err)
		}
		io.WriteString(c, "ping")
		if _, err := io.ReadFull(br, buf); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
