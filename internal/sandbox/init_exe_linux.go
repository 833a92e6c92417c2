package sandbox

import (
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// BoxInit says which program boxes start as their init: the one
// Hooks.Init held, or this program itself. It is asked once per process,
// at the first box.
func BoxInit() InitChoice { return chosenInit().choice }

type boxInit struct {
	choice InitChoice
	fd     int // the held init, at initFDMin or above; -1: this program
}

var chosenInit = sync.OnceValue(func() boxInit {
	if hooks.Init == nil {
		return boxInit{choice: InitChoice{Own: true, Why: "this program names no init of its own"}, fd: -1}
	}
	fd, choice := hooks.Init()
	if fd < 0 {
		choice.Own = true
		return boxInit{choice: choice, fd: -1}
	}
	// The child execs /proc/self/fd/N after its fork has put the init's
	// own files at 3 and up, so N must lie above every one of them.
	high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, initFDMin)
	unix.Close(fd)
	if err != nil {
		return boxInit{choice: InitChoice{Program: choice.Program, Own: true, Why: "cannot hold it: " + err.Error()}, fd: -1}
	}
	return boxInit{choice: choice, fd: high}
})

// initFDMin is the least descriptor the held init is kept at.
const initFDMin = 64

// initPath is the program a box's init is started from, given the files
// the init is handed besides its standard three.
func initPath(files int) string {
	if in := chosenInit(); in.fd >= 3+files {
		return "/proc/self/fd/" + strconv.Itoa(in.fd)
	}
	return "/proc/self/exe"
}
