//go:build unix && !linux

package proc

import "syscall"

// GroupAttr puts a child in its own process group. Only Linux has a
// parent-death signal; elsewhere WatchGroup alone kills the group when
// baton dies.
func GroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
