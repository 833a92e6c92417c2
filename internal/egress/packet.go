package egress

import (
	"encoding/binary"
	"net/netip"
)

// A connection the box's own kernel refuses never reaches the proxy: a
// TCP connection to a port where nothing listens in the box (this
// machine's services are not there: baton's API, a database) is answered
// with a reset, a UDP datagram to such a port with an ICMP "port
// unreachable". The init watches its loopback interface for both and
// reports each to the proxy, so the attempt is recorded like any other
// refusal. A kernel filter lets through only resets with sequence number
// 0, the answer to a SYN at a closed port (RFC 793; a reset that aborts
// an established connection carries the connection's sequence), and the
// ICMP and ICMPv6 port-unreachable messages.

// refusedTarget reads what the box tried from a packet the watch let
// through, from its IP header on: the source of a reset (the closed port
// a SYN went to), or the destination of the UDP datagram an ICMP error
// quotes. via is "connect" or "udp".
func refusedTarget(b []byte) (target netip.AddrPort, via string, ok bool) {
	if len(b) < 1 {
		return netip.AddrPort{}, "", false
	}
	switch b[0] >> 4 {
	case 4:
		ihl := int(b[0]&0xf) * 4
		if ihl < 20 || len(b) < ihl+8 {
			return netip.AddrPort{}, "", false
		}
		switch b[9] {
		case 6: // TCP: the reset's source
			a := netip.AddrFrom4([4]byte(b[12:16]))
			return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[ihl:])), "connect", true
		case 1: // ICMP: type 3 code 3 quotes the datagram's IP header and 8 bytes
			if b[ihl] != 3 || b[ihl+1] != 3 {
				return netip.AddrPort{}, "", false
			}
			in := b[ihl+8:]
			if len(in) < 20 || in[0]>>4 != 4 || in[9] != 17 {
				return netip.AddrPort{}, "", false
			}
			iihl := int(in[0]&0xf) * 4
			if iihl < 20 || len(in) < iihl+4 {
				return netip.AddrPort{}, "", false
			}
			a := netip.AddrFrom4([4]byte(in[16:20]))
			return netip.AddrPortFrom(a, binary.BigEndian.Uint16(in[iihl+2:])), "udp", true
		}
	case 6:
		if len(b) < 48 {
			return netip.AddrPort{}, "", false
		}
		switch b[6] {
		case 6:
			a := netip.AddrFrom16([16]byte(b[8:24]))
			return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[40:])), "connect", true
		case 58: // ICMPv6: type 1 code 4, port unreachable
			if b[40] != 1 || b[41] != 4 {
				return netip.AddrPort{}, "", false
			}
			in := b[48:]
			if len(in) < 44 || in[0]>>4 != 6 || in[6] != 17 {
				return netip.AddrPort{}, "", false
			}
			a := netip.AddrFrom16([16]byte(in[24:40]))
			return netip.AddrPortFrom(a, binary.BigEndian.Uint16(in[42:])), "udp", true
		}
	}
	return netip.AddrPort{}, "", false
}
