package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/baton-agent/baton"
)

// spec is what baton tells the box's init, as JSON on the pipe that is
// the init's file descriptor 3. Baton keeps the pipe's other end open
// while the box runs: its end of file means baton is gone.
type spec struct {
	// Probe: build the box, start nothing, say whether it worked.
	Probe bool `json:"probe,omitempty"`

	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir,omitempty"`

	// Namespaces: the init runs in new user, pid, mount and ipc
	// namespaces, mounts /proc, /dev/shm and /dev/pts of its own and, with
	// Home, shows the agent home there.
	Namespaces bool `json:"namespaces,omitempty"`
	// Home is the process's $HOME, resolved; HomeSource the agent home
	// the box shows there, with Binds (paths beneath Home) shown inside.
	Home       string     `json:"home,omitempty"`
	HomeSource string     `json:"home_source,omitempty"`
	Binds      []specBind `json:"binds,omitempty"`

	// ABI is the Landlock ABI to confine files with (0: none). Baton
	// makes the ruleset and hands it to the init as the file after the
	// network's, with the rules of every path that is the same file in
	// the box as outside already added; Rules are the rest, those on or
	// around what the init mounts of its own (boxRules), which the init
	// adds in the box's view.
	ABI   int        `json:"abi,omitempty"`
	Rules []specRule `json:"rules,omitempty"`

	// Rlimit: cap processes with RLIMIT_NPROC at MaxProcs (inside a user
	// namespace it counts the box's own processes only). PidMax: cap them
	// with the pid namespace's own pid_max (Linux 6.14 and later), which
	// holds for root too.
	Rlimit   bool `json:"rlimit,omitempty"`
	PidMax   bool `json:"pid_max,omitempty"`
	MaxProcs int  `json:"max_procs,omitempty"`

	// Keep are paths the box shows although they lie in a directory it
	// hides (socketDirs), besides those its Rules grant.
	Keep []string `json:"keep,omitempty"`

	// Network is for Hooks.Network, with the files after the init's
	// own (3 and 4).
	Network json.RawMessage `json:"network,omitempty"`
	NetFDs  int             `json:"net_fds,omitempty"`
	// NetLimit: where the box has no network namespace, the process may
	// connect over TCP only to NetPorts (Landlock ABI 4 and later).
	NetLimit bool  `json:"net_limit,omitempty"`
	NetPorts []int `json:"net_ports,omitempty"`
}

type specRule struct {
	Path   string `json:"path"`
	Access access `json:"access"`
	Dir    bool   `json:"dir,omitempty"`
}

type specBind struct {
	Path  string `json:"path"`
	Write bool   `json:"write,omitempty"`
	Dir   bool   `json:"dir,omitempty"`
}

// initReply is what the init says on its file descriptor 4 once the
// process started (Pid), or why it did not.
type initReply struct {
	Pid int `json:"pid,omitempty"`
	// PidMax, from a probe: the pid namespace's pid_max could be set.
	PidMax bool   `json:"pid_max,omitempty"`
	Stage  string `json:"stage,omitempty"`
	Err    string `json:"err,omitempty"`
	Errno  int    `json:"errno,omitempty"`
}

// host is what this machine allows, probed once.
type host struct {
	abi       int
	why       string // Landlock
	nsErr     error  // why the box's namespaces do not work; nil when they do
	pidMax    bool   // a pid namespace's pid_max can be set
	netErr    error  // why a network namespace does not work in them
	cgroups   *cgroupRoot
	cgroupWhy string
}

var probeHost = sync.OnceValue(func() host {
	var h host
	h.abi, h.why = probeLandlock()
	h.cgroups, h.cgroupWhy = findCgroup()
	h.pidMax, h.nsErr = probeNamespaces()
	if h.nsErr == nil {
		h.netErr = probeNetwork()
	}
	return h
})

// Probe reports what this host enforces for a confinement with the
// default settings. It asks once.
func Probe() Status {
	return Confinement{Mode: ModeAuto, MaxProcs: DefaultMaxProcs}.Status()
}

// probeNamespaces builds a box with namespaces and nothing in it, and
// says whether its pid_max could be set.
func probeNamespaces() (pidMax bool, err error) {
	if !mainCalled.Load() {
		return false, errors.New("this program does not start the box's init (sandbox.Main is not called first in main)")
	}
	cmd := &exec.Cmd{Args: []string{InitProgram}, Env: []string{}}
	b := &box{spec: spec{Probe: true, Namespaces: true}}
	reply, err := b.start(cmd, nil)
	if err != nil {
		return false, err
	}
	err = cmd.Wait()
	b.release()
	return reply.PidMax, err
}

