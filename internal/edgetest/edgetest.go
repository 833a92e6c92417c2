// Package edgetest keeps an edge an edge: the CLI, the HTTP server and
// the MCP server parse their input, call one core service and render the
// result (docs/architecture.md, "One core, many edges"). A test of an
// edge calls Check, which fails where the edge reaches past the core: an
// import of the delivery database (internal/sqlstore) or of the agent
// executors (internal/agentrun), or a use of delivery.Service.Store, which
// is for core packages and tests.
package edgetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// serviceType is the core service whose Store no edge calls.
const serviceType = "github.com/baton-agent/baton/internal/delivery.Service"

// listed is what `go list -json` says of a package.
type listed struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
}

// Check type-checks the package in the current directory (its non-test
// files, against the export data `go list -export` builds) and reports
// each forbidden import and each use of delivery.Service's Store method.
func Check(t *testing.T) {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-json", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	var self listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -json: %v", err)
		}
		exports[p.ImportPath] = p.Export
		self = p // the package itself comes last
	}
	if len(self.GoFiles) == 0 {
		t.Fatal("no source files found: the test runs in the wrong directory")
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range self.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(self.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range []string{"github.com/baton-agent/baton/internal/sqlstore", "github.com/baton-agent/baton/internal/agentrun"} {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s: an edge calls a core service (delivery.Service, ...) instead", fset.Position(imp.Pos()), path)
				}
			}
		}
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(file)
	})}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	if _, err := conf.Check(self.ImportPath, fset, files, info); err != nil {
		t.Fatalf("type-check %s: %v", self.ImportPath, err)
	}
	for sel, s := range info.Selections {
		if s.Obj().Name() != "Store" {
			continue
		}
		recv := s.Recv()
		if p, ok := recv.(*types.Pointer); ok {
			recv = p.Elem()
		}
		if named, ok := recv.(*types.Named); ok && named.Obj().Pkg() != nil && named.Obj().Pkg().Path()+"."+named.Obj().Name() == serviceType {
			t.Errorf("%s reaches the delivery store (delivery.Service.Store): call a delivery.Service method instead", fset.Position(sel.Pos()))
		}
	}
}
