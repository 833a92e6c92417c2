package sandbox

import (
	"errors"
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// probeLandlock asks the kernel for its Landlock ABI, or why it has none.
func probeLandlock() (abi int, why string) {
	abi, err := ll.LandlockGetABIVersion()
	switch {
	case err == nil && abi > 0:
		return abi, ""
	case errors.Is(err, unix.ENOSYS):
		return 0, "this kernel was built without Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)"
	case errors.Is(err, unix.EOPNOTSUPP):
		return 0, "Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)"
	case err != nil:
		return 0, "the kernel refused to report its Landlock version: " + err.Error()
	}
	return 0, "the kernel reports no Landlock ABI"
}

// fsAccess is every file-system right baton knows of; the kernel's own
// ABI narrows it (best effort), so an older kernel confines what it can.
const fsAccess = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSReadDir |
	ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir |
	ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock |
	ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate | ll.AccessFSIoctlDev

// What a rule grants: reading a file, reading a directory's tree,
// writing a file, writing a tree.
const (
	accessFileRead  = ll.AccessFSExecute | ll.AccessFSReadFile
	accessFileWrite = accessFileRead | ll.AccessFSWriteFile | ll.AccessFSTruncate
	accessDirRead   = accessFileRead | ll.AccessFSReadDir
	accessDirWrite  = accessDirRead | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSRemoveDir |
		ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg |
		ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym
)

// handledFS is what of fsAccess a kernel with Landlock ABI abi governs:
// 13 rights in ABI 1, refer from 2, truncate from 3, device ioctls from 5.
func handledFS(abi int) uint64 {
	bits := 0
	switch {
	case abi >= 5:
		bits = 16
	case abi >= 3:
		bits = 15
	case abi == 2:
		bits = 14
	case abi == 1:
		bits = 13
	}
	return fsAccess & (1<<bits - 1)
}

// ruleAccess is what r grants under ABI abi (0: nothing to add).
func ruleAccess(r specRule, abi int) uint64 {
	var a uint64
	switch {
	case r.Access == accessRead && r.Dir:
		a = accessDirRead
	case r.Access == accessRead:
		a = accessFileRead
	case r.Access == accessWrite && r.Dir:
		// Renames between directories (a tool's temporary file moved
		// into place).
		a = accessDirWrite | ll.AccessFSRefer
	case r.Access == accessWrite:
		a = accessFileWrite
	case r.Dir: // a directory of devices, /dev/pts
		a = accessDirWrite | ll.AccessFSIoctlDev
	default:
		a = accessFileWrite | ll.AccessFSIoctlDev
	}
	return a & handledFS(abi)
}

// newRuleset makes a Landlock ruleset for ABI abi with no rule yet: every
// file-system right the kernel governs is denied but for what rules
// added to it grant, signals and abstract unix sockets outside the box
// are out of reach (ABI 6 and later) and, with netLimit, TCP connections
// go only to ports (ABI 4 and later). Its descriptor is close-on-exec.
func newRuleset(abi int, netLimit bool, ports []int) (int, error) {
	attr := ll.RulesetAttr{HandledAccessFS: handledFS(abi)}
	if netLimit && abi >= 4 {
		attr.HandledAccessNet = ll.AccessNetConnectTCP
	}
	if abi >= 6 {
		attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	if attr.HandledAccessNet != 0 {
		for _, p := range ports {
			na := ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP, Port: uint64(p)}
			if err := ll.LandlockAddNetPortRule(fd, &na, 0); err != nil {
				unix.Close(fd)
				return -1, fmt.Errorf("landlock_add_rule: port %d: %w", p, err)
			}
		}
	}
	return fd, nil
}

// addRules adds rules to the ruleset fd, each path opened now, as the
// caller sees the file system; a path that is gone is skipped.
func addRules(fd int, rules []specRule, abi int) error {
	for _, r := range rules {
		a := ruleAccess(r, abi)
		if a == 0 {
			continue
		}
		pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("open %s for its Landlock rule: %w", r.Path, err)
		}
		err = ll.LandlockAddPathBeneathRule(fd, &ll.PathBeneathAttr{ParentFd: pfd, AllowedAccess: a}, 0)
		unix.Close(pfd)
		if err != nil {
			return fmt.Errorf("landlock_add_rule: %s: %w", r.Path, err)
		}
	}
	return nil
}

// restrictThread confines the calling OS thread (and what it forks) to
// the ruleset fd.
func restrictThread(fd int) error {
	return ll.LandlockRestrictSelf(fd, 0)
}
