// Package sandboxtest helps tests find, from outside, the processes that
// run in a box. Inside its pid namespace a process's pid means nothing to
// the host: a test's stand-in agent writes WhoAmI's line instead, and
// HostPID reads it.
package sandboxtest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/testenv"
)

// WhoAmI is a shell command that prints the shell's pid and its pid
// namespace on one line, for HostPID: `$$ pid:[4026531836]`.
const WhoAmI = `echo "$$ $(readlink /proc/self/ns/pid 2>/dev/null)"`

// WhoAmIOf is WhoAmI for the pid in the shell variable name (as `!`
// for the last background job: WhoAmIOf("!")).
func WhoAmIOf(name string) string {
	return fmt.Sprintf(`echo "$%s $(readlink /proc/self/ns/pid 2>/dev/null)"`, name)
}

// HostPID turns a line WhoAmI printed into the pid the host knows the
// process by; ok is false when no such process runs (any more).
func HostPID(line string) (pid int, ok bool) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return 0, false
	}
	inner, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, false
	}
	own, _ := os.Readlink("/proc/self/ns/pid")
	if len(f) < 2 || f[1] == own {
		return inner, alive(inner)
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if ns, err := os.Readlink(d + "/ns/pid"); err != nil || ns != f[1] {
			continue
		}
		b, err := os.ReadFile(d + "/status")
		if err != nil {
			continue
		}
		for l := range strings.Lines(string(b)) {
			rest, ok := strings.CutPrefix(l, "NSpid:")
			if !ok {
				continue
			}
			ids := strings.Fields(rest)
			if len(ids) > 1 && ids[len(ids)-1] == f[0] {
				host, _ := strconv.Atoi(ids[0])
				return host, alive(host)
			}
		}
	}
	return 0, false
}

// Alive reports whether the process a WhoAmI line names still runs (a
// zombie, dead but not yet reaped, does not count).
func Alive(line string) bool {
	_, ok := HostPID(line)
	return ok
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && !strings.HasPrefix(s[i+1:], " Z") && !strings.HasPrefix(s[i+1:], " X")
}

// Process is a process found from a WhoAmI line, known by its host pid
// and its start time: a pid the kernel hands to another process once
// this one ended (a busy machine does so within seconds) is not this
// process.
type Process struct {
	Pid   int
	start string // starttime, field 22 of /proc/<pid>/stat
}

// Find resolves line to the running process it names.
func Find(line string) (Process, bool) {
	pid, ok := HostPID(line)
	if !ok {
		return Process{}, false
	}
	start, ok := startTime(pid)
	return Process{Pid: pid, start: start}, ok
}

// Alive reports whether p still runs: not ended, not a zombie, and not
// another process that was given its pid since.
func (p Process) Alive() bool {
	if !alive(p.Pid) {
		return false
	}
	start, ok := startTime(p.Pid)
	return ok && start == p.start
}

func startTime(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", false
	}
	// After "(comm)": state is field 3, starttime field 22.
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", false
	}
	return f[19], true
}

// Children returns the command lines (arguments joined by spaces) of
// process pid's children, from /proc: what a starter has started and not
// yet reaped.
func Children(pid int) []string {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []string
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		for _, f := range strings.Fields(string(b)) {
			cmdline, err := os.ReadFile("/proc/" + f + "/cmdline")
			if err != nil {
				continue // it ended
			}
			out = append(out, strings.Join(strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"), " "))
		}
	}
	return out
}

// ChildrenOfRun returns Children of this process while a boxed process
// runs (ended reports that the run is over). A watchdog, when the box
// needs one, starts only once the box's start has returned, which may
// be after the boxed process has said that it runs: when the run asks
// for one (a box without namespaces), the children are read again until
// it shows or the run ends, so a late watchdog is not taken for none.
func ChildrenOfRun(wantWatchdog bool, ended func() bool) []string {
	children := Children(os.Getpid())
	if wantWatchdog {
		testenv.Until(time.Minute, nil, func() bool {
			children = Children(os.Getpid())
			return slices.ContainsFunc(children, isWatchdog) || ended()
		})
	}
	return children
}

func isWatchdog(cmdline string) bool { return strings.Contains(cmdline, "baton-watchdog") }

// CheckWatchdog fails t unless a process group started in a box keeps
// a watchdog (a child of this process run as "baton-watchdog") exactly
// when the box does not end with its init, and a box built without
// namespaces never claims to. children is Children of this process,
// taken while the boxed process ran.
func CheckWatchdog(t testing.TB, noNamespaces, endsWithInit bool, children []string) {
	t.Helper()
	watchdogs := 0
	for _, c := range children {
		if isWatchdog(c) {
			watchdogs++
		}
	}
	switch {
	case noNamespaces && endsWithInit:
		t.Errorf("a box without namespaces reports that it ends with its init")
	case endsWithInit && watchdogs > 0:
		t.Errorf("a box that ends with its init has a watchdog beside it too; children: %q", children)
	case !endsWithInit && watchdogs == 0:
		t.Errorf("a box that does not end with its init has no watchdog beside it; children: %q", children)
	}
}

// Release writes a line to the named pipe fifo once a boxed process has
// opened it to read, or gives up once done holds a value (the process
// ended without reading) or a minute has passed. It never blocks on a
// pipe nobody reads.
func Release[T any](fifo string, done chan T) {
	deadline := time.Now().Add(time.Minute)
	for len(done) == 0 && time.Now().Before(deadline) {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			f.WriteString("seen\n")
			f.Close()
			return
		}
		time.Sleep(10 * time.Millisecond) // no event says a reader opened the pipe: poll
	}
}