// minPidMax is the least pid_max Linux takes (RESERVED_PIDS + 1): a
// limit below it needs a cgroup.
const minPidMax = 301

// limit is how a box under c caps its processes.
type limit int

const (
	limitNone limit = iota
	limitCgroup
	limitRlimit
	limitPidMax
)

// limit picks the cheapest way this host has: a cgroup v2 (the init is
// born in it), RLIMIT_NPROC in the user namespace (not for root: the
// kernel lets root past it), the pid namespace's pid_max, and last a
// cgroup v1 (moving the init into it takes milliseconds, more on a busy
// machine).
func (c Confinement) limit(h host, ns bool) (limit, string) {
	n := c.maxProcs()
	cg := h.cgroups != nil && !c.noCgroup
	switch {
	case cg && h.cgroups.v2:
		return limitCgroup, fmt.Sprintf("%d processes (%s)", n, h.cgroups)
	case ns && os.Geteuid() != 0:
		return limitRlimit, fmt.Sprintf("%d processes (RLIMIT_NPROC in the user namespace)", n)
	case ns && h.pidMax && n+1 >= minPidMax && !c.noPidMax:
		return limitPidMax, fmt.Sprintf("%d processes (the pid namespace's pid_max)", n)
	case cg:
		return limitCgroup, fmt.Sprintf("%d processes (%s)", n, h.cgroups)
	}
	why := "no pids cgroup (" + h.cgroupWhy + ")"
	if !ns {
		why += " and no user namespace to count processes in"
	} else {
		why += ", and root is not held by RLIMIT_NPROC"
	}
	return limitNone, why
}

// Status says which of the box's defences c has on this host.
func (c Confinement) Status() Status {
	h := probeHost()
	st := Status{ABI: h.abi, Why: h.why}
	if c.Mode == ModeOff {
		return st
	}
	ns := h.nsErr == nil && !c.NoNamespaces
	nsWhy := "no user namespaces here"
	switch {
	case c.NoNamespaces:
		nsWhy = "namespaces turned off (" + NamespacesVar + "=off)"
	case h.nsErr != nil:
		nsWhy = "no user namespaces here: " + h.nsErr.Error()
	}
	add := func(name string, on bool, how string) {
		st.Defences = append(st.Defences, Defence{Name: name, Enforced: on, Detail: how})
	}
	if st.Available() {
		add(DefFiles, true, fmt.Sprintf("Landlock ABI %d: its worktree and what baton grants, nothing else of yours or baton's", h.abi))
	} else {
		add(DefFiles, false, h.why)
	}
	if ns {
		add(DefProcesses, true, "a pid namespace with its own /proc: sees no other process, and all it started ends with it")
	} else {
		add(DefProcesses, false, nsWhy+"; a subreaper kills the whole tree when the process ends, but the process sees other processes' /proc entries where Landlock grants them")
	}
	lim, how := c.limit(h, ns)
	add(DefLimit, lim != limitNone, how)
	add(DefTerminal, true, "a new session with no controlling terminal, no terminal device of yours")
	if ns {
		add(DefIPC, true, "an ipc namespace and a /dev/shm of its own")
	} else {
		add(DefIPC, false, nsWhy+"; /dev/shm is not granted, but System V shared memory is the machine's")
	}
	switch {
	case c.Home == "":
		add(DefHome, true, "none: nothing of your home is writable")
	case ns:
		add(DefHome, true, "shown at $HOME: "+c.Home+" (your own settings read, never written)")
	default:
		add(DefHome, true, "agent CLIs pointed at "+c.Home+" by their variables (your own home read-only)")
	}
	if c.Cache != "" {
		add(DefCaches, true, "Go, npm, pnpm, cargo and XDG caches in "+c.Cache+", never yours")
	} else {
		add(DefCaches, true, "none: no cache is writable, yours neither")
	}
	if os.Geteuid() == 0 {
		add(DefRoot, true, "runs as root: system directories narrowed to what any user may read")
	}
	if d, ok := c.netRow(ns); ok {
		st.Defences = append(st.Defences, d)
	}
	return st
}

func (c Confinement) maxProcs() int {
	if c.MaxProcs > 0 {
		return c.MaxProcs
	}
	return DefaultMaxProcs
}

