package netpolicy

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-agent/baton"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Rule
	}{
		{"registry.npmjs.org", Rule{Host: "registry.npmjs.org"}},
		{"  API.GitHub.com. ", Rule{Host: "api.github.com"}},
		{"ghe.example.com:8443", Rule{Host: "ghe.example.com", Port: 8443}},
		{"*.githubusercontent.com", Rule{Host: "*.githubusercontent.com"}},
		{"*", Rule{Host: "*"}},
		{"*:*", Rule{Host: "*", Port: AnyPort}},
		{"db.internal.example:*", Rule{Host: "db.internal.example", Port: AnyPort}},
		{"https://ghe.example.com/api/v3", Rule{Host: "ghe.example.com", Port: 443}},
		{"http://127.0.0.1:8080/v1", Rule{Host: "127.0.0.1", Port: 8080}},
		{"HTTPS://Example.com:444", Rule{Host: "example.com", Port: 444}},
		{"ssh://github.com", Rule{Host: "github.com", Port: 22}},
		{"localhost:11434", Rule{Host: "localhost", Port: 11434}},
		{"[::1]:8080", Rule{Host: "::1", Port: 8080}},
		{"2001:db8::1", Rule{Host: "2001:db8::1"}},
		{"[2001:db8::1]", Rule{Host: "2001:db8::1"}},
		{"10.0.0.5:5432", Rule{Host: "10.0.0.5", Port: 5432}},
		{"::ffff:10.0.0.5", Rule{Host: "10.0.0.5"}},
		{"_acme.example.com", Rule{Host: "_acme.example.com"}},
	}
	for _, tt := range tests {
		got, err := ParseRule(tt.in)
		if err != nil {
			t.Errorf("ParseRule(%q) = %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseRule(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if again, err := ParseRule(got.String()); err != nil || again != got {
			t.Errorf("ParseRule(%q) = %+v, %v: its String does not read back", got.String(), again, err)
		}
	}
}

func TestParseRuleRefuses(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"", "   ", "127.0.0.1", "localhost", "127.0.0.1:*", "[::1]", "localhost:*",
		"0.0.0.0:80", "[::]:443", "224.0.0.1", "fe80::1%eth0",
		"ftp://example.com", "https://user:pw@example.com", "example.com/path", "user@example.com",
		"example.com:0", "example.com:65536", "example.com:08", "example.com:", "example.com:+80",
		"*.com", "*.", "**.example.com", "exa mple.com", "-bad.example.com", "bad-.example.com",
		"a..b", "1.2.3", "1.2.3.4.5", strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 130) + "com",
		"[::1", "[example.com]:80", "[::1]x", "::1:80:80:", "ex\u00e4mple.com",
		strings.Repeat("x", MaxEntry+1),
	} {
		if r, err := ParseRule(in); err == nil {
			t.Errorf("ParseRule(%q) = %+v, want an error", in, r)
		} else if baton.ErrorCode(err) != baton.Invalid {
			t.Errorf("ParseRule(%q) error code = %s, want invalid", in, baton.ErrorCode(err))
		}
	}
}

