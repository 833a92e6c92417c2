package web

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestWebIsAnEdge holds the edge rule (docs/architecture.md) for the
// HTTP server: it reads and acts through delivery.Service only. Its code
// imports neither the database (sqlstore) nor the agent executors
// (agentrun), and never reaches around the service to its store, so a
// read the API offers is the read the CLI and the MCP server make.
func TestWebIsAnEdge(t *testing.T) {
	t.Parallel()
	forbidden := []string{
		"github.com/baton-agent/baton/internal/sqlstore",
		"github.com/baton-agent/baton/internal/agentrun",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue // tests build real stores to serve
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s: call a delivery.Service method instead", fset.Position(imp.Pos()), path)
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Store" {
				if x, ok := sel.X.(*ast.SelectorExpr); ok && x.Sel.Name == "Deliveries" {
					t.Errorf("%s reaches the delivery store (Deliveries.Store): call a delivery.Service method instead", fset.Position(sel.Pos()))
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source files found: the test runs in the wrong directory")
	}
}
