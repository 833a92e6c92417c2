package sandbox

import (
	"errors"

	"github.com/landlock-lsm/go-landlock/landlock"
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

// ruleset gives the kernel the rules and returns the ruleset's file
// descriptor (-1 when the kernel enforces none of them). The paths are
// opened now, as the caller sees the file system. With netLimit, ports
// are the only TCP ports the process may connect to (ABI 4 and later).
func ruleset(rules []specRule, netLimit bool, ports []int, abi int) (fd int, flags uint32, err error) {
	cfg := landlock.Config{
		HandledAccessFS: landlock.AccessFSSet(fsAccess),
		Scoped:          landlock.ScopedSet(ll.ScopeAbstractUnixSocket | ll.ScopeSignal),
	}
	var lr []landlock.Rule
	if netLimit && abi >= 4 {
		cfg.HandledAccessNet = landlock.AccessNetSet(ll.AccessNetConnectTCP)
		for _, p := range ports {
			lr = append(lr, landlock.ConnectTCP(uint16(p)))
		}
	}
	for _, r := range rules {
		var fr landlock.FSRule
		switch {
		case r.Access == accessRead && r.Dir:
			fr = landlock.RODirs(r.Path)
		case r.Access == accessRead:
			fr = landlock.ROFiles(r.Path)
		case r.Access == accessWrite && r.Dir:
			fr = landlock.RWDirs(r.Path)
			if abi >= 2 {
				// Renames between directories (a tool's temporary file
				// moved into place). Asked of an ABI 1 kernel, best effort
				// would drop every rule instead.
				fr = fr.WithRefer()
			}
		case r.Access == accessWrite:
			fr = landlock.RWFiles(r.Path)
		case r.Dir: // a directory of devices, /dev/pts
			fr = landlock.RWDirs(r.Path).WithIoctlDev()
		default:
			fr = landlock.RWFiles(r.Path).WithIoctlDev()
		}
		lr = append(lr, fr.IgnoreIfMissing())
	}
	return cfg.BestEffort().NewRulesetFD(lr...)
}

// restrictThread confines the calling OS thread (and what it forks) to
// the ruleset fd.
func restrictThread(fd int, flags uint32) error {
	return ll.LandlockRestrictSelf(fd, flags)
}
