package egress

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
)

func TestDNSAnswer(t *testing.T) {
	t.Parallel()
	q, err := parseQuery(encodeQuery(0xbeef, "API.Example.COM.", typeA))
	if err != nil || q.rcode != rcodeOK {
		t.Fatalf("parseQuery() = %+v, %v", q, err)
	}
	if q.name != "api.example.com" || q.qtype != typeA || q.id != 0xbeef || !q.rd {
		t.Fatalf("parseQuery() = %+v", q)
	}
	out := q.answer(rcodeOK, netip.MustParseAddr("127.77.0.1"))
	got := readAnswer(t, out)
	if got.id != 0xbeef || got.rcode != rcodeOK || got.addr != netip.MustParseAddr("127.77.0.1") {
		t.Errorf("answer() reads back as %+v", got)
	}
	// AAAA of an allowed name: no records, no error, so IPv4 is used.
	q6, _ := parseQuery(encodeQuery(7, "api.example.com", typeAAAA))
	if got := readAnswer(t, q6.answer(rcodeOK, netip.MustParseAddr("127.77.0.1"))); got.rcode != rcodeOK || got.addr.IsValid() {
		t.Errorf("AAAA answer reads back as %+v, want NOERROR without a record", got)
	}
	nx, _ := parseQuery(encodeQuery(8, "exfil.attacker.example", typeA))
	if got := readAnswer(t, nx.answer(rcodeNXDomain, netip.Addr{})); got.rcode != rcodeNXDomain || got.addr.IsValid() {
		t.Errorf("NXDOMAIN answer reads back as %+v", got)
	}
}

func TestDNSQueryOddities(t *testing.T) {
	t.Parallel()
	if _, err := parseQuery([]byte{1, 2, 3}); err == nil {
		t.Error("parseQuery(3 bytes) answered")
	}
	resp := encodeQuery(1, "a.example", typeA)
	resp[2] |= 0x80
	if _, err := parseQuery(resp); err == nil {
		t.Error("parseQuery(a response) answered: two stubs could loop")
	}
	two := encodeQuery(1, "a.example", typeA)
	binary.BigEndian.PutUint16(two[4:], 2)
	if q, err := parseQuery(two); err != nil || q.rcode != rcodeFormErr {
		t.Errorf("parseQuery(two questions) = %+v, %v; want FORMERR", q, err)
	}
	ptr := append(encodeQuery(1, "", typeA)[:dnsHeaderLen], 0xc0, 0x0c, 0, 1, 0, 1)
	if q, err := parseQuery(ptr); err != nil || q.rcode != rcodeFormErr {
		t.Errorf("parseQuery(a pointer in the question) = %+v, %v; want FORMERR", q, err)
	}
	odd := encodeQuery(1, "x", typeA)
	odd[dnsHeaderLen+1] = 0x07 // a control byte in a label
	if q, _ := parseQuery(odd); q.name != "?" {
		t.Errorf("parseQuery(control byte) name = %q, want ?", q.name)
	}
	op := encodeQuery(1, "a.example", typeA)
	op[2] |= 0x28 // opcode 5, UPDATE
	if q, err := parseQuery(op); err != nil || q.rcode != rcodeNotImp {
		t.Errorf("parseQuery(UPDATE) = %+v, %v; want NOTIMP", q, err)
	}
}

// dnsAnswer is what a test reads back from an answer.
type dnsAnswer struct {
	id    uint16
	rcode int
	name  string
	addr  netip.Addr
}

