package netpolicy

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-agent/baton"
)

// Bounds of an allowlist: settings, not data.
const (
	// MaxEntry is the longest entry accepted (a URL with a path fits).
	MaxEntry = 512
	// MaxRules is how many rules one allowlist may hold.
	MaxRules = 1024
	// maxName is the longest DNS name (RFC 1035), without the final dot.
	maxName = 253
)

// AnyPort in Rule.Port allows every port of the host.
const AnyPort = -1

// Rule allows connections to one host, or a family of names, on some
// ports.
type Rule struct {
	// Host is a lower-case DNS name ("api.github.com"), a name pattern
	// ("*.githubusercontent.com": every name below that one, not the name
	// itself), "*" (every name, never an address), "localhost", or an IP
	// address.
	Host string
	// Port is the one port allowed; 0 means the web's ports, 443 and 80;
	// AnyPort means all of them.
	Port int
}

// String is the rule as ParseRule reads it.
func (r Rule) String() string {
	host := r.Host
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		host = "[" + host + "]"
	}
	switch r.Port {
	case 0:
		return host
	case AnyPort:
		return host + ":*"
	}
	return host + ":" + strconv.Itoa(r.Port)
}

// addr is the rule's IP address, if its host is one.
func (r Rule) addr() (netip.Addr, bool) {
	a, err := netip.ParseAddr(r.Host)
	return a, err == nil
}

// Loopback reports whether the rule opens a service of this machine: a
// loopback address or localhost.
func (r Rule) Loopback() bool {
	if r.Host == "localhost" {
		return true
	}
	a, ok := r.addr()
	return ok && a.IsLoopback()
}

// allowsPort reports whether the rule allows port.
func (r Rule) allowsPort(port int) bool {
	switch r.Port {
	case AnyPort:
		return true
	case 0:
		return port == 443 || port == 80
	}
	return r.Port == port
}

// allowsHost reports whether the rule names host, which is normalized
// (normalizeHost).
func (r Rule) allowsHost(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		if r.Host == "localhost" {
			return a.IsLoopback()
		}
		ra, ok := r.addr()
		return ok && ra == a
	}
	switch {
	case r.Host == host:
		return true
	case r.Host == "*":
		return host != "localhost" && !strings.HasSuffix(host, ".localhost")
	case strings.HasPrefix(r.Host, "*."):
		return strings.HasSuffix(host, r.Host[1:])
	}
	return false
}

// schemePorts are the ports of the URL schemes an entry may be written
// as.
var schemePorts = map[string]int{"http": 80, "https": 443, "ws": 80, "wss": 443, "ssh": 22, "git": 9418}

// ParseRule reads one allowlist entry: a host name ("registry.npmjs.org"),
// a name pattern ("*.githubusercontent.com"), "*", an IP address, or
// "localhost", each with an optional port (":8443", ":*" for every port;
// none means 443 and 80); or a URL ("https://ghe.example.com/api/v3"),
// whose host and port are what it allows. A loopback address or localhost
// needs a port: an entry opens one service of this machine, never all.
// Errors are Invalid and quote the entry.
func ParseRule(s string) (Rule, error) {
	bad := func(format string, args ...any) (Rule, error) {
		return Rule{}, baton.Errorf(baton.Invalid, "egress entry %q: %s", baton.Truncate(s, 80, "…"), fmt.Sprintf(format, args...))
	}
	in := strings.TrimSpace(s)
	switch {
	case in == "":
		return bad("empty")
	case len(in) > MaxEntry:
		return bad("longer than %d bytes", MaxEntry)
	}
	hostport, port := in, 0
	if scheme, rest, ok := strings.Cut(in, "://"); ok {
		p, known := schemePorts[strings.ToLower(scheme)]
		if !known {
			return bad("a URL's scheme must be http, https, ws, wss, ssh or git")
		}
		u, err := url.Parse(strings.ToLower(scheme) + "://" + rest)
		if err != nil {
			return bad("not a URL")
		}
		if u.User != nil {
			return bad("credentials do not belong in an allowlist")
		}
		hostport, port = u.Host, p
	} else if strings.ContainsAny(in, "/?#@") {
		return bad("want a host, host:port or a URL such as https://host/")
	}
	host, portText, err := splitHostPort(hostport)
	if err != nil {
		return bad("%v", err)
	}
	if portText != "" {
		if port, err = parsePort(portText); err != nil {
			return bad("%v", err)
		}
	}
	if strings.HasSuffix(host, "*.") {
		return bad("a name pattern is *.domain")
	}
	r := Rule{Host: NormalizeHost(host), Port: port}
	if a, err := netip.ParseAddr(r.Host); err == nil {
		switch {
		case a.Zone() != "":
			return bad("an address with a zone cannot be allowed")
		case a.IsUnspecified() || a.IsMulticast():
			return bad("not an address a connection goes to")
		}
		r.Host = a.Unmap().String()
	} else if err := checkPattern(r.Host); err != nil {
		return bad("%v", err)
	}
	if r.Loopback() && (r.Port == 0 || r.Port == AnyPort) {
		return bad("a loopback entry needs one port (localhost:8080): it opens one service of this machine, never all of them")
	}
	return r, nil
}

