package egress

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel filters of the raw sockets (packet.go): classic BPF over
// what each socket gets, an IPv4 packet from its header on, an IPv6
// socket's payload from the transport header on.
var (
	// TCP in IPv4: a first fragment carrying RST and ACK with sequence 0.
	filterReset4 = []unix.SockFilter{
		/* 0 */ {Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 6}, // fragment offset
		/* 1 */ {Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 0x1fff, Jt: 5},
		/* 2 */ {Code: unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH, K: 0}, // X = header length
		/* 3 */ {Code: unix.BPF_LD | unix.BPF_B | unix.BPF_IND, K: 13}, // flags
		/* 4 */ {Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 0x04, Jf: 3}, // RST
		/* 5 */ {Code: unix.BPF_LD | unix.BPF_W | unix.BPF_IND, K: 4}, // sequence number
		/* 6 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0, Jf: 1},
		/* 7 */ {Code: unix.BPF_RET | unix.BPF_K, K: 128},
		/* 8 */ {Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
	// ICMP in IPv4: destination unreachable, port unreachable.
	filterUnreachable4 = []unix.SockFilter{
		/* 0 */ {Code: unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH, K: 0},
		/* 1 */ {Code: unix.BPF_LD | unix.BPF_H | unix.BPF_IND, K: 0}, // type and code
		/* 2 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0x0303, Jf: 1},
		/* 3 */ {Code: unix.BPF_RET | unix.BPF_K, K: 256},
		/* 4 */ {Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
	// TCP in IPv6, from the TCP header: RST with sequence 0.
	filterReset6 = []unix.SockFilter{
		/* 0 */ {Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 13},
		/* 1 */ {Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 0x04, Jf: 3},
		/* 2 */ {Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4},
		/* 3 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0, Jf: 1},
		/* 4 */ {Code: unix.BPF_RET | unix.BPF_K, K: 128},
		/* 5 */ {Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
	// ICMPv6, from its header: destination unreachable, port unreachable.
	filterUnreachable6 = []unix.SockFilter{
		/* 0 */ {Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 0},
		/* 1 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0x0104, Jf: 1},
		/* 2 */ {Code: unix.BPF_RET | unix.BPF_K, K: 256},
		/* 3 */ {Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
)

// watch is one raw socket and how to read what it gets.
type watch struct {
	network string // for net.ListenIP
	filter  []unix.SockFilter
	read    func(src netip.Addr, b []byte) (netip.AddrPort, bool)
	via     string
}

var watches = []watch{
	{"ip4:tcp", filterReset4, func(_ netip.Addr, b []byte) (netip.AddrPort, bool) { return resetTarget4(b) }, "connect"},
	{"ip4:icmp", filterUnreachable4, func(_ netip.Addr, b []byte) (netip.AddrPort, bool) { return unreachableTarget4(b) }, "udp"},
	{"ip6:tcp", filterReset6, resetTarget6, "connect"},
	{"ip6:ipv6-icmp", filterUnreachable6, func(_ netip.Addr, b []byte) (netip.AddrPort, bool) { return unreachableTarget6(b) }, "udp"},
}

// watchRefused reports the connections and datagrams the box's kernel
// refused at its closed ports (packet.go). Without IPv6 in the box its
// IPv6 watches are left out.
func (in *Inside) watchRefused() error {
	for _, w := range watches {
		c, err := net.ListenIP(w.network, nil)
		if err != nil && w.network[2] == '6' {
			continue
		}
		if err != nil {
			return fmt.Errorf("watch the box for refused connections: %w", err)
		}
		if err := attachFilter(c, w.filter); err != nil {
			c.Close()
			return fmt.Errorf("watch the box for refused connections: %w", err)
		}
		in.mu.Lock()
		in.watches = append(in.watches, c)
		in.mu.Unlock()
		in.watchWG.Add(1)
		go func() {
			defer in.watchWG.Done()
			in.readRefused(c, w)
		}()
	}
	return nil
}

// attachFilter gives c's socket its kernel filter.
func attachFilter(c *net.IPConn, filter []unix.SockFilter) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog)
	})
	if err != nil {
		return err
	}
	return serr
}

// readRefused reports each packet c gets until Close, and then the ones
// still queued. It reads with recvfrom itself: an IPv4 raw socket read
// through net would lose the IP header.
func (in *Inside) readRefused(c *net.IPConn, w watch) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 512)
	// read reports what is queued; with wait, it then waits for more, until
	// the socket fails, is closed or its deadline passes.
	read := func(wait bool) error {
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			for {
				n, sa, err := unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
				if errors.Is(err, unix.EAGAIN) {
					return !wait
				}
				if err != nil {
					rerr = err
					return true
				}
				var src netip.Addr
				switch sa := sa.(type) {
				case *unix.SockaddrInet4:
					src = netip.AddrFrom4(sa.Addr)
				case *unix.SockaddrInet6:
					src = netip.AddrFrom16(sa.Addr)
				}
				if ap, ok := w.read(src, buf[:n]); ok {
					in.reportRefused(ap, w.via)
				}
			}
		})
		return cmp.Or(err, rerr)
	}
	_ = read(true)
	if in.draining.Load() {
		// A packet is queued here before the call that caused it returns
		// (raw sockets get it before TCP, UDP or ICMP handle it), so what
		// the box's last command tried is read now.
		_ = c.SetReadDeadline(time.Time{})
		_ = read(false)
	}
}

// reportRefused tells the proxy that the box tried ap (by TCP, or UDP)
// and its kernel refused: a port of its loopback where nothing listens,
// an address outside, or a port of an allowed name's in-box address that
// the name is not allowed on.
func (in *Inside) reportRefused(ap netip.AddrPort, via string) {
	host := ap.Addr().Unmap().String()
	in.mu.Lock()
	for name, a := range in.names {
		if a == ap.Addr() {
			host = name
			break
		}
	}
	in.mu.Unlock()
	// Not in.ctx: Close reports what is queued after it ends the rest.
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	var d net.Dialer
	up, err := d.DialContext(ctx, "unix", in.plan.Socket)
	if err != nil {
		return
	}
	defer up.Close()
	_ = up.SetDeadline(time.Now().Add(askTimeout))
	q := url.Values{"host": {host}, "port": {strconv.Itoa(int(ap.Port()))}, "via": {via}}
	if _, err := fmt.Fprintf(up, "GET %s?%s HTTP/1.1\r\nHost: baton\r\n\r\n", refusedPath, q.Encode()); err != nil {
		return
	}
	if resp, err := http.ReadResponse(bufio.NewReader(io.LimitReader(up, maxHeader)), nil); err == nil {
		resp.Body.Close()
	}
}
