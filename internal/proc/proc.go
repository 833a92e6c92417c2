// Package proc runs the processes baton starts on the user's behalf:
// agents and the check commands users write (runner guards, a delivery's
// verify, deploy and observe commands). Each runs in its own process group
// so that stopping it stops everything it started, and a watchdog kills
// that group when baton dies, however it dies, so a killed worker leaves
// nothing behind: not the agent, nor what the agent started. Children
// never inherit baton's secrets unless asked (Environ).
package proc

import "syscall"

// KillGroup sends sig to the process group led by pid. Errors are
// ignored: the group may already be gone.
func KillGroup(pid int, sig syscall.Signal) {
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}
