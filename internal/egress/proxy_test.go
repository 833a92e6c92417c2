package egress

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/baton-agent/baton/internal/netpolicy"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startProxy serves p on a unix socket in a temporary directory until
// the test ends, and returns the socket's path.
func startProxy(t *testing.T, p *Proxy) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
	return sock
}

// proxyRequest sends raw to the proxy at sock and returns its answer's
// status and the connection, positioned after the answer's headers.
func proxyRequest(t *testing.T, sock, raw string) (int, *bufio.Reader, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(raw)[0]})
	if err != nil {
		t.Fatalf("proxy answer to %q: %v", strings.SplitN(raw, "\r\n", 2)[0], err)
	}
	if resp.StatusCode != http.StatusOK || strings.Fields(raw)[0] != http.MethodConnect {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, bufio.NewReader(strings.NewReader(string(b))), c
	}
	return resp.StatusCode, br, c
}

// echoServer is a TCP listener on 127.0.0.1 that answers every line with
// its name and the line, and counts connections.
type echoServer struct {
	name  string
	addr  netip.AddrPort
	mu    sync.Mutex
	conns int
}

func startEcho(t *testing.T, name string) *echoServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{name: name, addr: netip.MustParseAddrPort(l.Addr().String())}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns++
			e.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					fmt.Fprintf(c, "%s: %s\n", e.name, sc.Text())
				}
			}()
		}
	}()
	return e
}

func (e *echoServer) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.conns
}

func TestProxyTunnelsOnlyAllowedTargets(t *testing.T) {
	t.Parallel()
	model := startEcho(t, "model")
	api := startEcho(t, "baton-api")
	allow, err := netpolicy.Parse(model.addr.String())
	if err != nil {
		t.Fatal(err)
	}
	var rs netpolicy.Refusals
	var live []netpolicy.Refusal
	var mu sync.Mutex
	p := &Proxy{Allow: allow, Refusals: &rs, OnRefuse: func(r netpolicy.Refusal) { mu.Lock(); live = append(live, r); mu.Unlock() }}
	sock := startProxy(t, p)

	status, br, c := proxyRequest(t, sock, "CONNECT "+model.addr.String()+" HTTP/1.1\r\nHost: x\r\n\r\n")
	if status != http.StatusOK {
		t.Fatalf("CONNECT %s = %d, want 200", model.addr, status)
	}
	fmt.Fprintln(c, "hello")
	if line, _ := br.ReadString('\n'); line != "model: hello\n" {
		t.Errorf("through the tunnel: %q, want model: hello", line)
	}

	status, br, _ = proxyRequest(t, sock, "CONNECT "+api.addr.String()+" HTTP/1.1\r\nHost: x\r\n\r\n")
	if status != http.StatusForbidden {
		t.Errorf("CONNECT %s = %d, want 403", api.addr, status)
	}
	if body, _ := io.ReadAll(br); !strings.Contains(string(body), "not on the allowlist") {
		t.Errorf("refusal says %q", body)
	}
	status, _, _ = proxyRequest(t, sock, "CONNECT localhost:"+fmt.Sprint(api.addr.Port())+" HTTP/1.1\r\n\r\n")
	if status != http.StatusForbidden {
		t.Errorf("CONNECT localhost:%d = %d, want 403", api.addr.Port(), status)
	}
	if n := api.count(); n != 0 {
		t.Errorf("the refused listener saw %d connections", n)
	}
	list, more := rs.List()
	if len(list) != 2 || more != 0 || list[0].Host != "127.0.0.1" || list[0].Port != int(api.addr.Port()) || list[0].Via != "connect" {
		t.Errorf("Refusals = %+v, %d", list, more)
	}
	mu.Lock()
	if len(live) != 2 {
		t.Errorf("OnRefuse saw %d refusals, want 2", len(live))
	}
	mu.Unlock()
	if allowed, refused := p.Counts(); allowed != 1 || refused != 2 {
		t.Errorf("Counts() = %d, %d; want 1, 2", allowed, refused)
	}
}

