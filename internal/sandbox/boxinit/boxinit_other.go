//go:build !linux

package boxinit

import "github.com/baton-agent/baton/internal/sandbox"

// Beside holds nothing: only Linux has the box's init.
func Beside(name string) func() (int, sandbox.InitChoice) {
	return func() (int, sandbox.InitChoice) {
		return -1, sandbox.InitChoice{Own: true, Why: "only Linux has the box's init"}
	}
}
