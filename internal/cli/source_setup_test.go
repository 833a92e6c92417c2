package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
)

// A source's set-up is given and changed on the command line, and shown
// by `source list`; bad set-ups are refused with what to change.
func TestSourceSetupFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.data = t.TempDir()
	r := e.ok("", "", "source", "add", "octo/app", "--setup", "npm ci", "--setup-file", "package-lock.json", "--setup-egress-allow", "registry.npmjs.org")
	if !strings.Contains(r.stdout, "Source octo/app added") {
		t.Errorf("source add = %q", r.stdout)
	}
	list := func() baton.SourceSetup {
		t.Helper()
		var v struct {
			Sources []baton.Source `json:"sources"`
		}
		if err := json.Unmarshal([]byte(e.ok("", "", "source", "list", "--json").stdout), &v); err != nil || len(v.Sources) != 1 {
			t.Fatalf("source list --json: %v %+v", err, v)
		}
		return v.Sources[0].Setup
	}
	if su := list(); !slices.Equal(su.Commands, []string{"npm ci"}) || !slices.Equal(su.Files, []string{"package-lock.json"}) || !slices.Equal(su.EgressAllow, []string{"registry.npmjs.org"}) {
		t.Errorf("set-up after add = %+v", su)
	}
	if out := e.ok("", "", "source", "list").stdout; !strings.Contains(out, "`npm ci`") {
		t.Errorf("source list does not show the set-up:\n%s", out)
	}
	r = e.ok("", "", "source", "set", "octo/app", "--setup", "go mod download", "--setup", "go build ./...")
	if !strings.Contains(r.stdout, "run the set-up `go mod download`; `go build ./...`") {
		t.Errorf("source set = %q", r.stdout)
	}
	if su := list(); !slices.Equal(su.Commands, []string{"go mod download", "go build ./..."}) || len(su.Files) != 0 {
		t.Errorf("set-up after set = %+v", su)
	}
	for _, bad := range [][]string{
		{"source", "set", "octo/app"},
		{"source", "set", "octo/app", "--no-setup", "--setup", "x"},
		{"source", "set", "octo/app", "--setup-file", "go.sum"},
		{"source", "set", "octo/app", "--setup", "x", "--setup-file", "../go.sum"},
		{"source", "set", "octo/nope", "--setup", "x"},
		// Files or hosts without commands name no set-up: refused, not
		// dropped without a word.
		{"source", "add", "octo/other", "--setup-file", "go.sum"},
		{"source", "add", "octo/other", "--setup-egress-allow", "proxy.golang.org"},
	} {
		if r := e.run("", "", bad...); r.code == 0 || r.stderr == "" {
			t.Errorf("baton %v: exit %d, stderr %q; want a refusal that says why", bad, r.code, r.stderr)
		}
	}
	e.ok("", "", "source", "set", "octo/app", "--no-setup")
	if su := list(); !su.IsZero() {
		t.Errorf("set-up after --no-setup = %+v", su)
	}
}
