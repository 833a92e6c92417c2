package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/baton-agent/baton/internal/netpolicy"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy bounds.
const (
	// maxHeader bounds a request's line and headers.
	maxHeader = 64 << 10
	// headerTimeout bounds how long a request may take to arrive.
	headerTimeout = 30 * time.Second
	// dialTimeout bounds connecting to an allowed host.
	dialTimeout = 15 * time.Second
	// maxHostText bounds a host name from the box as it is recorded.
	maxHostText = 255
	// MaxConns is how many connections one run's proxy carries at once;
	// more are closed as they arrive.
	MaxConns = 512
)

// resolvePath is the proxy's own request, sent by the box's DNS stub:
// may the box look up this name? Answered with the ports the name is
// allowed on.
const resolvePath = "/baton/resolve"

// refusedPath is the box's report of a connection its own kernel refused
// (nothing listens at that port of its loopback): the proxy records it.
const refusedPath = "/baton/refused"

// Proxy is a run's way out of its box. It serves a unix socket that the
// box's forwarders connect to, speaking HTTP proxy requests: CONNECT
// host:port for a tunnel (HTTPS, or any connection to an in-box
// address), an absolute http:// URL for plain HTTP, and the DNS stub's
// questions. It allows what Allow allows, resolves names itself (never
// to an address of this machine or a link-local one, and never to a
// private one for the "*" rule), and records every refusal.
type Proxy struct {
	Allow netpolicy.Allowlist
	// OnRefuse, when set, is called for each refusal as it happens (from
	// the connection's goroutine): the live log shows it.
	OnRefuse func(netpolicy.Refusal)
	// Refusals, when set, collects the refusals for the run's record.
	Refusals *netpolicy.Refusals
	// Resolver looks up allowed names; nil is net.DefaultResolver.
	Resolver *net.Resolver
	// Now stamps refusals; nil is time.Now.
	Now func() time.Time

	allowed atomic.Int64
	refused atomic.Int64
}

// Counts are how many connections (and name lookups) a proxy allowed
// and refused.
func (p *Proxy) Counts() (allowed, refused int64) { return p.allowed.Load(), p.refused.Load() }

// Serve answers connections on l until ctx ends, then closes l and every
// connection it carries and returns nil once all have ended. It returns
// an error only when l fails otherwise.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	stop := context.AfterFunc(ctx, func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for c := range conns {
			c.Close()
		}
	})
	defer func() {
		stop()
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		mu.Lock()
		if len(conns) >= MaxConns || ctx.Err() != nil {
			mu.Unlock()
			c.Close()
			continue
		}
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
				c.Close()
			}()
			p.serveConn(ctx, c)
		}()
	}
}

// serveConn answers one request, then carries its bytes.
func (p *Proxy) serveConn(ctx context.Context, c net.Conn) {
	lr := &io.LimitedReader{R: c, N: maxHeader}
	br := bufio.NewReader(lr)
	_ = c.SetReadDeadline(time.Now().Add(headerTimeout))
	req, err := http.ReadRequest(br)
	if err != nil {
		return // not a request, too large or too slow: nothing to answer
	}
	lr.N = math.MaxInt64 // the body and a tunnel's bytes are not headers
	_ = c.SetReadDeadline(time.Time{})
	switch {
	case req.Method == http.MethodConnect:
		p.tunnel(ctx, c, br, req)
	case req.URL.Path == resolvePath && req.URL.Host == "":
		p.resolve(c, req)
	case req.URL.Path == refusedPath && req.URL.Host == "":
		p.reported(c, req)
	case req.URL.Scheme == "http" && req.URL.Host != "":
		p.forward(ctx, c, req)
	default:
		reply(c, http.StatusBadRequest, "baton's egress proxy takes CONNECT host:port, or a request for an absolute http:// URL")
	}
}

// tunnel connects the box to host:port and carries bytes both ways.
func (p *Proxy) tunnel(ctx context.Context, c net.Conn, br *bufio.Reader, req *http.Request) {
	host, port, err := hostPort(req.Host, 0)
	if err != nil {
		reply(c, http.StatusBadRequest, err.Error())
		return
	}
	up, ok := p.dial(ctx, c, host, port, "connect")
	if !ok {
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	relay(c, up)
}

// forward sends one plain HTTP request to its host and the answer back;
// the connection then closes (the client opens another for its next
// request).
func (p *Proxy) forward(ctx context.Context, c net.Conn, req *http.Request) {
	host, port, err := hostPort(req.URL.Host, 80)
	if err != nil {
		reply(c, http.StatusBadRequest, err.Error())
		return
	}
	up, ok := p.dial(ctx, c, host, port, "http")
	if !ok {
		return
	}
	defer up.Close()
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Keep-Alive"} {
		req.Header.Del(h)
	}
	req.Close = true
	req.RequestURI = ""
	wrote := make(chan struct{})
	go func() {
		// The request and its body; the answer comes back below.
		defer close(wrote)
		if err := req.Write(up); err != nil {
			up.Close()
		}
	}()
	_, _ = io.Copy(c, up)
	// A body still arriving from the box is not needed any more.
	up.Close()
	c.Close()
	<-wrote
}

// resolve answers the DNS stub: 200 with the name's allowed ports, or
// 403.
func (p *Proxy) resolve(c net.Conn, req *http.Request) {
	name := printable(netpolicy.NormalizeHost(req.URL.Query().Get("name")), maxHostText)
	if !netpolicy.ValidName(name) {
		p.refuse(netpolicy.Refusal{Host: name, Via: "dns", Why: "not a host name"})
		reply(c, http.StatusForbidden, "not a host name")
		return
	}
	ports, any := p.Allow.Ports(name)
	if len(ports) == 0 && !any {
		p.refuse(netpolicy.Refusal{Host: name, Via: "dns", Why: "not on the allowlist"})
		reply(c, http.StatusForbidden, "not on the allowlist")
		return
	}
	p.allowed.Add(1)
	text := "*"
	if !any {
		s := make([]string, len(ports))
		for i, pt := range ports {
			s[i] = strconv.Itoa(pt)
		}
		text = strings.Join(s, ",")
	}
	reply(c, http.StatusOK, text)
}