func TestProxyForwardsPlainHTTP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Error("the proxy passed Proxy-Authorization on")
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.RequestURI(), body)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	allow, _ := netpolicy.Parse(host)
	sock := startProxy(t, &Proxy{Allow: allow})
	status, br, _ := proxyRequest(t, sock, "POST "+srv.URL+"/v1/x?y=1 HTTP/1.1\r\nHost: "+host+
		"\r\nProxy-Authorization: Basic eDp5\r\nContent-Length: 4\r\n\r\nbody")
	if status != http.StatusOK {
		t.Fatalf("POST through the proxy = %d", status)
	}
	if body, _ := io.ReadAll(br); string(body) != "POST /v1/x?y=1 body" {
		t.Errorf("the server saw %q", body)
	}
	// The proxy's client is Go's own, as a boxed go or curl would use it.
	tr := &http.Transport{
		Proxy: http.ProxyURL(mustURL(t, "http://proxy.invalid")),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Get("http://127.0.0.1:1/nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET of a refused URL through the proxy = %d, want 403", resp.StatusCode)
	}
}

func TestProxyResolve(t *testing.T) {
	t.Parallel()
	allow, _ := netpolicy.Parse("api.example.com", "*.objects.example:8443", "*:*")
	var rs netpolicy.Refusals
	sock := startProxy(t, &Proxy{Allow: allow, Refusals: &rs})
	for _, tt := range []struct {
		name   string
		status int
		body   string
	}{
		{"api.example.com", 200, "*"},
		{"x.objects.example", 200, "*"},
		{"localhost", 403, ""},
		{"bad_name%00.example", 403, ""},
	} {
		status, br, _ := proxyRequest(t, sock, "GET "+resolvePath+"?name="+tt.name+" HTTP/1.1\r\nHost: baton\r\n\r\n")
		body, _ := io.ReadAll(br)
		if status != tt.status || tt.body != "" && strings.TrimSpace(string(body)) != tt.body {
			t.Errorf("resolve %s = %d %q, want %d %q", tt.name, status, body, tt.status, tt.body)
		}
	}
	narrow, _ := netpolicy.Parse("api.example.com", "*.objects.example:8443")
	sock = startProxy(t, &Proxy{Allow: narrow, Refusals: &rs})
	status, br, _ := proxyRequest(t, sock, "GET "+resolvePath+"?name=a.objects.example HTTP/1.1\r\n\r\n")
	if body, _ := io.ReadAll(br); status != 200 || strings.TrimSpace(string(body)) != "8443" {
		t.Errorf("resolve a.objects.example = %d %q, want 200 8443", status, body)
	}
	status, _, _ = proxyRequest(t, sock, "GET "+resolvePath+"?name=exfil.attacker.example HTTP/1.1\r\n\r\n")
	if status != http.StatusForbidden {
		t.Errorf("resolve exfil.attacker.example = %d, want 403", status)
	}
	list, _ := rs.List()
	var hosts []string
	for _, r := range list {
		hosts = append(hosts, r.Via+" "+r.Host)
	}
	if got := strings.Join(hosts, ", "); got != "dns localhost, dns bad_name?.example, dns exfil.attacker.example" {
		t.Errorf("refusals: %s", got)
	}
}