// Start starts cmd as c says and returns how it went. Confined, cmd runs
// in the box: its init is the program BoxInit names (baton's own, or
// baton itself again), with cmd's
// program, arguments, environment and directory in its spec; cmd.Process
// is the init, which forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to
// what runs in the box and exits with the process's status (128+n when a
// signal n ended it). The caller calls release after cmd.Wait; release
// is never nil.
func (c Confinement) Start(cmd *exec.Cmd) (release func(), rep Report, err error) {
	release = func() {}
	switch c.Mode {
	case ModeOff:
		return release, Report{Detail: "--sandbox=off"}, cmd.Start()
	case "", ModeAuto, ModeRequired:
	default:
		return release, Report{}, baton.Errorf(baton.Invalid, "unknown sandbox mode %q", c.Mode)
	}
	if cmd.Err != nil {
		return release, Report{}, cmd.Err
	}
	st := c.Status()
	rep = Report{Confined: st.Available(), Missing: st.Missing()}
	if rep.Confined {
		rep.Detail = st.String() + "; " + strings.Join(enforcedNames(st), ", ")
	} else {
		rep.Detail = st.Why
	}
	if c.Mode == ModeRequired && len(rep.Missing) > 0 {
		return release, rep, baton.Errorf(baton.Unavailable, "not started: --sandbox=required and %s", strings.Join(rep.Missing, "; "))
	}
	if !mainCalled.Load() {
		return release, rep, baton.Errorf(baton.Internal, "cannot start the box's init: this program does not call sandbox.Main first in main")
	}
	b, err := c.box(cmd, st)
	if err != nil {
		return release, rep, baton.WrapError(baton.Internal, err, "build the sandbox")
	}
	var cgroups *cgroupRoot
	if lim, _ := c.limit(probeHost(), b.spec.Namespaces); lim == limitCgroup {
		cgroups = probeHost().cgroups
	}
	if _, err := b.start(cmd, cgroups); err != nil {
		return release, rep, err
	}
	rep.EndsWithInit = b.spec.Namespaces
	return b.release, rep, nil
}

func enforcedNames(st Status) []string {
	var out []string
	for _, d := range st.Defences {
		if d.Enforced && d.Name != DefFiles {
			out = append(out, d.Name)
		}
	}
	return out
}

// box is one start's init: its spec, and what to undo after it ended.
type box struct {
	spec     spec
	files    []*os.File // handed to the init after its own two
	undo     []func()
	once     sync.Once
	done     chan struct{} // closed by release: the forking thread may end
	lifeline *os.File      // baton's end of the spec pipe
	cg       *cgroup
	newNet   bool       // the box gets a network namespace of its own
	outside  []specRule // the Landlock rules baton adds (see spec.ABI)
}

// box builds the spec for cmd under c.
func (c Confinement) box(cmd *exec.Cmd, st Status) (b *box, err error) {
	b = &box{}
	defer func() {
		if err != nil {
			b.release()
		}
	}()
	env := cmd.Environ()
	ns := !c.NoNamespaces && probeHost().nsErr == nil
	pol := c.Policy
	cacheEnv, cachePol, cleanup, err := c.caches(env)
	b.undo = append(b.undo, cleanup)
	if err != nil {
		return nil, err
	}
	env = withEnv(env, cacheEnv)
	pol = pol.Merge(cachePol)
	rules, err := pol.rules()
	if err != nil {
		return nil, err
	}
	s := spec{
		Path: cmd.Path, Args: cmd.Args, Env: env, Dir: cmd.Dir,
		Namespaces: ns, MaxProcs: c.maxProcs(),
	}
	if len(s.Args) == 0 {
		s.Args = []string{cmd.Path}
	}
	if st.Available() {
		s.ABI = st.ABI
	}
	for _, r := range rules {
		s.Rules = append(s.Rules, specRule{Path: r.path, Access: r.access, Dir: r.dir})
	}
	if ns {
		if err := c.homeView(&s, EnvFrom(env).Home, rules); err != nil {
			return nil, err
		}
		// What the box mounts of its own, granted inside it.
		s.Rules = append(s.Rules,
			specRule{Path: "/proc", Access: accessRead, Dir: true},
			specRule{Path: "/dev/shm", Access: accessWrite, Dir: true},
			specRule{Path: "/dev/pts", Access: accessDevice, Dir: true},
			specRule{Path: "/dev/ptmx", Access: accessDevice},
			specRule{Path: "/dev/tty", Access: accessDevice},
		)
		lim, _ := c.limit(probeHost(), true)
		s.Rlimit, s.PidMax = lim == limitRlimit, lim == limitPidMax
	}
	if s.ABI > 0 {
		s.Rules, b.outside = boxRules(s)
	}
	b.spec = s
	if err := c.openNetwork(b, ns); err != nil {
		return nil, err
	}
	return b, nil
}

