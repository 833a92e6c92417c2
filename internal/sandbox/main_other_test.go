//go:build !linux

package sandbox

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	Main(Hooks{})
	os.Exit(m.Run())
}
