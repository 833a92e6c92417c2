package agentrun

import (
	"os"
	"testing"

	"github.com/baton-agent/baton/internal/egress"
	"github.com/baton-agent/baton/internal/sandbox"
)

// TestMain lets this test binary be the box's init: its tests start
// confined processes.
func TestMain(m *testing.M) {
	sandbox.Main(egress.Hooks())
	os.Exit(m.Run())
}