// splitHostPort splits "host", "host:port", "[v6]", "[v6]:port" and a
// bare IPv6 address.
func splitHostPort(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", fmt.Errorf("unclosed [")
		}
		host, rest := s[1:end], s[end+1:]
		if _, err := netip.ParseAddr(host); err != nil {
			return "", "", fmt.Errorf("[%s] is not an IPv6 address", host)
		}
		if rest == "" {
			return host, "", nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", "", fmt.Errorf("text after ]")
		}
		return host, rest[1:], nil
	}
	if strings.Count(s, ":") > 1 {
		if _, err := netip.ParseAddr(s); err != nil {
			return "", "", fmt.Errorf("write an IPv6 address with a port as [addr]:port")
		}
		return s, "", nil
	}
	host, port, _ = strings.Cut(s, ":")
	if strings.Contains(s, ":") && port == "" {
		return "", "", fmt.Errorf("empty port")
	}
	return host, port, nil
}

// parsePort reads a port number or "*".
func parsePort(s string) (int, error) {
	if s == "*" {
		return AnyPort, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || s[0] == '0' || s[0] == '+' {
		return 0, fmt.Errorf("port %q: want 1 to 65535, or * for every port", baton.Truncate(s, 20, "…"))
	}
	return n, nil
}

// NormalizeHost lower-cases a host name and drops a final dot.
func NormalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// checkPattern checks a host that is not an address: "*", "*.name" or a
// name.
func checkPattern(h string) error {
	switch {
	case h == "*":
		return nil
	case strings.HasPrefix(h, "*."):
		if err := checkName(h[2:]); err != nil {
			return err
		}
		if !strings.Contains(h[2:], ".") {
			return fmt.Errorf("%q allows a whole top-level domain: name one below it", h)
		}
		return nil
	}
	return checkName(h)
}

// ValidName reports whether name, normalized, is a DNS name a rule may
// allow.
func ValidName(name string) bool { return checkName(name) == nil }

// checkName checks a normalized DNS name: dot-separated labels of
// letters, digits, hyphens and underscores, 1 to 63 bytes each, at most
// 253 in all.
func checkName(h string) error {
	if h == "" || len(h) > maxName {
		return fmt.Errorf("a host name has 1 to %d characters", maxName)
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("%q is not a host name (a label is 1 to 63 characters)", h)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("%q is not a host name: use letters, digits, '-', '.' (and punycode for other scripts)", baton.Truncate(h, 60, "…"))
			}
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("%q is not a host name (a label starts and ends with a letter or digit)", h)
		}
	}
	if _, err := strconv.Atoi(h[strings.LastIndexByte(h, '.')+1:]); err == nil {
		return fmt.Errorf("%q is neither a host name nor an IP address", h)
	}
	return nil
}

// Allowlist is the hosts a box may connect to. The zero value allows
// nothing.
type Allowlist struct {
	rules []Rule
}

