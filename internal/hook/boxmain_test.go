package hook_test

import (
	"os"
	"testing"

	"github.com/baton-agent/baton/internal/sandbox"
)

// TestMain lets this test binary be the box's init: its tests start
// confined processes.
func TestMain(m *testing.M) {
	sandbox.Main(sandbox.Hooks{})
	os.Exit(m.Run())
}
