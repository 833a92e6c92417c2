package egress

import (
	"encoding/binary"
	"net/netip"
)

// A connection the box's own kernel refuses never reaches the proxy: a
// TCP connection to a port where nothing listens in the box (this
// machine's services are not there: baton's API, a database) is answered
// with a reset, a UDP datagram to such a port with an ICMP "port
// unreachable". The init watches for both with raw sockets, which get a
// copy of each packet the box receives before TCP, UDP or ICMP handle it,
// and reports each to the proxy, so the attempt is recorded like any
// other refusal. A kernel filter passes only resets with sequence number
// 0, the answer to a SYN at a closed port (RFC 793: a reset that aborts an
// established connection carries the connection's sequence), and the
// port-unreachable messages; the readers below check it all again.
//
// Raw sockets rather than one packet socket on the loopback interface:
// a packet socket's bind and close each wait for an RCU grace period,
// tens of milliseconds on a busy machine, at every box's start and end.

// resetTarget4 reads an IPv4 packet, from its header on, that carries a
// TCP reset with sequence number 0 and ACK set: its source is the closed
// port the box tried.
func resetTarget4(b []byte) (netip.AddrPort, bool) {
	ihl, ok := ipv4Header(b, 6)
	if !ok || !isRefusingReset(b[ihl:]) {
		return netip.AddrPort{}, false
	}
	a := netip.AddrFrom4([4]byte(b[12:16]))
	return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[ihl:])), true
}

// unreachableTarget4 reads an IPv4 packet, from its header on, that
// carries an ICMP port-unreachable message: the destination of the UDP
// datagram it quotes is what the box tried.
func unreachableTarget4(b []byte) (netip.AddrPort, bool) {
	ihl, ok := ipv4Header(b, 1)
	if !ok || len(b) < ihl+8 || b[ihl] != 3 || b[ihl+1] != 3 {
		return netip.AddrPort{}, false
	}
	in := b[ihl+8:]
	iihl, ok := ipv4Header(in, 17)
	if !ok || len(in) < iihl+4 {
		return netip.AddrPort{}, false
	}
	a := netip.AddrFrom4([4]byte(in[16:20]))
	return netip.AddrPortFrom(a, binary.BigEndian.Uint16(in[iihl+2:])), true
}

// resetTarget6 reads a TCP segment from src (an IPv6 raw socket gives
// the transport header on, and the source apart) that is a refusing
// reset.
func resetTarget6(src netip.Addr, tcp []byte) (netip.AddrPort, bool) {
	if !src.IsValid() || !isRefusingReset(tcp) {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(src.Unmap(), binary.BigEndian.Uint16(tcp)), true
}

// unreachableTarget6 reads an ICMPv6 message, from its header on, that is
// a port-unreachable: the destination of the UDP datagram it quotes.
func unreachableTarget6(icmp []byte) (netip.AddrPort, bool) {
	if len(icmp) < 8+40+4 || icmp[0] != 1 || icmp[1] != 4 {
		return netip.AddrPort{}, false
	}
	in := icmp[8:]
	if in[0]>>4 != 6 || in[6] != 17 {
		return netip.AddrPort{}, false
	}
	a := netip.AddrFrom16([16]byte(in[24:40]))
	return netip.AddrPortFrom(a, binary.BigEndian.Uint16(in[42:])), true
}

// ipv4Header checks b's IPv4 header for proto, not a fragment past the
// first, and returns its length.
func ipv4Header(b []byte, proto byte) (int, bool) {
	if len(b) < 20 || b[0]>>4 != 4 {
		return 0, false
	}
	ihl := int(b[0]&0xf) * 4
	if ihl < 20 || len(b) < ihl+8 || b[9] != proto || binary.BigEndian.Uint16(b[6:])&0x1fff != 0 {
		return 0, false
	}
	return ihl, true
}

// isRefusingReset reports whether a TCP segment (from its header on) is
// a reset with ACK set and sequence number 0: the kernel's answer to a
// SYN at a port where nothing listens.
func isRefusingReset(tcp []byte) bool {
	return len(tcp) >= 20 && tcp[13]&0x14 == 0x14 && binary.BigEndian.Uint32(tcp[4:]) == 0
}
