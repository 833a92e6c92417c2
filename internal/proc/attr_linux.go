package proc

import "syscall"

// GroupAttr puts a child in its own process group and has the kernel
// SIGKILL it when baton dies, even by SIGKILL, so no agent or check
// outlives the worker that started it.
func GroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
