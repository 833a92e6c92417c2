// Package reap waits for the processes baton starts without holding one of
// the Go scheduler's Ps while they run.
//
// exec.Cmd.Wait blocks in waitid(2), and a goroutine blocked in a system
// call keeps its P until the runtime's monitor takes it back: at once
// while the program is busy, up to 10 ms later once it has been idle.
// baton often waits on two or three git processes at once (a snapshot's
// cat-file, hash-object and log), on a machine with two Ps: both waits
// held them, and the goroutines that feed git its stdin and read its
// stdout had nowhere to run until the monitor woke, so a fresh MCP
// server's first pickup took 10 ms more in a large project than in a small
// one, with no more CPU. Wait parks in the network poller on a pidfd
// instead, and calls cmd.Wait once the process has exited.
package reap

import "os/exec"

// Wait waits for cmd's process to exit, then returns cmd.Wait(): the
// command's exit status, and the end of its I/O copying (bounded by
// cmd.WaitDelay as ever). cmd must have been started.
func Wait(cmd *exec.Cmd) error {
	if cmd.Process != nil {
		exited(cmd.Process.Pid)
	}
	return cmd.Wait()
}
