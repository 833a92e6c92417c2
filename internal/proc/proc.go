// Package proc runs the processes baton starts on the user's behalf:
// agents and the check commands users write (runner guards, a delivery's
// verify, deploy and observe commands). Each runs in its own process group
// so that stopping it stops everything it started, and on Linux it dies
// with baton, so a killed worker leaves no agent behind.
package proc

import "syscall"

// KillGroup sends sig to the process group led by pid. Errors are
// ignored: the group may already be gone.
func KillGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}