// TestProxyNeverReachesThisMachineByName: a name on the allowlist that
// resolves to loopback (DNS rebinding, or a name someone else controls)
// reaches nothing of this machine.
func TestProxyNeverReachesThisMachineByName(t *testing.T) {
	t.Parallel()
	api := startEcho(t, "baton-api")
	dns := startTestDNS(t, map[string]string{
		"rebind.example":   "127.0.0.1",
		"metadata.example": "169.254.169.254",
		"intranet.example": "10.1.2.3",
	})
	allow, _ := netpolicy.Parse("rebind.example:*", "metadata.example:*", "*:*")
	var rs netpolicy.Refusals
	sock := startProxy(t, &Proxy{Allow: allow, Refusals: &rs, Resolver: dns})
	for _, target := range []string{"rebind.example", "metadata.example", "intranet.example"} {
		status, _, _ := proxyRequest(t, sock, fmt.Sprintf("CONNECT %s:%d HTTP/1.1\r\n\r\n", target, api.addr.Port()))
		if status != http.StatusForbidden {
			t.Errorf("CONNECT %s:%d = %d, want 403", target, api.addr.Port(), status)
		}
	}
	if n := api.count(); n != 0 {
		t.Errorf("the loopback listener saw %d connections", n)
	}
	list, _ := rs.List()
	for i, want := range []string{"an address of this machine", "link-local", "private address"} {
		if i >= len(list) || !strings.Contains(list[i].Why, want) {
			t.Errorf("refusal %d = %+v, want one saying %q", i, list, want)
		}
	}
}

func TestProxyEndsItsConnections(t *testing.T) {
	t.Parallel()
	model := startEcho(t, "model")
	allow, _ := netpolicy.Parse(model.addr.String())
	sock := filepath.Join(t.TempDir(), "p.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Proxy{Allow: allow}).Serve(ctx, l) }()
	status, br, _ := proxyRequest(t, sock, "CONNECT "+model.addr.String()+" HTTP/1.1\r\n\r\n")
	if status != 200 {
		t.Fatalf("CONNECT = %d", status)
	}
	// A silent client and a slow one: neither holds Serve past its end.
	slow, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "CONNECT ")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve() = %v", err)
		}
	case <-time.After(10 * time.Second): // a hang, not a wait for an event
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := br.ReadString('\n'); err == nil {
		t.Error("the tunnel still carries bytes after Serve returned")
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// FuzzProxyRequest sends the proxy any bytes as a request from the box,
// with an allowlist that allows nothing: it never opens a tunnel, never
// forwards a request, and records only printable targets.
func FuzzProxyRequest(f *testing.F) {
	for _, s := range []string{
		"CONNECT evil.example:443 HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:8080/api HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /baton/resolve?name=a%00b.example HTTP/1.1\r\n\r\n",
		"GET /baton/refused?host=127.0.0.1&port=5432&via=udp HTTP/1.1\r\n\r\n",
		"CONNECT [::1]:22 HTTP/1.1\r\n\r\n",
		"GARBAGE\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var rs netpolicy.Refusals
		p := &Proxy{Allow: netpolicy.Allowlist{}, Refusals: &rs,
			Resolver: &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
				t.Fatal("the proxy resolved a name nothing allows")
				return nil, nil
			}}}
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		box, proxy := socketConn(t, fds[0]), socketConn(t, fds[1])
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer proxy.Close()
			p.serveConn(context.Background(), proxy)
		}()
		_, _ = box.Write(raw)
		_ = box.(*net.UnixConn).CloseWrite()
		answer, _ := io.ReadAll(io.LimitReader(box, 1<<20))
		box.Close()
		<-done
		if bytes.HasPrefix(answer, []byte("HTTP/1.1 200 Connection established")) {
			t.Fatalf("a tunnel opened for %q", raw)
		}
		if allowed, _ := p.Counts(); allowed != 0 {
			t.Fatalf("the proxy allowed %d for %q", allowed, raw)
		}
		list, _ := rs.List()
		for _, r := range list {
			for _, c := range []byte(r.Host) {
				if c <= ' ' || c > '~' {
					t.Fatalf("recorded host %q holds byte %#x", r.Host, c)
				}
			}
		}
	})
}

// socketConn is a net.Conn over fd.
func socketConn(t *testing.T, fd int) net.Conn {
	t.Helper()
	f := os.NewFile(uintptr(fd), "socket")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
