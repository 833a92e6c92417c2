package baton_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// Imports point one way (docs/architecture.md): the root package imports
// none of the module; the core under internal/ imports no edge (the CLI,
// the HTTP server, the MCP server), the HTTP and MCP servers not each
// other nor the CLI; nothing imports cmd/; and only tests and other test
// support import the packages made for tests (gittest, agenttest,
// testenv, ...).
func TestImportsPointOneWay(t *testing.T) {
	t.Parallel()
	const mod = "github.com/baton-agent/baton"
	cmd := exec.Command("go", "list", "-json", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	edges := map[string]bool{mod + "/internal/cli": true, mod + "/internal/web": true, mod + "/internal/mcp": true}
	testSupport := func(p string) bool {
		for ; strings.HasPrefix(p, mod+"/"); p = path.Dir(p) {
			if b := path.Base(p); strings.HasSuffix(b, "test") {
				return true
			}
		}
		return false
	}
	checked := 0
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p struct {
			ImportPath, Dir  string
			Imports, GoFiles []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		checked++
		// Read the package's directory and stat its sources, so that go
		// test's cache of this result ends when one of them changes.
		if _, err := os.ReadDir(p.Dir); err != nil {
			t.Fatal(err)
		}
		for _, f := range p.GoFiles {
			if _, err := os.Stat(filepath.Join(p.Dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		from := p.ImportPath
		for _, to := range p.Imports {
			if to != mod && !strings.HasPrefix(to, mod+"/") {
				continue
			}
			var why string
			switch {
			case from == mod:
				why = "the root package holds domain types and imports none of the module"
			case strings.HasPrefix(to, mod+"/cmd/"):
				why = "cmd/ is the composition root: nothing imports it"
			case edges[to] && !strings.HasPrefix(from, mod+"/cmd/") && !(from == mod+"/internal/cli" && to == mod+"/internal/mcp"):
				why = "an edge is imported by cmd/ only (and the CLI starts the MCP server)"
			case testSupport(to) && !testSupport(from):
				why = "test support is for tests"
			}
			if why != "" {
				t.Errorf("%s imports %s: %s", strings.TrimPrefix(from, mod+"/"), strings.TrimPrefix(to, mod+"/"), why)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("go list found %d packages: the test runs in the wrong directory", checked)
	}
}
