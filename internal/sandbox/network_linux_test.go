package sandbox

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/baton-agent/baton/internal/netpolicy"
)

// Without a network namespace of its own, Landlock (ABI 4 and later)
// lets the box connect over TCP only to the allowlist's ports, and the
// status says exactly what that does not cover.
func TestBoxNetworkPortsWithoutANamespace(t *testing.T) {
	t.Parallel()
	if probeHost().abi < 4 {
		t.Skipf("Landlock ABI %d limits no network (4 does)", probeHost().abi)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the box runs it")
	}
	serve := func(text string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, text) }))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	model, api := serve("model"), serve("baton-api")
	allow, err := netpolicy.Parse(model)
	if err != nil {
		t.Fatal(err)
	}
	c := Confinement{Mode: ModeAuto, NoNamespaces: true, Network: Network{Allow: allow}}
	row, _ := c.netRow(false)
	if row.Enforced || !strings.Contains(row.Detail, "connect only to the allowed ports ("+model[strings.LastIndex(model, ":")+1:]) ||
		!strings.Contains(row.Detail, "UDP and DNS are open") {
		t.Errorf("status row = %+v", row)
	}
	out, _ := boxed(t, c, t.TempDir(), fmt.Sprintf(
		`curl -sS --noproxy '*' http://%s/; echo; curl -sS --noproxy '*' http://%s/ || echo refused`, model, api))
	if !strings.Contains(out, "model\n") || !strings.Contains(out, "refused") || strings.Contains(out, "baton-api") {
		t.Errorf("in the box, model allowed and the API refused:\n%s", out)
	}
	// With no port to allow, no TCP connection at all.
	c.Network.Allow = netpolicy.Allowlist{}
	out, _ = boxed(t, c, t.TempDir(), fmt.Sprintf(`curl -sS --noproxy '*' http://%s/ || echo refused`, model))
	if !strings.Contains(out, "refused") {
		t.Errorf("an empty allowlist let a connection through:\n%s", out)
	}
	// --sandbox=required refuses to start without the namespace, naming
	// the network.
	required := Confinement{Mode: ModeRequired, NoNamespaces: true, Network: Network{Allow: allow}}
	if _, _, err := required.Start(exec.Command("/bin/true")); err == nil || !strings.Contains(err.Error(), DefNetwork+": ") {
		t.Errorf("required without a network namespace: %v, want an error naming the network", err)
	}
	// Open is open.
	c.Network = Network{Open: true}
	if _, ok := c.netRow(false); ok {
		t.Error("an open network has a status row, so --sandbox=required would refuse it")
	}
	out, _ = boxed(t, c, t.TempDir(), fmt.Sprintf(`curl -sS --noproxy '*' http://%s/`, api))
	if !strings.Contains(out, "baton-api") {
		t.Errorf("an open network refused a connection:\n%s", out)
	}
}
