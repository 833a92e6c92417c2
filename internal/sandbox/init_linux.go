package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Main runs this process as a box's init when Start started it as one,
// and never returns then; otherwise it returns at once. Every program
// that starts confined processes calls it first in main (and test
// binaries in TestMain): Start refuses to run in one that did not, since
// it starts the program itself again as the init.
func Main(h Hooks) {
	if len(os.Args) == 1 && os.Args[0] == InitProgram {
		os.Exit(runInit(h))
	}
	hooks = h
	mainCalled.Store(true)
}

// The init's files: the spec, and the reply.
const (
	specFD  = 3
	replyFD = 4
)

// runInit is the box's init: it reads its spec, builds the box, starts
// the process in it, reaps every process as its parent of last resort
// until that one ends, then ends the rest, and exits with its status.
func runInit(h Hooks) int {
	// A parent-death signal belongs to the thread that asks for it, and a
	// goroutine may move between threads: without the lock, the SIGTERM
	// a box without namespaces asks for below could land on another
	// thread than this SIGKILL, and both would come, the SIGKILL ending
	// the init before it ends the tree.
	runtime.LockOSThread()
	// Started as /proc/self/fd/N or /proc/self/exe, the kernel names the
	// process "N" or "exe"; ps and top show its own name instead.
	_ = os.WriteFile("/proc/self/comm", []byte(InitProgram), 0)
	// Baton holds the spec pipe open while the box runs; the forking
	// thread it keeps parked is this process's parent for the kernel.
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// What the process gets is its standard files: not the init's own,
	// and not what baton itself was started with and did not mark
	// close-on-exec (an open file is used as it is, whatever Landlock
	// says of its path).
	cloexecErr := closeOnExecFrom(specFD)
	specF, replyF := os.NewFile(specFD, "spec"), os.NewFile(replyFD, "reply")
	reply := func(r initReply) {
		if replyF != nil {
			_ = json.NewEncoder(replyF).Encode(r)
			replyF.Close()
			replyF = nil
		}
	}
	fail := func(stage string, err error) int {
		r := initReply{Stage: stage, Err: err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			r.Errno = int(errno)
		}
		reply(r)
		return 125
	}
	if cloexecErr != nil {
		return fail("keep its files from the process", cloexecErr)
	}
	var s spec
	dec := json.NewDecoder(io.LimitReader(specF, 64<<20))
	if err := dec.Decode(&s); err != nil {
		return fail("read the spec", err)
	}
	var netFiles []*os.File
	for i := range s.NetFDs {
		fd := replyFD + 1 + i
		netFiles = append(netFiles, os.NewFile(uintptr(fd), "net"+strconv.Itoa(i)))
	}
	fd := -1 // the Landlock ruleset, baton's rules in it
	if s.ABI > 0 {
		fd = replyFD + 1 + s.NetFDs
	}
	var view *homeView
	if s.Namespaces {
		var err error
		if view, err = mountBox(&s); err != nil {
			return fail("build the box's mounts", err)
		}
	}
	stopNetwork := func() {}
	if len(s.Network) > 0 {
		if h.Network == nil {
			return fail("set up the network", errors.New("this program builds no network for its boxes"))
		}
		stop, err := h.Network(s.Network, netFiles)
		if err != nil {
			return fail("set up the network", err)
		}
		if stop != nil {
			stopNetwork = stop
		}
	}
	if s.Probe {
		// Linux 6.14 and later keep a pid_max per pid namespace.
		err := os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.Itoa(DefaultMaxProcs+1)), 0)
		reply(initReply{PidMax: err == nil})
		return 0
	}
	if s.PidMax {
		// Pids 1 to MaxProcs: no more processes and threads at once.
		if err := os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.Itoa(s.MaxProcs+1)), 0); err != nil {
			return fail("set the pid namespace's pid_max", err)
		}
	}
	if !s.Namespaces {
		// Orphans of the tree become this process's children, to reap and
		// to kill at the end.
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return fail("become a subreaper", err)
		}
		// A parent-death SIGKILL would end this process before it ends the
		// tree: SIGTERM is handled (below), and so is the spec pipe's end.
		_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGTERM), 0, 0, 0)
	}
	if s.Rlimit && s.MaxProcs > 0 {
		lim := &unix.Rlimit{Cur: uint64(s.MaxProcs), Max: uint64(s.MaxProcs)}
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, lim); err != nil {
			return fail("set RLIMIT_NPROC", err)
		}
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)
	if fd >= 0 {
		if err := addRules(fd, s.Rules, s.ABI); err != nil {
			return fail("build the Landlock rules", err)
		}
	}
	// Baton says go once the box is in its cgroup (which takes a while
	// with cgroup v1): the box was built meanwhile.
	if err := awaitGo(io.MultiReader(dec.Buffered(), specF)); err != nil {
		return fail("wait for baton", err)
	}
	done := make(chan struct{})
	pid, err := startProcess(&s, fd, done)
	if fd >= 0 {
		unix.Close(fd)
	}
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno) && !errors.Is(err, errConfine):
		reply(initReply{Stage: "exec", Err: err.Error(), Errno: int(errno)})
		return 127
	case err != nil:
		return fail("confine the process", err)
	}
	reply(initReply{Pid: pid})
	t := &procTree{self: os.Getpid(), ns: s.Namespaces}
	go func() {
		_, _ = io.Copy(io.Discard, specF) // until baton is gone
		t.killAll()
		os.Exit(137)
	}()
	go func() {
		for sig := range sigs {
			t.signal(sig.(syscall.Signal))
		}
	}()
	status := t.reap(pid)
	close(done)
	stopNetwork()
	view.remove()
	return status
}

