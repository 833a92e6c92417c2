package mcp_test

import (
	"testing"

	"github.com/baton-agent/baton/internal/edgetest"
)

// The MCP server is an edge, as the HTTP server is (TestWebIsAnEdge).
func TestMCPIsAnEdge(t *testing.T) {
	t.Parallel()
	edgetest.Check(t)
}
