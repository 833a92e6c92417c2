package proc

import "syscall"

// GroupAttr puts a child in its own process group and has the kernel
// SIGKILL it when baton dies, even by SIGKILL. The signal reaches only
// the child itself; WatchGroup kills the rest of its group.
func GroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