// reported records a connection the box's kernel refused. The report
// comes from the box, so it is believed only as far as it goes: an
// attempt at an address or a name's port, nothing more.
func (p *Proxy) reported(c net.Conn, req *http.Request) {
	q := req.URL.Query()
	host := netpolicy.NormalizeHost(q.Get("host"))
	port, err := strconv.Atoi(q.Get("port"))
	if err != nil || port < 1 || port > 65535 {
		reply(c, http.StatusBadRequest, "want host and port")
		return
	}
	via, why := "connect", "not on the allowlist"
	if q.Get("via") == "udp" {
		via, why = "udp", "the box sends UDP nowhere but to its DNS stub"
	}
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
		if a.IsLoopback() && via == "connect" {
			why = "nothing of this machine's loopback is reachable from the box but the allowed endpoints"
		}
	} else if !netpolicy.ValidName(host) {
		reply(c, http.StatusBadRequest, "not a host name")
		return
	}
	if _, ok := p.Allow.Allows(host, port); ok && via == "connect" {
		reply(c, http.StatusOK, "allowed: not recorded")
		return
	}
	p.refuse(netpolicy.Refusal{Host: host, Port: port, Via: via, Why: why})
	reply(c, http.StatusOK, "recorded")
}

// dial connects to host:port if the allowlist lets it, else answers the
// box with 403 and records why.
func (p *Proxy) dial(ctx context.Context, c net.Conn, host string, port int, via string) (net.Conn, bool) {
	refuse := func(why string) (net.Conn, bool) {
		p.refuse(netpolicy.Refusal{Host: host, Port: port, Via: via, Why: why})
		reply(c, http.StatusForbidden, fmt.Sprintf("baton refused the connection to %s: %s", netpolicy.Rule{Host: host, Port: port}, why))
		return nil, false
	}
	rule, ok := p.Allow.Allows(host, port)
	if !ok {
		return refuse("not on the allowlist")
	}
	addrs, why := p.addresses(ctx, rule, host)
	if why != "" {
		return refuse(why)
	}
	d := net.Dialer{Timeout: dialTimeout}
	var last error
	for _, a := range addrs {
		up, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			p.allowed.Add(1)
			return up, true
		}
		last = err
	}
	reply(c, http.StatusBadGateway, fmt.Sprintf("baton could not reach %s: %v", netpolicy.Rule{Host: host, Port: port}, last))
	return nil, false
}

// addresses are where host may be reached under rule, or why it may
// not be.
func (p *Proxy) addresses(ctx context.Context, rule netpolicy.Rule, host string) ([]netip.Addr, string) {
	host = netpolicy.NormalizeHost(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, "" // an address the allowlist names itself
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, ""
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	found, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, "no address found"
	}
	var out []netip.Addr
	why := ""
	for _, a := range found {
		a = a.Unmap()
		switch {
		case a.IsLoopback() || a.IsUnspecified():
			why = "resolves to an address of this machine (" + a.String() + ")"
		case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsMulticast() || a.IsInterfaceLocalMulticast():
			why = "resolves to a link-local or multicast address (" + a.String() + ")"
		case rule.Host == "*" && (a.IsPrivate() || !a.IsGlobalUnicast() || sharedAddress(a)):
			why = "resolves to a private address (" + a.String() + "), which * does not allow: name the host"
		default:
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, why
	}
	return out, ""
}

// sharedAddress reports carrier-grade NAT space (100.64.0.0/10), which
// netip does not count as private.
func sharedAddress(a netip.Addr) bool {
	return netip.MustParsePrefix("100.64.0.0/10").Contains(a)
}

// refuse records r.
func (p *Proxy) refuse(r netpolicy.Refusal) {
	p.refused.Add(1)
	r.Host = printable(r.Host, maxHostText)
	if p.Now != nil {
		r.At = p.Now()
	} else {
		r.At = time.Now()
	}
	if p.Refusals != nil {
		p.Refusals.Add(r)
	}
	if p.OnRefuse != nil {
		p.OnRefuse(r)
	}
}

// hostPort splits an authority; defPort fills a missing port (0: one is
// required).
func hostPort(authority string, defPort int) (string, int, error) {
	host, portText, err := net.SplitHostPort(authority)
	if err != nil {
		if defPort == 0 {
			return "", 0, fmt.Errorf("want host:port, got %q", authority)
		}
		host, portText = strings.TrimSuffix(strings.TrimPrefix(authority, "["), "]"), strconv.Itoa(defPort)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("want host:port, got %q", authority)
	}
	return host, port, nil
}

// reply answers a request with status and one line of text.
func reply(c net.Conn, status int, text string) {
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(text)+1, text+"\n")
}

// relay carries bytes both ways until both directions end. A direction
// that ends half-closes the other side, so a client that shuts its write
// side still gets its answer.
func relay(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(b, a)
		closeWrite(b)
	}()
	_, _ = io.Copy(a, b)
	closeWrite(a)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}

// printable is s cut to max bytes, with bytes outside printable ASCII
// replaced by '?': a name from the box is shown to people.
func printable(s string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	b := []byte(s)
	for i, c := range b {
		if c <= ' ' || c > '~' {
			b[i] = '?'
		}
	}
	return string(b)
}
