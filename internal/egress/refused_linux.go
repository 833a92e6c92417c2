package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// refusedFilter4 and refusedFilter6 are classic BPF over an IPv4 or IPv6
// packet (a packet socket of type SOCK_DGRAM sees it from the network
// header): TCP resets with sequence number 0, and ICMP port-unreachable
// messages. See packet.go.
var (
	refusedFilter4 = []unix.SockFilter{
		/* 0 */ {Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 9}, // protocol
		/* 1 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.IPPROTO_TCP, Jf: 7},
		/* 2 */ {Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 6}, // fragment offset
		/* 3 */ {Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 0x1fff, Jt: 12},
		/* 4 */ {Code: unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH, K: 0}, // X = header length
		/* 5 */ {Code: unix.BPF_LD | unix.BPF_B | unix.BPF_IND, K: 13}, // TCP flags
		/* 6 */ {Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 0x04, Jf: 9}, // RST
		/* 7 */ {Code: unix.BPF_LD | unix.BPF_W | unix.BPF_IND, K: 4}, // sequence number
		/* 8 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0, Jt: 6, Jf: 7},
		/* 9 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.IPPROTO_ICMP, Jf: 6},
		/* 10 */ {Code: unix.BPF_LDX | unix.BPF_B | unix.BPF_MSH, K: 0},
		/* 11 */ {Code: unix.BPF_LD | unix.BPF_B | unix.BPF_IND, K: 0}, // ICMP type
		/* 12 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 3, Jf: 3}, // destination unreachable
		/* 13 */ {Code: unix.BPF_LD | unix.BPF_B | unix.BPF_IND, K: 1}, // code
		/* 14 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 3, Jf: 1}, // port unreachable
		/* 15 */ {Code: unix.BPF_RET | unix.BPF_K, K: 256},
		/* 16 */ {Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
	refusedFilter6 = []unix.SockFilter{
		/* 0 */ {Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 6}, // next header, with no extension headers
		/* 1 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.IPPROTO_TCP, Jf: 4},
		/* 2 */ {Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 40 + 13},
		/* 3 */ {Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 0x04, Jf: 8},
		/* 4 */ {Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 40 + 4},
		/* 5 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0, Jt: 5, Jf: 6},
		/* 6 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.IPPROTO_ICMPV6, Jf: 5},
		/* 7 */ {Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 40},
		/* 8 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 1, Jf: 3}, // destination unreachable
		/* 9 */ {Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 41},
		/* 10 */ {Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 4, Jf: 1}, // port unreachable
		/* 11 */ {Code: unix.BPF_RET | unix.BPF_K, K: 256},
		/* 12 */ {Code: unix.BPF_RET | unix.BPF_K, K: 0},
	}
)

// watchRefused reports the connections and datagrams the box's kernel
// refused at its closed ports (packet.go).
func (in *Inside) watchRefused(index int) error {
	for _, w := range []struct {
		proto  uint16
		filter []unix.SockFilter
	}{{unix.ETH_P_IP, refusedFilter4}, {unix.ETH_P_IPV6, refusedFilter6}} {
		f, err := packetSocket(index, w.proto, w.filter)
		if err != nil {
			return fmt.Errorf("watch the box's loopback for refused connections: %w", err)
		}
		in.mu.Lock()
		in.watches = append(in.watches, f)
		in.mu.Unlock()
		in.watchWG.Add(1)
		go func() {
			defer in.watchWG.Done()
			in.readRefused(f)
		}()
	}
	return nil
}

// readRefused reports each packet f sees until Close, and then the ones
// still queued.
func (in *Inside) readRefused(f *os.File) {
	buf := make([]byte, 256)
	report := func(b []byte) {
		if ap, via, ok := refusedTarget(b); ok {
			in.reportRefused(ap, via)
		}
	}
	for {
		n, err := f.Read(buf)
		if err == nil {
			report(buf[:n])
			continue
		}
		if !in.draining.Load() {
			return
		}
		// A packet is queued here before the call that caused it returns
		// (packet taps run before TCP and UDP), so what the box's last
		// command tried is read now.
		_ = f.SetReadDeadline(time.Time{})
		rc, err := f.SyscallConn()
		if err != nil {
			return
		}
		_ = rc.Read(func(fd uintptr) bool {
			for {
				n, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
				if err != nil {
					return true
				}
				report(buf[:n])
			}
		})
		return
	}
}

// packetSocket opens a packet socket for proto on the interface index,
// with filter attached before it is bound (so nothing unfiltered queues),
// as a file the runtime's poller reads.
func packetSocket(index int, proto uint16, filter []unix.SockFilter) (*os.File, error) {
	be := proto<<8 | proto>>8 // htons
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(be))
	if err != nil {
		return nil, err
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: be, Ifindex: index}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "lo-refused"), nil
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
