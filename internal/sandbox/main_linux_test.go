package sandbox

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	Main(Hooks{})
	if dir := os.Getenv("BATON_BOX_HELPER"); dir != "" {
		boxHelper(dir, os.Getenv("BATON_BOX_HELPER_NONS") == "true")
	}
	os.Exit(m.Run())
}