// readAnswer reads an answer the way a resolver would, failing t on
// anything malformed.
func readAnswer(t testing.TB, b []byte) dnsAnswer {
	t.Helper()
	if len(b) < dnsHeaderLen {
		t.Fatalf("answer of %d bytes", len(b))
	}
	flags := binary.BigEndian.Uint16(b[2:])
	if flags&0x8000 == 0 {
		t.Fatalf("answer without the response bit: %x", b)
	}
	a := dnsAnswer{id: binary.BigEndian.Uint16(b), rcode: int(flags & 0xf)}
	qd, an := binary.BigEndian.Uint16(b[4:]), binary.BigEndian.Uint16(b[6:])
	if qd > 1 || an > 1 || binary.BigEndian.Uint16(b[8:]) != 0 || binary.BigEndian.Uint16(b[10:]) != 0 {
		t.Fatalf("answer counts qd=%d an=%d: %x", qd, an, b)
	}
	i := dnsHeaderLen
	if qd == 1 {
		q, err := parseQuery(append(append([]byte(nil), b[:2]...), append([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0}, b[dnsHeaderLen:]...)...))
		if err != nil || q.rcode != rcodeOK {
			t.Fatalf("answer's question does not read: %+v %v", q, err)
		}
		a.name = q.name
		i += len(q.question)
	}
	if an == 1 {
		if len(b) < i+12 || b[i] != 0xc0 || b[i+1] != dnsHeaderLen {
			t.Fatalf("record does not point at the question: %x", b[i:])
		}
		n := int(binary.BigEndian.Uint16(b[i+10:]))
		if len(b) != i+12+n {
			t.Fatalf("record of %d bytes in %d", n, len(b)-i-12)
		}
		ad, ok := netip.AddrFromSlice(b[i+12:])
		if !ok {
			t.Fatalf("record data %x is not an address", b[i+12:])
		}
		a.addr = ad
	} else if len(b) != i {
		t.Fatalf("%d bytes after the question", len(b)-i)
	}
	return a
}

// FuzzDNSQuery checks that any message either gets no answer or one that
// reads back: same ID, the question echoed, and the address only for the
// type asked.
func FuzzDNSQuery(f *testing.F) {
	f.Add(encodeQuery(1, "api.github.com", typeA))
	f.Add(encodeQuery(2, "x.attacker.example", typeAAAA))
	f.Add(encodeQuery(3, "", 16))
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c})
	f.Fuzz(func(t *testing.T, msg []byte) {
		q, err := parseQuery(msg)
		if err != nil {
			return
		}
		for _, a := range []netip.Addr{{}, netip.MustParseAddr("127.77.0.9"), netip.IPv6Loopback()} {
			out := q.answer(q.rcode, a)
			got := readAnswer(t, out)
			if got.id != q.id {
				t.Fatalf("answer id %d, query id %d", got.id, q.id)
			}
			if q.rcode == rcodeOK && got.name != q.name {
				t.Fatalf("answer names %q, query %q", got.name, q.name)
			}
			if got.addr.IsValid() && (q.rcode != rcodeOK || got.addr != a) {
				t.Fatalf("answer carries %v for %+v", got.addr, q)
			}
			if q.rcode == rcodeOK && !bytes.Equal(out[dnsHeaderLen:dnsHeaderLen+len(q.question)], q.question) {
				t.Fatal("question not echoed")
			}
		}
		if len(q.name) > 255 {
			t.Fatalf("name of %d bytes", len(q.name))
		}
		for _, c := range []byte(q.name) {
			if c <= ' ' || c > '~' || c >= 'A' && c <= 'Z' {
				t.Fatalf("name %q holds byte %#x", q.name, c)
			}
		}
	})
}

// startTestDNS serves A records from names (name → IPv4 address) on a
// UDP port of 127.0.0.1 until the test ends, and returns a resolver that
// asks it.
func startTestDNS(t *testing.T, names map[string]string) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, maxDNSMessage)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q, err := parseQuery(buf[:n])
			if err != nil {
				continue
			}
			rcode, a := rcodeNXDomain, netip.Addr{}
			if s, ok := names[q.name]; ok {
				rcode, a = rcodeOK, netip.MustParseAddr(s)
			}
			_, _ = pc.WriteTo(q.answer(rcode, a), from)
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}