// closeOnExecFrom marks every file descriptor from first on
// close-on-exec.
func closeOnExecFrom(first int) error {
	if unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return nil
	}
	// Before Linux 5.11: each open descriptor, as /proc lists them
	// (baton's /proc still: the box mounts its own later).
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}

// awaitGo reads past the spec's trailing newline to baton's "g".
func awaitGo(r io.Reader) error {
	var b [1]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return fmt.Errorf("baton went away: %w", err)
		}
		switch b[0] {
		case 'g':
			return nil
		case '\n', '\r', ' ', '\t':
			continue
		}
		return fmt.Errorf("baton said %q, not go", b[0])
	}
}

// errConfine marks an error confining the process, not starting it.
var errConfine = errors.New("confine")

// startProcess starts s's process from a thread of its own that holds no
// capability, has no_new_privs and is confined by the Landlock ruleset
// fd (none when -1), in a new session, and dies with this init.
func startProcess(s *spec, fd int, done <-chan struct{}) (int, error) {
	prepare := func() error {
		if err := dropCapabilities(); err != nil {
			return fmt.Errorf("%w: drop capabilities: %w", errConfine, err)
		}
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("%w: no_new_privs: %w", errConfine, err)
		}
		if fd >= 0 {
			if err := restrictThread(fd); err != nil {
				return fmt.Errorf("%w: landlock_restrict_self: %w", errConfine, err)
			}
		}
		return nil
	}
	var pid int
	start := func() error {
		var err error
		pid, err = syscall.ForkExec(s.Path, s.Args, &syscall.ProcAttr{
			Dir: s.Dir, Env: s.Env, Files: []uintptr{0, 1, 2},
			Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
		})
		return err
	}
	err := onParkedThread(prepare, start, done)
	return pid, err
}

// Secure bits (linux/securebits.h): a process running as uid 0 gains no
// capability by it, at exec or otherwise, and none of this can be undone.
const (
	secbitNoRoot                  = 1 << 0
	secbitNoRootLocked            = 1 << 1
	secbitNoSetuidFixup           = 1 << 2
	secbitNoSetuidFixupLocked     = 1 << 3
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7
	secbitsLocked                 = secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
)

// dropCapabilities leaves the calling thread, and what it starts, no
// capability, none to gain back at exec (the bounding set is empty and uid
// 0 means nothing), and none ambient. Capabilities are per thread.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	if data[0].Permitted|data[1].Permitted|data[0].Effective|data[1].Effective == 0 {
		// None to drop (an unprivileged process outside a user
		// namespace); the bounding set alone grants nothing then.
		return nil
	}
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbitsLocked, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; ; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the last capability this kernel knows
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	data = [2]unix.CapUserData{}
	return unix.Capset(&hdr, &data[0])
}

// procTree is what the init ends: with a pid namespace, every other process
// in it; without, its descendants.
type procTree struct {
	self int
	ns   bool
}

// reap waits for every child until pid ended, then ends the rest, and
// returns pid's exit status.
func (t *procTree) reap(pid int) int {
	status := 0
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return status // ECHILD: nothing left
		}
		if got != pid {
			continue
		}
		switch {
		case ws.Exited():
			status = ws.ExitStatus()
		case ws.Signaled():
			status = 128 + int(ws.Signal())
		}
		t.killAll()
	}
}

// signal passes sig on to every process of the tree.
func (t *procTree) signal(sig syscall.Signal) {
	if t.ns {
		_ = syscall.Kill(-1, sig) // all in the namespace but this one
		return
	}
	for _, p := range t.descendants() {
		_ = syscall.Kill(p, sig)
	}
}

// killAll kills every process of the tree. Without a pid namespace the
// tree is read from /proc, which races with its changes: a fork between
// a scan and its kills, or a process whose parent died between reading
// its parent's entry and its own, is missed by one scan. So it goes on
// until this process has no child left: as a subreaper it inherits every
// orphan, so no child means no descendant.
func (t *procTree) killAll() {
	if t.ns {
		_ = syscall.Kill(-1, syscall.SIGKILL)
		return
	}
	for range 10000 {
		for _, p := range t.descendants() {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				return
			}
			if got <= 0 || err != nil {
				break
			}
		}
	}
}

// descendants lists the processes below this one, from /proc.
func (t *procTree) descendants() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if ppid, ok := statPPID(b); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{t.self}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// statPPID reads the parent's pid from a /proc/<pid>/stat line: "pid
// (comm) state ppid ...", where comm, the program's name, may hold spaces
// and parentheses of its own.
func statPPID(b []byte) (int, bool) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil && ppid >= 0
}