func TestAllows(t *testing.T) {
	t.Parallel()
	a, err := Parse("api.anthropic.com", "*.githubusercontent.com, registry.npmjs.org:443",
		"127.0.0.1:8080 localhost:9000", "10.0.0.5:5432", "*:8443")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		port int
		want bool
	}{
		{"api.anthropic.com", 443, true},
		{"API.anthropic.com.", 80, true},
		{"api.anthropic.com", 8080, false},
		{"anthropic.com", 443, false},
		{"evil-api.anthropic.com", 443, false},
		{"objects.githubusercontent.com", 443, true},
		{"a.b.githubusercontent.com", 80, true},
		{"githubusercontent.com", 443, false},
		{"registry.npmjs.org", 443, true},
		{"registry.npmjs.org", 80, false},
		{"127.0.0.1", 8080, true},
		{"127.0.0.1", 8081, false},
		{"127.0.0.2", 8080, false},
		{"localhost", 8080, false},
		{"localhost", 9000, true},
		{"127.0.0.1", 9000, true}, // localhost stands for the loopback addresses
		{"::1", 9000, true},
		{"[::1]", 9000, true},
		{"::ffff:127.0.0.1", 8080, true},
		{"10.0.0.5", 5432, true},
		{"10.0.0.5", 443, false},
		{"anything.example", 8443, true},
		{"93.184.216.34", 8443, false}, // * is names, never addresses
		{"localhost", 8443, false},     // nor this machine
		{"x.localhost", 8443, false},
		{"evil.example", 443, false},
	}
	for _, tt := range tests {
		if _, got := a.Allows(tt.host, tt.port); got != tt.want {
			t.Errorf("Allows(%q, %d) = %v, want %v", tt.host, tt.port, got, tt.want)
		}
	}
	var none Allowlist
	if _, ok := none.Allows("api.github.com", 443); ok {
		t.Error("the zero Allowlist allows api.github.com:443")
	}
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	a, err := Parse("127.0.0.1:8080", "localhost:9000", "[::1]:7000", "api.example.com", "127.0.0.1:8080",
		"10.0.0.5", "10.0.0.6:*", "[2001:db8::1]:5432")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.AddrPort{
		netip.MustParseAddrPort("127.0.0.1:8080"), netip.MustParseAddrPort("127.0.0.1:9000"),
		netip.MustParseAddrPort("[::1]:9000"), netip.MustParseAddrPort("[::1]:7000"),
		netip.MustParseAddrPort("10.0.0.5:443"), netip.MustParseAddrPort("10.0.0.5:80"),
		netip.MustParseAddrPort("[2001:db8::1]:5432"),
	}
	if diff := cmp.Diff(want, a.Endpoints(), cmp.Comparer(func(x, y netip.AddrPort) bool { return x == y })); diff != "" {
		t.Errorf("Endpoints() mismatch (-want +got):\n%s", diff)
	}
}

func TestParseBounds(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range MaxRules + 1 {
		b.WriteString("h")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(".example")
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(":")
		b.WriteString(strconv.Itoa(1 + i))
		b.WriteString(",")
	}
	if _, err := Parse(b.String()); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("Parse(%d entries) error = %v, want Invalid", MaxRules+1, err)
	}
	a, err := Parse("a.example", "a.example", "A.example.")
	if err != nil || len(a.Rules()) != 1 {
		t.Errorf("Parse(three spellings of one rule) = %v, %v; want one rule", a.Strings(), err)
	}
}

// FuzzParseRule checks that whatever ParseRule accepts is a rule in
// canonical form that reads back as itself, that a loopback rule names
// one port, and that a rule allows the concrete host it names.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"api.github.com", "*.githubusercontent.com", "*", "*:*", "localhost:8080", "127.0.0.1:1",
		"[::1]:80", "https://ghe.example.com:8443/api", "10.0.0.1", "::ffff:1.2.3.4", "ssh://x.y",
		"a.b:*", "ex..ample", "[fe80::1%25lo]:80",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			if baton.ErrorCode(err) != baton.Invalid {
				t.Fatalf("ParseRule(%q) error code %s, want invalid", s, baton.ErrorCode(err))
			}
			return
		}
		again, err := ParseRule(r.String())
		if err != nil || again != r {
			t.Fatalf("ParseRule(%q) = %+v, whose String %q reads back as %+v, %v", s, r, r.String(), again, err)
		}
		if r.Host != strings.ToLower(r.Host) || strings.HasSuffix(r.Host, ".") {
			t.Fatalf("ParseRule(%q).Host = %q, not normalized", s, r.Host)
		}
		if r.Loopback() && (r.Port == 0 || r.Port == AnyPort) {
			t.Fatalf("ParseRule(%q) = %+v: a loopback rule for more than one port", s, r)
		}
		if r.Port < AnyPort || r.Port > 65535 {
			t.Fatalf("ParseRule(%q).Port = %d", s, r.Port)
		}
		if strings.Contains(r.Host, "*") {
			return
		}
		port := r.Port
		if port == 0 || port == AnyPort {
			port = 443
		}
		var a Allowlist
		_ = a.add(r)
		if _, ok := a.Allows(r.Host, port); !ok {
			t.Fatalf("the rule %q does not allow %s:%d", r, r.Host, port)
		}
		if _, ok := a.Allows(r.Host, 1); ok && r.Port != 1 && r.Port != AnyPort {
			t.Fatalf("the rule %q allows %s:1", r, r.Host)
		}
	})
}
