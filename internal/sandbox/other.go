//go:build !linux

package sandbox

import (
	"os/exec"
	"runtime"

	"github.com/baton-agent/baton"
)

// Main returns at once: only Linux has the box's init.
func Main(h Hooks) {
	hooks = h
	mainCalled.Store(true)
}

// Probe reports whether this system can confine processes: only Linux
// has Landlock.
func Probe() Status {
	return Confinement{Mode: ModeAuto}.Status()
}

// Status says which of the box's defences c has here: none.
func (c Confinement) Status() Status {
	why := "Landlock is Linux's; " + runtime.GOOS + " has no equivalent baton uses"
	st := Status{Why: why}
	if c.Mode != ModeOff {
		st.Defences = []Defence{{Name: DefFiles, Detail: why}, {Name: DefProcesses, Detail: why}}
	}
	return st
}

// Start starts cmd as c says: unconfined here, or not at all when c
// requires confinement. release is never nil.
func (c Confinement) Start(cmd *exec.Cmd) (release func(), rep Report, err error) {
	release = func() {}
	if c.Mode == ModeOff {
		return release, Report{Detail: "--sandbox=off"}, cmd.Start()
	}
	st := c.Status()
	if c.Mode == ModeRequired {
		return release, Report{Detail: st.Why}, baton.Errorf(baton.Unavailable, "not started: --sandbox=required and %s", st.Why)
	}
	return release, Report{Detail: st.Why, Missing: st.Missing()}, cmd.Start()
}

// ShowsHome reports whether a start under c shows the agent home at
// $HOME: never here.
func (c Confinement) ShowsHome() bool { return false }

// BoxInit says which program would be a box's init: none here.
func BoxInit() InitChoice {
	return InitChoice{Own: true, Why: "only Linux has the box's init"}
}