// boxRules splits s's rules into those the init adds, in the box's
// view, and those baton adds while the init starts: every rule on a path
// that is the same file in the box as outside. With namespaces the init
// mounts its own /proc and /dev entries, the agent home at $HOME and an
// empty directory over each socket directory, so a rule on a path within
// one of those, or around one (which hideSocketDirs reads to see what is
// granted whole), stays the init's. Without, the box sees what baton sees.
func boxRules(s spec) (inside, outside []specRule) {
	if !s.Namespaces {
		return nil, s.Rules
	}
	mounts := []string{"/proc", "/dev"}
	if s.Home != "" {
		mounts = append(mounts, s.Home)
	}
	for _, d := range socketDirs {
		mounts = append(mounts, d)
		if r, err := filepath.EvalSymlinks(d); err == nil && r != d {
			mounts = append(mounts, r)
		}
	}
	for _, r := range s.Rules {
		if slices.ContainsFunc(mounts, func(m string) bool { return within(r.Path, m) || within(m, r.Path) }) {
			inside = append(inside, r)
		} else {
			outside = append(outside, r)
		}
	}
	return inside, outside
}

// homeView shows the agent home at home inside the box, with every path
// the rules grant beneath home shown in it (read-only unless written).
func (c Confinement) homeView(s *spec, home string, rules []rule) error {
	if c.Home == "" || !filepath.IsAbs(home) {
		return nil
	}
	real, ok := resolve(home)
	if !ok || real == "/" {
		return nil
	}
	if err := os.MkdirAll(c.Home, 0o700); err != nil {
		return fmt.Errorf("create the agent home: %w", err)
	}
	source, ok := resolve(c.Home)
	if !ok {
		return fmt.Errorf("the agent home %s is gone", c.Home)
	}
	s.Home, s.HomeSource = real, source
	for _, r := range rules {
		if r.access == accessDevice || !within(r.path, real) {
			continue
		}
		s.Binds = append(s.Binds, specBind{Path: r.path, Write: r.access == accessWrite, Dir: r.dir})
	}
	// Writable through the view: the agent home itself.
	s.Rules = append(s.Rules, specRule{Path: real, Access: accessWrite, Dir: true})
	return nil
}

// start starts the init for cmd: the init's program, arguments,
// environment and files replace cmd's, which travel in the spec.
func (b *box) start(cmd *exec.Cmd, cgroups *cgroupRoot) (*initReply, error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	replyR, replyW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, err
	}
	b.lifeline = specW
	b.undo = append(b.undo, func() { specW.Close() })
	defer replyR.Close()

	cmd.Args = []string{InitProgram}
	cmd.Env = []string{} // the process's own environment travels in the spec
	cmd.ExtraFiles = append([]*os.File{specR, replyW}, b.files...)
	b.spec.NetFDs = len(b.files)
	var rulesF *os.File
	if b.spec.ABI > 0 {
		fd, err := newRuleset(b.spec.ABI, b.spec.NetLimit, b.spec.NetPorts)
		if err != nil {
			specR.Close()
			replyW.Close()
			return nil, fmt.Errorf("make the box's Landlock ruleset: %w", err)
		}
		rulesF = os.NewFile(uintptr(fd), "landlock")
		defer rulesF.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, rulesF)
	}
	cmd.Path = initPath(len(cmd.ExtraFiles))
	attr := &syscall.SysProcAttr{Setsid: true}
	if b.spec.Namespaces {
		attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC
		if b.newNet {
			attr.Cloneflags |= syscall.CLONE_NEWNET
		}
		uid, gid := os.Getuid(), os.Getgid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		if uid != 0 {
			// Kept across the exec into the init, which needs them to
			// build the box and drops them before the process starts;
			// the network's forwarders bind port 53 and open raw sockets.
			attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN,
				unix.CAP_NET_BIND_SERVICE, unix.CAP_NET_RAW}
		}
	}
	if cgroups != nil && !b.spec.Probe {
		if b.cg, err = cgroups.create(b.spec.MaxProcs); err != nil {
			specR.Close()
			replyW.Close()
			return nil, fmt.Errorf("create the box's cgroup: %w", err)
		}
		if b.cg.fd >= 0 {
			attr.UseCgroupFD, attr.CgroupFD = true, b.cg.fd
		}
	}
	cmd.SysProcAttr = attr
	b.done = make(chan struct{})
	err = onParkedThread(nil, cmd.Start, b.done)
	specR.Close()
	replyW.Close()
	if err != nil {
		b.release()
		return nil, err
	}
	if rulesF != nil {
		// While the init starts (its runtime, then the spec): the init
		// holds the ruleset, but applies it only after the spec, which
		// comes after the last rule.
		err := addRules(int(rulesF.Fd()), b.outside, b.spec.ABI)
		rulesF.Close()
		if err != nil {
			b.abort(cmd)
			return nil, fmt.Errorf("build the box's Landlock rules: %w", err)
		}
	}
	if err := json.NewEncoder(specW).Encode(b.spec); err != nil {
		b.abort(cmd)
		return nil, fmt.Errorf("hand the box its spec: %w", err)
	}
	// The init builds the box while it is put in its cgroup, and starts
	// the process on "g".
	if b.cg != nil && b.cg.fd < 0 {
		if err := b.cg.add(cmd.Process.Pid); err != nil {
			b.abort(cmd)
			return nil, fmt.Errorf("put the box in its cgroup: %w", err)
		}
	}
	if !b.spec.Probe {
		if _, err := specW.Write([]byte("g")); err != nil {
			b.abort(cmd)
			return nil, fmt.Errorf("start the box: %w", err)
		}
	}
	raw, _ := io.ReadAll(io.LimitReader(replyR, 64<<10))
	var reply initReply
	if err := json.Unmarshal(raw, &reply); err != nil || reply.Err != "" || (reply.Pid == 0 && !b.spec.Probe) {
		b.abort(cmd)
		switch {
		case reply.Err == "":
			return nil, errors.New("the box's init ended before it started anything")
		case reply.Stage == "exec":
			return nil, &os.PathError{Op: "fork/exec", Path: b.spec.Path, Err: syscall.Errno(reply.Errno)}
		case reply.Errno != 0:
			return nil, fmt.Errorf("the box's init: %s: %s: %w", reply.Stage, reply.Err, syscall.Errno(reply.Errno))
		}
		return nil, fmt.Errorf("the box's init: %s: %s", reply.Stage, reply.Err)
	}
	return &reply, nil
}

