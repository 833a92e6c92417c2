package egress

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Inside bounds.
const (
	// maxNames is how many allowed names get an in-box address in one
	// run; a lookup beyond it fails (SERVFAIL).
	maxNames = 4096
	// maxRefusedNames is how many refused names the stub remembers, so a
	// name is asked about (and recorded) once, not at every lookup.
	maxRefusedNames = 4096
	// maxLookups is how many DNS queries over UDP the stub answers at
	// once.
	maxLookups = 64
	// askTimeout bounds a question to the proxy.
	askTimeout = 10 * time.Second
)

// nameNet is where allowed names get their in-box addresses: all of
// 127.0.0.0/8 is the box's loopback.
var nameNet = netip.MustParsePrefix("127.77.0.0/16")

// Inside is the box's side of the network, run by the box's init in the
// box's network namespace: the proxy endpoint, the loopback listeners
// and the DNS stub. Every connection it accepts goes out through the
// Proxy's socket, which decides.
type Inside struct {
	plan Plan

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	names   map[string]netip.Addr // allowed names and their in-box addresses
	refused map[string]bool       // names the proxy refused
	next    netip.Addr            // the next in-box address to give a name
	closers []io.Closer           // listeners and the DNS socket
	watches []*net.IPConn         // raw sockets that see refused connections

	draining atomic.Bool
	watchWG  sync.WaitGroup
}

// StartInside brings up the box's loopback interface and starts the
// forwarders of p. Call it in the box's network namespace, with the
// right to bind port 53 (as the namespace's root), before the agent
// starts; Close stops them.
func StartInside(ctx context.Context, p Plan) (*Inside, error) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return nil, fmt.Errorf("the box has no loopback interface: %w", err)
	}
	if err := loopbackUp(); err != nil {
		return nil, fmt.Errorf("bring up the box's loopback interface: %w", err)
	}
	if err := addLocalRoutes(lo.Index); err != nil {
		return nil, fmt.Errorf("route the box's addresses to its loopback: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	in := &Inside{plan: p, ctx: ctx, cancel: cancel, names: map[string]netip.Addr{}, refused: map[string]bool{},
		next: nameNet.Addr().Next()}
	fail := func(err error) (*Inside, error) {
		in.Close()
		return nil, err
	}
	proxyAddr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), p.ProxyPort)
	if err := in.listen(proxyAddr, in.splice); err != nil {
		return fail(err)
	}
	for _, ap := range p.Endpoints {
		target := ap.String()
		err := in.listen(ap, func(c net.Conn) { in.connect(c, target) })
		if err != nil && ap.Addr().Is6() && (errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.EAFNOSUPPORT)) {
			continue // no IPv6 on this machine: 127.0.0.1 still answers
		}
		if err != nil {
			return fail(err)
		}
	}
	if err := in.serveDNS(); err != nil {
		return fail(err)
	}
	if err := in.watchRefused(); err != nil {
		return fail(err)
	}
	return in, nil
}

// Close stops the forwarders and ends their connections, after the
// refusals the box's kernel made so far have been reported.
func (in *Inside) Close() error {
	in.mu.Lock()
	watches := in.watches
	in.watches = nil
	in.mu.Unlock()
	in.draining.Store(true)
	for _, f := range watches {
		_ = f.SetReadDeadline(time.Now()) // wakes the reader, which drains what is queued
	}
	in.watchWG.Wait()
	for _, f := range watches {
		f.Close()
	}
	in.cancel()
	in.mu.Lock()
	for _, c := range in.closers {
		c.Close()
	}
	in.closers = nil
	in.mu.Unlock()
	in.wg.Wait()
	return nil
}

// loopbackUp sets the lo interface up, as `ip link set lo up` does.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// listen accepts TCP connections at ap and hands each to serve.
func (in *Inside) listen(ap netip.AddrPort, serve func(net.Conn)) error {
	return in.listenAt(ap.String(), serve)
}

