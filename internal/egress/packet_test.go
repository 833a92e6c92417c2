package egress

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

// ipv4 builds an IPv4 packet of proto carrying payload, from src to dst.
func ipv4(proto byte, src, dst netip.Addr, payload []byte) []byte {
	b := make([]byte, 20, 20+len(payload))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(20+len(payload)))
	b[8], b[9] = 64, proto
	s, d := src.As4(), dst.As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	return append(b, payload...)
}

// ipv6 builds an IPv6 packet of next header nh carrying payload.
func ipv6(nh byte, src, dst netip.Addr, payload []byte) []byte {
	b := make([]byte, 40, 40+len(payload))
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], uint16(len(payload)))
	b[6], b[7] = nh, 64
	s, d := src.As16(), dst.As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	return append(b, payload...)
}

// tcp builds a TCP header from sport to dport with flags and seq.
func tcp(sport, dport uint16, flags byte, seq uint32) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint32(b[4:], seq)
	b[12], b[13] = 0x50, flags
	return b
}

// udp builds a UDP header from sport to dport.
func udp(sport, dport uint16) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	return b
}

func TestRefusedTargets(t *testing.T) {
	t.Parallel()
	box, target := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddrPort("127.0.0.1:5432")
	reset := ipv4(6, target.Addr(), box, tcp(target.Port(), 40000, 0x14, 0))
	if got, ok := resetTarget4(reset); !ok || got != target {
		t.Errorf("resetTarget4(a refusing reset) = %v, %v; want %v", got, ok, target)
	}
	for name, p := range map[string][]byte{
		"an abort":      ipv4(6, target.Addr(), box, tcp(target.Port(), 40000, 0x14, 12345)),
		"a SYN-ACK":     ipv4(6, target.Addr(), box, tcp(target.Port(), 40000, 0x12, 0)),
		"a RST w/o ACK": ipv4(6, target.Addr(), box, tcp(target.Port(), 40000, 0x04, 0)),
		"not TCP":       ipv4(17, target.Addr(), box, tcp(target.Port(), 40000, 0x14, 0)),
		"cut short":     reset[:30],
	} {
		if got, ok := resetTarget4(p); ok {
			t.Errorf("resetTarget4(%s) = %v, want nothing", name, got)
		}
	}
	sent := ipv4(17, box, target.Addr(), udp(40000, target.Port()))
	icmp := append([]byte{3, 3, 0, 0, 0, 0, 0, 0}, sent[:28]...)
	if got, ok := unreachableTarget4(ipv4(1, box, box, icmp)); !ok || got != target {
		t.Errorf("unreachableTarget4(port unreachable) = %v, %v; want %v", got, ok, target)
	}
	host := append([]byte{3, 1, 0, 0, 0, 0, 0, 0}, sent[:28]...)
	if got, ok := unreachableTarget4(ipv4(1, box, box, host)); ok {
		t.Errorf("unreachableTarget4(host unreachable) = %v, want nothing", got)
	}
	v6 := netip.MustParseAddrPort("[::1]:8080")
	if got, ok := resetTarget6(v6.Addr(), tcp(8080, 40000, 0x14, 0)); !ok || got != v6 {
		t.Errorf("resetTarget6 = %v, %v; want %v", got, ok, v6)
	}
	sent6 := ipv6(17, netip.IPv6Loopback(), v6.Addr(), udp(40000, v6.Port()))
	if got, ok := unreachableTarget6(append([]byte{1, 4, 0, 0, 0, 0, 0, 0}, sent6...)); !ok || got != v6 {
		t.Errorf("unreachableTarget6 = %v, %v; want %v", got, ok, v6)
	}
}

// FuzzRefusedTargets checks the readers of what the box's kernel refused
// on any bytes (no panic, and an answer only for what its filter passes),
// and that a packet built for a target reads back as that target.
func FuzzRefusedTargets(f *testing.F) {
	f.Add([]byte{0x45, 0, 0, 40}, []byte{127, 0, 0, 1}, uint16(5432), uint32(0), byte(0x14))
	f.Add([]byte{0x60}, []byte{10, 1, 2, 3}, uint16(53), uint32(7), byte(0x04))
	f.Fuzz(func(t *testing.T, raw, addr []byte, port uint16, seq uint32, flags byte) {
		for _, read := range []func([]byte) (netip.AddrPort, bool){resetTarget4, unreachableTarget4, unreachableTarget6,
			func(b []byte) (netip.AddrPort, bool) { return resetTarget6(netip.IPv6Loopback(), b) }} {
			_, _ = read(raw)
		}
		if len(addr) != 4 {
			return
		}
		a := netip.AddrFrom4([4]byte(addr))
		box := netip.MustParseAddr("127.0.0.1")
		got, ok := resetTarget4(ipv4(6, a, box, tcp(port, 40000, flags, seq)))
		want := flags&0x14 == 0x14 && seq == 0
		if ok != want || ok && got != netip.AddrPortFrom(a, port) {
			t.Fatalf("resetTarget4(flags %#x seq %d from %v:%d) = %v, %v", flags, seq, a, port, got, ok)
		}
		sent := ipv4(17, box, a, udp(40000, port))
		got, ok = unreachableTarget4(ipv4(1, a, box, append([]byte{3, 3, 0, 0, 0, 0, 0, 0}, sent...)))
		if !ok || got != netip.AddrPortFrom(a, port) {
			t.Fatalf("unreachableTarget4(datagram to %v:%d) = %v, %v", a, port, got, ok)
		}
		a6 := netip.AddrFrom16(a.As16())
		sent6 := ipv6(17, netip.IPv6Loopback(), a6, udp(40000, port))
		got, ok = unreachableTarget6(append([]byte{1, 4, 0, 0, 0, 0, 0, 0}, sent6...))
		if !ok || got != netip.AddrPortFrom(a6, port) {
			t.Fatalf("unreachableTarget6(datagram to %v:%d) = %v, %v", a6, port, got, ok)
		}
	})
}
