package egress

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
)

// The DNS stub reads only what a resolver sends it: a standard query with
// one question (RFC 1035 §4.1). It answers A queries for allowed names
// with an in-box address, anything else about an allowed name with no
// records, and a name that is not allowed with NXDOMAIN. It never
// forwards a query.

// DNS codes the stub uses.
const (
	typeA    = 1
	typeAAAA = 28
	classIN  = 1

	rcodeOK       = 0
	rcodeFormErr  = 1
	rcodeServFail = 2
	rcodeNXDomain = 3
	rcodeNotImp   = 4

	dnsHeaderLen = 12
	// maxDNSMessage bounds a message over TCP; a UDP datagram is read
	// into a buffer of this size too.
	maxDNSMessage = 4096
	// answerTTL is how long a resolver may keep an answer: an allowed
	// name keeps its in-box address for the whole run.
	answerTTL = 300
)

// errNotQuery marks a message that is not worth an answer (a response,
// or too short to carry an ID).
var errNotQuery = errors.New("not a DNS query")

// dnsQuery is a query's one question.
type dnsQuery struct {
	id    uint16
	rd    bool // recursion desired, echoed
	name  string
	qtype uint16
	// question is the question section as sent, echoed in the answer.
	question []byte
	// rcode is set when the query cannot be answered normally (FORMERR,
	// NOTIMP); name and qtype are then unset.
	rcode int
}

// parseQuery reads a DNS query. An error means no answer at all; a query
// that deserves an error answer comes back with rcode set. The name is
// lower-cased, without the final dot, its bytes outside printable ASCII
// replaced by '?'.
func parseQuery(b []byte) (dnsQuery, error) {
	if len(b) < dnsHeaderLen {
		return dnsQuery{}, errNotQuery
	}
	flags := binary.BigEndian.Uint16(b[2:])
	q := dnsQuery{id: binary.BigEndian.Uint16(b), rd: flags&0x0100 != 0}
	if flags&0x8000 != 0 {
		return dnsQuery{}, errNotQuery // a response: answering it could loop
	}
	if opcode := (flags >> 11) & 0xf; opcode != 0 {
		q.rcode = rcodeNotImp
		return q, nil
	}
	if binary.BigEndian.Uint16(b[4:]) != 1 {
		q.rcode = rcodeFormErr
		return q, nil
	}
	var name strings.Builder
	i := dnsHeaderLen
	for {
		if i >= len(b) {
			q.rcode = rcodeFormErr
			return q, nil
		}
		n := int(b[i])
		if n == 0 {
			i++
			break
		}
		// A pointer (0xc0) or a reserved label type has no place in a
		// question; a name is at most 255 bytes on the wire.
		if n > 63 || i+1+n > len(b) || i+1+n-dnsHeaderLen > 255 {
			q.rcode = rcodeFormErr
			return q, nil
		}
		if name.Len() > 0 {
			name.WriteByte('.')
		}
		for _, c := range b[i+1 : i+1+n] {
			switch {
			case c >= 'A' && c <= 'Z':
				c += 'a' - 'A'
			case c <= ' ' || c > '~' || c == '.':
				c = '?'
			}
			name.WriteByte(c)
		}
		i += 1 + n
	}
	if i+4 > len(b) {
		q.rcode = rcodeFormErr
		return q, nil
	}
	q.name = name.String()
	q.qtype = binary.BigEndian.Uint16(b[i:])
	if class := binary.BigEndian.Uint16(b[i+2:]); class != classIN {
		q.rcode = rcodeNotImp
		q.name, q.qtype = "", 0
		return q, nil
	}
	q.question = b[dnsHeaderLen : i+4]
	return q, nil
}

// answer builds the response to q: rcode, and when a is valid and q asks
// for its type, one record of it.
func (q dnsQuery) answer(rcode int, a netip.Addr) []byte {
	flags := uint16(0x8000 | 0x0400 | 0x0080) // a response, authoritative, recursion available
	if q.rd {
		flags |= 0x0100
	}
	flags |= uint16(rcode & 0xf)
	qd := uint16(0)
	if q.question != nil {
		qd = 1
	}
	withRecord := rcode == rcodeOK && a.IsValid() && (a.Is4() && q.qtype == typeA || a.Is6() && q.qtype == typeAAAA)
	an := uint16(0)
	if withRecord {
		an = 1
	}
	out := make([]byte, dnsHeaderLen, dnsHeaderLen+len(q.question)+28)
	binary.BigEndian.PutUint16(out[0:], q.id)
	binary.BigEndian.PutUint16(out[2:], flags)
	binary.BigEndian.PutUint16(out[4:], qd)
	binary.BigEndian.PutUint16(out[6:], an)
	out = append(out, q.question...)
	if withRecord {
		rdata := a.AsSlice()
		out = append(out, 0xc0, dnsHeaderLen) // the name: a pointer to the question's
		out = binary.BigEndian.AppendUint16(out, q.qtype)
		out = binary.BigEndian.AppendUint16(out, classIN)
		out = binary.BigEndian.AppendUint32(out, answerTTL)
		out = binary.BigEndian.AppendUint16(out, uint16(len(rdata)))
		out = append(out, rdata...)
	}
	return out
}

// encodeQuery builds a query for name and qtype: for tests, and for
// checking that answers read back.
func encodeQuery(id uint16, name string, qtype uint16) []byte {
	out := make([]byte, dnsHeaderLen)
	binary.BigEndian.PutUint16(out[0:], id)
	binary.BigEndian.PutUint16(out[2:], 0x0100)
	binary.BigEndian.PutUint16(out[4:], 1)
	for label := range strings.SplitSeq(strings.TrimSuffix(name, "."), ".") {
		out = append(out, byte(len(label)))
		out = append(out, label...)
	}
	out = append(out, 0)
	out = binary.BigEndian.AppendUint16(out, qtype)
	return binary.BigEndian.AppendUint16(out, classIN)
}
