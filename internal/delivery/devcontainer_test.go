package delivery

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/baton-agent/baton"
)

func TestParseDevcontainerSetup(t *testing.T) {
	t.Parallel()
	got, err := ParseDevcontainerSetup([]byte(`{
		// The image is not baton's business.
		"image": "mcr.microsoft.com/devcontainers/go:1", /* nor are features */
		"features": {"ghcr.io/devcontainers/features/node:1": {},},
		"postCreateCommand": {"web": ["npm", "ci", "--prefix", "it's web"], "api": "go mod download // not a comment"},
		"onCreateCommand": "echo 'http://example.test/*'",
		"updateContentCommand": ["make", "deps"],
		"postStartCommand": "never run: it starts a server",
	}`))
	want := []string{"echo 'http://example.test/*'", "'make' 'deps'", "go mod download // not a comment", `'npm' 'ci' '--prefix' 'it'\''s web'`}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseDevcontainerSetup = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{`{"postCreateCommand": 3}`, `{"onCreateCommand": {"a": 1}}`, `{/* open`, `[]`, `{"a": 1,,}`} {
		if _, err := ParseDevcontainerSetup([]byte(bad)); err == nil {
			t.Errorf("ParseDevcontainerSetup(%s) took it", bad)
		}
	}
	if got, err := ParseDevcontainerSetup([]byte(`{"name": "no commands"}`)); err != nil || len(got) != 0 {
		t.Errorf("no commands = %q, %v", got, err)
	}
}

// A repository opts in with setup_from; one that opts in without a dev
// container is told so; a dev container that is a link is refused, not
// followed.
func TestDevcontainerSetupFile(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	if cmds, path, err := DevcontainerSetup(top); err != nil || path != "" || cmds != nil {
		t.Errorf("no dev container = %q %q %v", cmds, path, err)
	}
	if err := os.MkdirAll(filepath.Join(top, ".devcontainer"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"postCreateCommand": "cat /etc/shadow"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(top, ".devcontainer", "devcontainer.json")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := DevcontainerSetup(top); baton.ErrorCode(err) != baton.Invalid || !strings.Contains(err.Error(), "not a link") {
		t.Errorf("a linked dev container = %v, want Invalid", err)
	}
	if err := os.Remove(filepath.Join(top, ".devcontainer", "devcontainer.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, ".devcontainer.json"), []byte(`{"postCreateCommand": "npm ci"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if cmds, path, err := DevcontainerSetup(top); err != nil || path != ".devcontainer.json" || !slices.Equal(cmds, []string{"npm ci"}) {
		t.Errorf("DevcontainerSetup = %q %q %v", cmds, path, err)
	}
}

// FuzzStripJSONC: JSON is left meaning what it means (strings holding
// // and /* included), and the same JSON written with comments and
// trailing commas reads as that JSON.
func FuzzStripJSONC(f *testing.F) {
	f.Add(`{"a": "// not a comment", "b": ["/* nor */", 1, {"c": null}]}`)
	f.Add(`["\"//\"", "\\", "x/*y"]`)
	f.Add(`{"postCreateCommand": {"x": ["a", "b"]}}`)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := stripJSONC([]byte(s))
		if !json.Valid([]byte(s)) {
			return
		}
		if err != nil {
			t.Fatalf("stripJSONC(%q) failed on JSON: %v", s, err)
		}
		var want, back any
		_ = json.Unmarshal([]byte(s), &want)
		if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back, want) {
			t.Fatalf("stripJSONC(%q) = %q (%v), want the same JSON", s, got, err)
		}
		compact, _ := json.Marshal(want)
		commented := withComments(compact)
		got, err = stripJSONC(commented)
		back = nil
		if err != nil || json.Unmarshal(got, &back) != nil || !reflect.DeepEqual(back, want) {
			t.Fatalf("stripJSONC(%q) = %q, %v; want %s", commented, got, err, compact)
		}
	})
}

// withComments writes compact JSON (json.Marshal's) as a person writes
// JSONC: a comment after every bracket, comma and colon, and a trailing
// comma in every non-empty object and array.
func withComments(b []byte) []byte {
	var out []byte
	inString, escaped := false, false
	for i, c := range b {
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if (c == '}' || c == ']') && i > 0 && b[i-1] != '{' && b[i-1] != '[' {
			out = append(out, ", // trailing\n"...)
		}
		out = append(out, c)
		switch c {
		case '"':
			inString = true
		case '{', '[', ',', ':':
			out = append(out, " /* x */ // y\n"...)
		}
	}
	return out
}
