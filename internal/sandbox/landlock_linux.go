package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/baton-agent/baton"
)

var probe = sync.OnceValue(func() Status {
	abi, err := ll.LandlockGetABIVersion()
	switch {
	case err == nil && abi > 0:
		return Status{ABI: abi}
	case errors.Is(err, unix.ENOSYS):
		return Status{Why: "this kernel was built without Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)"}
	case errors.Is(err, unix.EOPNOTSUPP):
		return Status{Why: "Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)"}
	case err != nil:
		return Status{Why: "the kernel refused to report its Landlock version: " + err.Error()}
	}
	return Status{Why: "the kernel reports no Landlock ABI"}
})

// Probe reports whether this kernel can confine processes. It asks once.
func Probe() Status { return probe() }

// fsAccess is every file-system right baton knows of; the kernel's own
// ABI narrows it (best effort), so an older kernel confines what it can.
const fsAccess = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSReadDir |
	ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir |
	ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock |
	ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate | ll.AccessFSIoctlDev

// Start starts cmd as c says and returns how it went. A confined child is
// forked from an OS thread that Landlock restricted first and that stays
// parked until release is called: the kernel sends a parent-death signal
// when the forking thread ends, not the process, so the caller calls
// release only after cmd.Wait. release is never nil.
func (c Confinement) Start(cmd *exec.Cmd) (release func(), rep Report, err error) {
	release = func() {}
	switch c.Mode {
	case ModeOff:
		return release, Report{Detail: "--sandbox=off"}, cmd.Start()
	case "", ModeAuto, ModeRequired:
	default:
		return release, Report{}, baton.Errorf(baton.Invalid, "unknown sandbox mode %q", c.Mode)
	}
	st := Probe()
	if !st.Available() {
		if c.Mode == ModeRequired {
			return release, Report{Detail: st.Why}, baton.Errorf(baton.Unavailable, "not started: --sandbox=required and %s", st.Why)
		}
		return release, Report{Detail: st.Why}, cmd.Start()
	}
	fd, flags, err := ruleset(c.Policy, st.ABI)
	if err != nil {
		return release, Report{}, baton.WrapError(baton.Internal, err, "build the sandbox")
	}
	rep = Report{Confined: fd >= 0, Detail: st.String()}
	if fd < 0 {
		// Best effort found nothing this kernel can enforce.
		rep.Detail = st.String() + " enforces none of the rules"
		if c.Mode == ModeRequired {
			return release, rep, baton.Errorf(baton.Unavailable, "not started: --sandbox=required and %s", rep.Detail)
		}
		return release, rep, cmd.Start()
	}
	started := make(chan error, 1)
	done := make(chan struct{})
	go forkConfined(cmd, fd, flags, started, done)
	err = <-started
	unix.Close(fd)
	if err != nil {
		close(done)
		return release, rep, err
	}
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }, rep, nil
}

// forkConfined restricts its own OS thread, starts cmd from it, reports
// on started and parks until done: the thread must outlive the child
// (see Start), and it is never used again, so it exits with this
// goroutine. The main thread is never restricted: a restricted main
// thread would put baton's own process in the agent's domain.
func forkConfined(cmd *exec.Cmd, fd int, flags uint32, started chan<- error, done <-chan struct{}) {
	runtime.LockOSThread() // never unlocked: the runtime ends the thread
	if unix.Gettid() == unix.Getpid() {
		// This goroutine landed on the main thread. Hold it, so that the
		// one started now lands on another, and give the main thread back.
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			forkConfined(cmd, fd, flags, started, done)
		}()
		<-finished
		runtime.UnlockOSThread()
		return
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		started <- fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
		return
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		started <- fmt.Errorf("landlock_restrict_self: %w", err)
		return
	}
	err := cmd.Start()
	started <- err
	if err == nil {
		<-done
	}
}

// ruleset gives the kernel c's rules and returns the ruleset's file
// descriptor (-1 when the kernel enforces none of them).
func ruleset(p Policy, abi int) (fd int, flags uint32, err error) {
	rules, err := p.rules()
	if err != nil {
		return -1, 0, err
	}
	cfg := landlock.Config{
		HandledAccessFS: landlock.AccessFSSet(fsAccess),
		Scoped:          landlock.ScopedSet(ll.ScopeAbstractUnixSocket | ll.ScopeSignal),
	}
	var lr []landlock.Rule
	for _, r := range rules {
		var fr landlock.FSRule
		switch {
		case r.access == accessRead && r.dir:
			fr = landlock.RODirs(r.path)
		case r.access == accessRead:
			fr = landlock.ROFiles(r.path)
		case r.access == accessWrite && r.dir:
			fr = landlock.RWDirs(r.path)
			if abi >= 2 {
				// Renames between directories (a tool's temporary file
				// moved into place). Asked of an ABI 1 kernel, best effort
				// would drop every rule instead.
				fr = fr.WithRefer()
			}
		case r.access == accessWrite:
			fr = landlock.RWFiles(r.path)
		case r.dir: // a directory of devices, /dev/pts
			fr = landlock.RWDirs(r.path).WithIoctlDev()
		default:
			fr = landlock.RWFiles(r.path).WithIoctlDev()
		}
		lr = append(lr, fr.IgnoreIfMissing())
	}
	return cfg.BestEffort().NewRulesetFD(lr...)
}