// abort ends an init that did not start its process, and waits for it.
func (b *box) abort(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	b.release()
}

// release undoes what the start set up: the lifeline (which ends an init
// still running), the cgroup with whatever is left in it, the caches of
// a single start, and the parked forking thread.
func (b *box) release() {
	b.once.Do(func() {
		if b.lifeline != nil {
			b.lifeline.Close()
		}
		if b.cg != nil {
			b.cg.destroy()
		}
		for i := len(b.undo) - 1; i >= 0; i-- {
			b.undo[i]()
		}
		if b.done != nil {
			close(b.done)
		}
	})
}

// onParkedThread runs prepare and then start on an OS thread of their
// own, which stays parked until done is closed, and returns start's
// error. A child's parent-death signal follows the thread that forked
// it, not the process: a thread that ended would kill the child. A
// thread that prepare restricted is never used again, so it ends with
// its goroutine (in the box's init, which starts nothing else). Without
// prepare the thread only forked, and goes back to the runtime when done:
// ending it would kill every other child that thread happened to fork
// before, with the parent-death signal baton gives them all
// (proc.GroupAttr). It is never the main thread: a main thread parked,
// or restricted, would hold the whole process.
func onParkedThread(prepare func() error, start func() error, done <-chan struct{}) error {
	errc := make(chan error, 1)
	go parked(prepare, start, done, errc)
	return <-errc
}

func parked(prepare func() error, start func() error, done <-chan struct{}, errc chan<- error) {
	runtime.LockOSThread() // unlocked below only when prepare did not restrict it
	if unix.Gettid() == unix.Getpid() {
		// This goroutine landed on the main thread. Hold it, so that the
		// one started now lands on another, and give the main thread back.
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			parked(prepare, start, done, errc)
		}()
		<-finished
		runtime.UnlockOSThread()
		return
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			errc <- err
			return
		}
	}
	err := start()
	errc <- err
	if err == nil {
		<-done
	}
	if prepare == nil {
		runtime.UnlockOSThread()
	}
}

// withEnv returns env with add's variables set, replacing earlier ones.
func withEnv(env, add []string) []string {
	if len(add) == 0 {
		return env
	}
	names := map[string]bool{}
	for _, kv := range add {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	out := make([]string, 0, len(env)+len(add))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !names[k] {
			out = append(out, kv)
		}
	}
	return append(out, add...)
}

// ShowsHome reports whether a start under c shows the agent home at
// $HOME (where the host has the box's namespaces).
func (c Confinement) ShowsHome() bool {
	return c.Home != "" && c.Mode != ModeOff && !c.NoNamespaces && probeHost().nsErr == nil
}