// listenAt accepts TCP connections at addr and hands each to serve.
func (in *Inside) listenAt(addr string, serve func(net.Conn)) error {
	var lc net.ListenConfig
	l, err := lc.Listen(in.ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s in the box: %w", addr, err)
	}
	in.mu.Lock()
	in.closers = append(in.closers, l)
	in.mu.Unlock()
	in.wg.Add(1)
	go func() {
		defer in.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				if in.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			in.wg.Add(1)
			go func() {
				defer in.wg.Done()
				stop := context.AfterFunc(in.ctx, func() { c.Close() })
				defer stop()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return nil
}

// dialProxy opens a connection to the proxy outside.
func (in *Inside) dialProxy() (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(in.ctx, "unix", in.plan.Socket)
}

// splice carries a connection to the proxy endpoint to the proxy as it
// is: the proxy reads the request.
func (in *Inside) splice(c net.Conn) {
	up, err := in.dialProxy()
	if err != nil {
		return
	}
	defer up.Close()
	stop := context.AfterFunc(in.ctx, func() { up.Close() })
	defer stop()
	relay(c, up)
}

// connect asks the proxy for a tunnel to target and carries c through
// it; a refusal closes c.
func (in *Inside) connect(c net.Conn, target string) {
	up, err := in.dialProxy()
	if err != nil {
		return
	}
	defer up.Close()
	stop := context.AfterFunc(in.ctx, func() { up.Close() })
	defer stop()
	if _, err := fmt.Fprintf(up, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		return
	}
	br := bufio.NewReader(io.LimitReader(up, maxHeader))
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, as a refused connection would be
		}
		return
	}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := c.Write(b); err != nil {
			return
		}
	}
	relay(c, up)
}

// ask asks the proxy whether name may be looked up, and on which ports.
func (in *Inside) ask(name string) (ports []int, any, ok bool, err error) {
	ctx, cancel := context.WithTimeout(in.ctx, askTimeout)
	defer cancel()
	up, err := in.dialProxy()
	if err != nil {
		return nil, false, false, err
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { up.Close() })
	defer stop()
	if _, err := fmt.Fprintf(up, "GET %s?name=%s HTTP/1.1\r\nHost: baton\r\n\r\n", resolvePath, url.QueryEscape(name)); err != nil {
		return nil, false, false, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(io.LimitReader(up, maxHeader)), nil)
	if err != nil {
		return nil, false, false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusForbidden, http.StatusBadRequest:
		return nil, false, false, nil
	default:
		return nil, false, false, fmt.Errorf("the proxy answered %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return nil, false, false, err
	}
	text := strings.TrimSpace(string(body))
	if text == "*" {
		return nil, true, true, nil
	}
	for f := range strings.SplitSeq(text, ",") {
		if n, err := strconv.Atoi(f); err == nil && n > 0 && n < 65536 {
			ports = append(ports, n)
		}
	}
	return ports, false, true, nil
}

// lookup is the in-box address of name, giving it one (with listeners
// on its allowed ports) when the proxy allows it. rcode is what to
// answer when there is no address.
func (in *Inside) lookup(name string) (netip.Addr, int) {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return netip.MustParseAddr("127.0.0.1"), rcodeOK
	}
	in.mu.Lock()
	a, known := in.names[name]
	refused := in.refused[name]
	in.mu.Unlock()
	switch {
	case known:
		return a, rcodeOK
	case refused:
		return netip.Addr{}, rcodeNXDomain
	}
	ports, any, ok, err := in.ask(name)
	switch {
	case err != nil:
		return netip.Addr{}, rcodeServFail
	case !ok:
		in.mu.Lock()
		if len(in.refused) < maxRefusedNames {
			in.refused[name] = true
		}
		in.mu.Unlock()
		return netip.Addr{}, rcodeNXDomain
	}
	if any {
		// A listener per port is out of the question: the web's ports
		// here, any other through the proxy endpoint.
		ports = []int{443, 80}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if a, ok := in.names[name]; ok {
		return a, rcodeOK // another lookup of the name won the race
	}
	if len(in.names) >= maxNames || !nameNet.Contains(in.next) {
		return netip.Addr{}, rcodeServFail
	}
	a, in.next = in.next, in.next.Next()
	in.mu.Unlock()
	var lerr error
	for _, port := range ports {
		target := net.JoinHostPort(name, strconv.Itoa(port))
		if err := in.listen(netip.AddrPortFrom(a, uint16(port)), func(c net.Conn) { in.connect(c, target) }); err != nil {
			lerr = err
		}
	}
	in.mu.Lock()
	if lerr != nil {
		return netip.Addr{}, rcodeServFail
	}
	in.names[name] = a
	return a, rcodeOK
}

// serveDNS answers DNS on port 53 of every address of the box, over UDP
// and TCP: resolv.conf names 127.0.0.1, and a query sent to any other
// resolver's address arrives here too (addLocalRoutes).
func (in *Inside) serveDNS() error {
	var lc net.ListenConfig
	pc, err := lc.ListenPacket(in.ctx, "udp", ":53")
	if err != nil {
		return fmt.Errorf("listen for DNS in the box: %w", err)
	}
	in.mu.Lock()
	in.closers = append(in.closers, pc)
	in.mu.Unlock()
	in.wg.Add(1)
	go func() {
		defer in.wg.Done()
		buf := make([]byte, maxDNSMessage)
		lookups := make(chan struct{}, maxLookups)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				if in.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			msg := append([]byte(nil), buf[:n]...)
			select {
			case lookups <- struct{}{}:
			default:
				continue // a flood: dropped, as a busy resolver would; clients ask again
			}
			in.wg.Add(1)
			go func() {
				defer in.wg.Done()
				defer func() { <-lookups }()
				if out, ok := in.answer(msg); ok {
					_, _ = pc.WriteTo(out, from)
				}
			}()
		}
	}()
	return in.listenAt(":53", in.serveDNSConn)
}

