package reap

import (
	"os"

	"golang.org/x/sys/unix"
)

// exited returns once the child pid has exited, without reaping it. It
// returns at once when the kernel has no pidfds (before Linux 5.10, or a
// seccomp filter that refuses them): cmd.Wait then blocks as it would.
func exited(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd") // non-blocking: the poller watches it
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for {
			var info unix.Siginfo
			// WNOWAIT: cmd.Wait reaps it, and takes its rusage.
			err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
			switch err {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			case nil:
				return info.Signo != 0 // zero: still running
			}
			return true // cmd.Wait reports what is wrong
		}
	})
}
