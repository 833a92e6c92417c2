package cli

import (
	"testing"

	"github.com/baton-agent/baton/internal/edgetest"
)

// The CLI is an edge, as the HTTP server is (TestWebIsAnEdge): the
// server's and the workers' processes are composed in cmd/baton.
func TestCLIIsAnEdge(t *testing.T) {
	t.Parallel()
	edgetest.Check(t)
}
