//go:build unix && !linux

package proc

import "syscall"

// GroupAttr puts a child in its own process group. Only Linux can tie a
// child's life to baton's; elsewhere a SIGKILLed baton leaves it running.
func GroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
