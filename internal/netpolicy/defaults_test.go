package netpolicy

import (
	"testing"

	"github.com/baton-agent/baton"
)

func TestConfigure(t *testing.T) {
	t.Parallel()
	env := map[string]string{AllowVar: "registry.corp.example, 10.0.0.7:5432"}
	a, err := Configure(func(k string) string { return env[k] }, Settings{Allow: []string{"*.internal.example"}, Forge: []string{"ghe.example.com", "api.ghe.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, hp := range []struct {
		host string
		port int
	}{
		{"registry.npmjs.org", 443}, {"proxy.golang.org", 443}, {"objects.githubusercontent.com", 443},
		{"ghe.example.com", 443}, {"api.ghe.example.com", 443}, {"x.internal.example", 80},
		{"registry.corp.example", 443}, {"10.0.0.7", 5432},
	} {
		if _, ok := a.Allows(hp.host, hp.port); !ok {
			t.Errorf("Configure() does not allow %s:%d", hp.host, hp.port)
		}
	}
	off, err := Configure(func(string) string { return "off" }, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := off.Allows("registry.npmjs.org", 443); ok {
		t.Error("with the defaults off, registry.npmjs.org is allowed")
	}
	if _, err := Configure(nil, Settings{Defaults: "maybe"}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("Configure(defaults maybe) error = %v, want Invalid", err)
	}
	if _, err := Configure(nil, Settings{Allow: []string{"localhost"}}); baton.ErrorCode(err) != baton.Invalid {
		t.Errorf("Configure(allow localhost) error = %v, want Invalid", err)
	}
	for _, h := range append(Registries(), GitHub()...) {
		if _, err := ParseRule(h); err != nil {
			t.Errorf("default entry %q: %v", h, err)
		}
	}
}
