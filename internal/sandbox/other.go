//go:build !linux

package sandbox

import (
	"os/exec"
	"runtime"

	"github.com/baton-agent/baton"
)

// Probe reports whether this system can confine processes: only Linux
// has Landlock.
func Probe() Status {
	return Status{Why: "Landlock is Linux's; " + runtime.GOOS + " has no equivalent baton uses"}
}

// Start starts cmd as c says: unconfined here, or not at all when c
// requires confinement. release is never nil.
func (c Confinement) Start(cmd *exec.Cmd) (release func(), rep Report, err error) {
	release = func() {}
	if c.Mode == ModeOff {
		return release, Report{Detail: "--sandbox=off"}, cmd.Start()
	}
	st := Probe()
	if c.Mode == ModeRequired {
		return release, Report{Detail: st.Why}, baton.Errorf(baton.Unavailable, "not started: --sandbox=required and %s", st.Why)
	}
	return release, Report{Detail: st.Why}, cmd.Start()
}
