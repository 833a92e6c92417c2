package proc

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/baton-agent/baton/internal/sandbox"
)

// watchdogScript waits for one line on stdin. The only writer is the
// baton process that started the group; "release" means the group is
// done. Anything else, above all end-of-file because that process died
// (SIGKILL included: the kernel closes its end of the pipe), ends the
// group: SIGTERM first, so that a box's init ends its whole tree (a
// SIGKILLed init without a pid namespace would leave what left its
// session), then, two seconds later (the init needs milliseconds),
// SIGKILL for whatever ignored it.
const watchdogScript = `read -r line; [ "$line" = release ] || { kill -s TERM -- -"$1"; sleep 2; kill -s KILL -- -"$1"; } 2>/dev/null`

// Watchdog kills a process group when the process that started it exits,
// however it exits. A parent-death signal reaches only the direct child:
// what an agent starts (a test server, a `sleep` in the background) would
// otherwise outlive a killed worker, reparented to init. The watchdog is a
// tiny sh in its own process group, so signals meant for the group (a
// grace-period SIGINT) never reach it.
type Watchdog struct {
	w      *os.File
	exited chan struct{} // closed when the watchdog's sh has ended
}

// WatchGroup starts a watchdog for the process group pgid. The caller
// calls Release once the group's leader was waited for and the group
// killed. If the watchdog cannot start, the group keeps only the
// parent-death signal's protection; that is returned as an error the
// caller may ignore.
func WatchGroup(pgid int) (*Watchdog, error) {
	r, w, err := os.Pipe() // close-on-exec: no other child holds the write end
	if err != nil {
		return &Watchdog{}, err
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript, "baton-watchdog", strconv.Itoa(pgid))
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return &Watchdog{}, err
	}
	d := &Watchdog{w: w, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.exited) }() // reap it whenever it ends
	return d, nil
}

// WatchStarted guards the group pgid a process was just started in, in
// the box rep describes: with a watchdog, unless the box ends with its
// init (rep.EndsWithInit), where the kernel ends the whole group when
// baton dies and a watchdog would be one more process for nothing. It is
// nil then, or when the watchdog cannot start (the group keeps the
// parent-death signal's protection); Release takes nil.
func WatchStarted(pgid int, rep sandbox.Report) *Watchdog {
	if rep.EndsWithInit {
		return nil
	}
	wd, _ := WatchGroup(pgid)
	return wd
}

// Release ends the watchdog without a kill.
func (d *Watchdog) Release() {
	if d == nil || d.w == nil {
		return
	}
	_, _ = io.WriteString(d.w, "release\n")
	d.w.Close()
	d.w = nil
}
