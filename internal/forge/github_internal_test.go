package forge

import (
	"strings"
	"testing"

	"github.com/baton-agent/baton"
)

func TestPRNumber(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]int{
		"https://github.com/octo/app/pull/31":  31,
		"https://github.com/octo/app/pull/31/": 31,
		"https://github.com/octo/app/pull/x":   0,
		"https://github.com/octo/app/issues/3": 0,
		"":                                     0,
	} {
		d := &baton.Delivery{Refs: []baton.Ref{{Role: baton.RoleWork, Type: "pr", URL: url}}}
		if n, _ := prNumber(d); n != want {
			t.Errorf("prNumber(%q) = %d, want %d", url, n, want)
		}
	}
}

func FuzzPRNumber(f *testing.F) {
	f.Add("https://github.com/octo/app/pull/31")
	f.Add("/pull/-1")
	f.Fuzz(func(t *testing.T, url string) {
		d := &baton.Delivery{Refs: []baton.Ref{{Role: baton.RoleWork, Type: "pr", URL: url}}}
		n, ok := prNumber(d)
		if ok && (n <= 0 || !strings.Contains(url, "/pull/")) {
			t.Fatalf("prNumber(%q) = %d, true", url, n)
		}
	})
}