// Parse reads entries (ParseRule); an entry may itself be a list
// separated by commas or white space, as an environment variable holds
// one. Duplicates are dropped. Errors are Invalid.
func Parse(entries ...string) (Allowlist, error) {
	var a Allowlist
	for _, e := range entries {
		for f := range strings.FieldsFuncSeq(e, isListSep) {
			r, err := ParseRule(f)
			if err != nil {
				return Allowlist{}, err
			}
			if err := a.add(r); err != nil {
				return Allowlist{}, err
			}
		}
	}
	return a, nil
}

func isListSep(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// add appends r unless it is there already.
func (a *Allowlist) add(r Rule) error {
	if slices.Contains(a.rules, r) {
		return nil
	}
	if len(a.rules) >= MaxRules {
		return baton.Errorf(baton.Invalid, "an egress allowlist holds at most %d entries", MaxRules)
	}
	a.rules = append(a.rules, r)
	return nil
}

// With returns a with b's rules added (b's beyond MaxRules dropped).
func (a Allowlist) With(b Allowlist) Allowlist {
	out := Allowlist{rules: slices.Clone(a.rules)}
	for _, r := range b.rules {
		_ = out.add(r)
	}
	return out
}

// Rules are the allowlist's rules, in the order they were added.
func (a Allowlist) Rules() []Rule { return slices.Clone(a.rules) }

// Strings are the rules as text, for logs and JSON.
func (a Allowlist) Strings() []string {
	out := make([]string, len(a.rules))
	for i, r := range a.rules {
		out[i] = r.String()
	}
	return out
}

// Allows returns the rule that lets a connection to host:port through.
// host is a name or an IP address (in brackets or not).
func (a Allowlist) Allows(host string, port int) (Rule, bool) {
	host = NormalizeHost(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if ad, err := netip.ParseAddr(host); err == nil {
		host = ad.Unmap().String()
	}
	for _, r := range a.rules {
		if r.allowsPort(port) && r.allowsHost(host) {
			return r, true
		}
	}
	return Rule{}, false
}

// Endpoints are the addresses the box may reach by address, each with a
// port: an allowed loopback endpoint (a model server on 127.0.0.1:PORT),
// or an address the allowlist names. Each gets a listener at the same
// address inside the box, so a client that ignores the proxy variables
// reaches it where it expects. localhost stands for both 127.0.0.1 and
// ::1; a rule without a port gives 443 and 80; a rule for every port of
// an address is reached through the proxy only.
func (a Allowlist) Endpoints() []netip.AddrPort {
	var out []netip.AddrPort
	add := func(ad netip.Addr, port int) {
		ap := netip.AddrPortFrom(ad, uint16(port))
		if !slices.Contains(out, ap) {
			out = append(out, ap)
		}
	}
	for _, r := range a.rules {
		var addrs []netip.Addr
		if ad, ok := r.addr(); ok {
			addrs = []netip.Addr{ad}
		} else if r.Host == "localhost" {
			addrs = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
		}
		for _, ad := range addrs {
			switch r.Port {
			case AnyPort:
			case 0:
				add(ad, 443)
				add(ad, 80)
			default:
				add(ad, r.Port)
			}
		}
	}
	return out
}

// TCPPorts are the ports any rule allows, sorted: all that Landlock can
// tell connections by where the box has no network of its own. all is
// true when a rule allows every port.
func (a Allowlist) TCPPorts() (ports []int, all bool) {
	for _, r := range a.rules {
		switch r.Port {
		case AnyPort:
			return nil, true
		case 0:
			ports = append(ports, 443, 80)
		default:
			ports = append(ports, r.Port)
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports), false
}

// Ports are the ports the rules allow host (a name) on, sorted; any is
// true when a rule allows every port. None means the name is not
// allowed at all.
func (a Allowlist) Ports(host string) (ports []int, any bool) {
	host = NormalizeHost(host)
	for _, r := range a.rules {
		if !r.allowsHost(host) {
			continue
		}
		switch r.Port {
		case AnyPort:
			return nil, true
		case 0:
			ports = append(ports, 443, 80)
		default:
			ports = append(ports, r.Port)
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports), false
}