// serveDNSConn answers queries framed by their length over TCP.
func (in *Inside) serveDNSConn(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(askTimeout))
		var n uint16
		if err := binary.Read(br, binary.BigEndian, &n); err != nil {
			return
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(br, msg); err != nil {
			return
		}
		out, ok := in.answer(msg)
		if !ok {
			return
		}
		if _, err := c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(out)))); err != nil {
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// answer is the stub's answer to one message; ok is false when it gets
// none.
func (in *Inside) answer(msg []byte) ([]byte, bool) {
	q, err := parseQuery(msg)
	if err != nil {
		return nil, false
	}
	if q.rcode != rcodeOK {
		return q.answer(q.rcode, netip.Addr{}), true
	}
	a, rcode := in.lookup(q.name)
	return q.answer(rcode, a), true
}

// BindResolvConf puts file in place of /etc/resolv.conf, so the box's
// resolvers ask the stub. Call it in the box's own mount namespace, whose
// mounts do not propagate to the machine's. A machine without
// /etc/resolv.conf needs nothing: resolvers then ask 127.0.0.1, the stub.
func BindResolvConf(file string) error {
	err := unix.Mount(file, "/etc/resolv.conf", "", unix.MS_BIND, "")
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bind %s over /etc/resolv.conf: %w", file, err)
	}
	return nil
}

// addLocalRoutes makes every address local to the box, as `ip route add
// local 0.0.0.0/0 dev lo table local` does (and ::/0 where the box has
// IPv6). A connection to an address outside then meets the box's own
// kernel instead of failing with no route: at a closed port it is refused
// with a reset that watchResets reports, at an allowed address the
// listener there forwards it, and a DNS query sent to any resolver
// reaches the stub.
func addLocalRoutes(index int) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	for i, family := range []byte{unix.AF_INET, unix.AF_INET6} {
		err := netlinkAck(fd, localRouteMessage(uint32(i+1), family, index))
		if err != nil && family == unix.AF_INET6 && (errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EOPNOTSUPP)) {
			continue // no IPv6 here: nothing to route
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// localRouteMessage is RTM_NEWROUTE for "local default dev index" in the
// local table.
func localRouteMessage(seq uint32, family byte, index int) []byte {
	const attrLen = unix.SizeofRtAttr + 4 // RTA_OIF, a u32
	n := unix.SizeofNlMsghdr + unix.SizeofRtMsg + attrLen
	b := make([]byte, n)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(n))
	ne.PutUint16(b[4:], unix.RTM_NEWROUTE)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	ne.PutUint32(b[8:], seq)
	rt := b[unix.SizeofNlMsghdr:]
	rt[0] = family              // rtm_family; dst_len, src_len, tos stay 0: the default route
	rt[4] = unix.RT_TABLE_LOCAL // rtm_table
	rt[5] = unix.RTPROT_BOOT    // rtm_protocol
	rt[6] = unix.RT_SCOPE_HOST  // rtm_scope
	rt[7] = unix.RTN_LOCAL      // rtm_type
	attr := rt[unix.SizeofRtMsg:]
	ne.PutUint16(attr[0:], attrLen)
	ne.PutUint16(attr[2:], unix.RTA_OIF)
	ne.PutUint32(attr[4:], uint32(index))
	return b
}

// netlinkAck sends msg and reads the kernel's acknowledgement.
func netlinkAck(fd int, msg []byte) error {
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if code := int32(binary.NativeEndian.Uint32(m.Data)); code != 0 {
				return unix.Errno(-code)
			}
			return nil
		}
	}
	return fmt.Errorf("no acknowledgement from the kernel")
}
