package egress

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/baton-agent/baton/internal/netpolicy"
	"github.com/baton-agent/baton/internal/sandbox"
)

// The box sandbox builds, with this package's hooks, has the network
// its Confinement allows: the allowed server answers, another loopback
// service and an unknown name are refused and heard of, and the status
// says the network is enforced.
func TestSandboxBoxHasItsNetwork(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the box runs it")
	}
	st := sandbox.Probe()
	if i := slices.IndexFunc(st.Defences, func(d sandbox.Defence) bool { return d.Name == sandbox.DefNetwork }); i < 0 || !st.Defences[i].Enforced {
		t.Skipf("this host gives a box no network of its own: %s", strings.Join(st.Missing(), "; "))
	}
	model, _ := serveText(t, "127.0.0.1:0", "model")
	api, hits := serveText(t, "127.0.0.1:0", "baton-api")
	allow, err := netpolicy.Parse(model.String())
	if err != nil {
		t.Fatal(err)
	}
	var refused netpolicy.Refusals
	cmd := exec.Command("sh", "-c", "curl -sS --max-time 10 http://"+model.String()+"/; echo; "+
		"curl -sS --max-time 10 http://"+api.String()+"/ || echo refused; getent hosts exfil.attacker.example || echo refused")
	cmd.Env = os.Environ()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	c := sandbox.Confinement{Mode: sandbox.ModeRequired, Policy: sandbox.System(sandbox.EnvFrom(cmd.Env)),
		Network: sandbox.Network{Allow: allow, OnRefuse: func(r netpolicy.Refusal) { refused.Add(r) }}}
	release, rep, err := c.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	release()
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(rep.Detail, sandbox.DefNetwork) {
		t.Errorf("the report does not name the network: %s", rep)
	}
	if got := out.String(); !strings.HasPrefix(got, "model\n") || strings.Count(got, "refused") != 2 || *hits != 0 {
		t.Errorf("in the box (api reached %d times):\n%s", *hits, got)
	}
	list, _ := refused.List()
	var targets []string
	for _, r := range list {
		targets = append(targets, r.Via+" "+r.Target())
	}
	for _, want := range []string{"connect " + api.String(), "dns exfil.attacker.example"} {
		if !slices.Contains(targets, want) {
			t.Errorf("refusals %q lack %q", targets, want)
		}
	}
}

// As a user other than root, the box's init holds only the capabilities
// the box gives it in its user namespace: the network step works there
// too.
func TestSandboxBoxHasItsNetworkAsUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the test as another user")
	}
	if testing.Short() {
		t.Skip("runs a test again as another user")
	}
	const nobody = 65534
	dir, err := os.MkdirTemp("", "baton-egress-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin, tmp := filepath.Join(dir, "egress.test"), filepath.Join(dir, "tmp")
	for _, step := range []func() error{
		func() error { return os.Chmod(dir, 0o755) },
		func() error { return os.WriteFile(bin, b, 0o755) },
		func() error { return os.Mkdir(tmp, 0o700) },
		func() error { return os.Chown(tmp, nobody, nobody) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run", "^TestSandboxBoxHasItsNetwork$", "-test.v")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSandboxBoxHasItsNetwork") {
		t.Fatalf("as uid %d: %v\n%s", nobody, err, out)
	}
}
