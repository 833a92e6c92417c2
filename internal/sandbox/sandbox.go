// Package sandbox confines the processes baton starts for an agent: the
// agent itself, and the check commands (verify, deploy, observe, a
// runner's guards, a loop's verify commands) that run code an agent
// wrote. An agent acts on text anyone can write into an issue, so a
// prompt-injected agent is the expected case, and it runs as the same
// user as baton: without confinement it could read baton's API token, its
// database, other deliveries' worktrees and the secrets of whoever runs
// it, type into the user's terminal, leave a process behind, or plant
// code in a cache the user's own builds run.
//
// Confinement.Start is the one way in. It starts baton itself again as
// the box's init (Main, checked at the top of every main), which builds
// the box and then runs the process in it:
//
//   - where the host allows user namespaces, in new user, pid, mount and
//     ipc namespaces: its own /proc (no other process visible), a private
//     /dev/shm and terminal devices of its own, the agent home shown at
//     $HOME, and no capability; whatever is left when the process ends
//     dies with the pid namespace;
//   - elsewhere, as a subreaper that kills the whole tree when it ends;
//   - in both, in a new session with no controlling terminal, with
//     no_new_privs, Landlock (files: Policy; no signals and no abstract
//     sockets outside the box), a process limit (a pids cgroup where the
//     host delegates one, else RLIMIT_NPROC inside the user namespace),
//     and build caches of baton's own.
//
// Probe says which of these defences this host enforces; Report says
// which one start had.
package sandbox

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/netpolicy"
)

// Mode says whether the processes an agent runs are confined.
type Mode string

const (
	// ModeAuto confines where the kernel can, and runs unconfined (saying
	// so) where it cannot.
	ModeAuto Mode = "auto"
	// ModeRequired refuses to start what cannot be confined.
	ModeRequired Mode = "required"
	// ModeOff never confines: an explicit opt-out.
	ModeOff Mode = "off"
)

// Modes are the accepted values, for flags and completion.
var Modes = []string{string(ModeAuto), string(ModeRequired), string(ModeOff)}

// ParseMode reads a --sandbox value; "" is ModeAuto.
func ParseMode(s string) (Mode, error) {
	switch Mode(strings.ToLower(strings.TrimSpace(s))) {
	case "", ModeAuto:
		return ModeAuto, nil
	case ModeRequired:
		return ModeRequired, nil
	case ModeOff:
		return ModeOff, nil
	}
	return "", baton.Errorf(baton.Invalid, "--sandbox takes auto, required or off, got %q", s)
}

// Variables that set confinement for every baton command. A hook, which
// has no flags, reads only these.
const (
	ModeVar  = "BATON_SANDBOX"
	ReadVar  = "BATON_SANDBOX_READ"  // a list of paths, as PATH is
	WriteVar = "BATON_SANDBOX_WRITE" // a list of paths, as PATH is
	ProcsVar = "BATON_SANDBOX_PROCS" // the process limit of one box
)

// DefaultMaxProcs is how many processes and threads one box may hold at
// once: far more than a build or a test suite starts, far fewer than a
// fork bomb takes.
const DefaultMaxProcs = 4096

// Configure is the confinement flags and the environment ask for: mode,
// unless "", over ModeVar; the read and write paths of both, the flags'
// first; the process limit, unless 0, over ProcsVar; the network's
// allowlist from the environment (netpolicy.Configure). Relative paths are
// taken from dir. The agent home and the caches are in baton's data
// directory (see DataDir).
func Configure(getenv func(string) string, dir, mode string, read, write []string) (Confinement, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	m, err := ParseMode(cmp.Or(mode, getenv(ModeVar)))
	if err != nil {
		return Confinement{}, err
	}
	c := Confinement{Mode: m, MaxProcs: DefaultMaxProcs}
	if v := getenv(ProcsVar); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Confinement{}, baton.Errorf(baton.Invalid, "%s=%q: want a number of processes, at least 1", ProcsVar, v)
		}
		c.MaxProcs = n
	}
	switch v := strings.ToLower(getenv(NamespacesVar)); v {
	case "", "auto", "on":
	case "off":
		c.NoNamespaces = true
	default:
		return Confinement{}, baton.Errorf(baton.Invalid, "%s=%q: want off or auto", NamespacesVar, v)
	}
	if c.Network.Allow, err = netpolicy.Configure(getenv, netpolicy.Settings{}); err != nil {
		return Confinement{}, err
	}
	c.Policy.Read = pathsFrom(dir, read, getenv(ReadVar))
	c.Policy.Write = pathsFrom(dir, write, getenv(WriteVar))
	if data, err := baton.DataDir(getenv, dir); err == nil {
		c = c.InDataDir(data)
	}
	return c, nil
}

// InDataDir returns c keeping its agent home and caches in baton's data
// directory data: data/agent-home and data/agent-cache.
func (c Confinement) InDataDir(data string) Confinement {
	c.Home = filepath.Join(data, "agent-home")
	c.Cache = filepath.Join(data, "agent-cache")
	c.SetupCache = filepath.Join(data, "setup-cache")
	return c
}

// ForSetup returns c for a repository's set-up commands: their caches
// are the set-up cache, which they alone write (the boxes of agents and
// checks read it).
func (c Confinement) ForSetup() Confinement {
	c.Cache, c.SetupCache = c.SetupCache, ""
	return c
}

// ForProject returns c with caches of project's own (a repository, a
// project root), so that what one project's agents put in a cache never
// runs in another's builds.
func (c Confinement) ForProject(project string) Confinement {
	if project == "" {
		return c
	}
	sum := sha256.Sum256([]byte(project))
	name := strings.Trim(cacheName(filepath.Base(project)), "-.")
	if len(name) > 40 {
		name = name[:40]
	}
	name = cmp.Or(name, "project") + "-" + hex.EncodeToString(sum[:6])
	if c.Cache != "" {
		c.Cache = filepath.Join(c.Cache, name)
	}
	if c.SetupCache != "" {
		c.SetupCache = filepath.Join(c.SetupCache, name)
	}
	return c
}

// cacheName replaces each run of bytes other than letters, digits, '.',
// '_' and '-' in s with one '-'. (A regular expression would be compiled
// at every hook's start: this package is linked into baton-hook.)
func cacheName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	run := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			run = false
		} else if !run {
			b.WriteByte('-')
			run = true
		}
	}
	return b.String()
}

// pathsFrom is the paths of flags and of list, absolute from dir.
func pathsFrom(dir string, flags []string, list string) []string {
	var out []string
	for _, p := range append(slices.Clone(flags), filepath.SplitList(list)...) {
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		out = append(out, filepath.Clean(p))
	}
	return out
}

// Policy is the part of the file system a confined process may reach.
// Paths that do not exist are skipped.
type Policy struct {
	// Read paths may be read, listed and executed, with all beneath them.
	Read []string
	// Public paths are Read paths that, when baton runs as root, are
	// narrowed to what any user of the machine may read: root owns
	// /etc/shadow, SSH host keys and TLS keys, and a process running as
	// root reads them through their owner's bits, capabilities or not.
	Public []string
	// Write paths may also be written: files created, changed, truncated,
	// removed and renamed beneath them.
	Write []string
	// Devices are opened for reading and writing, with ioctl.
	Devices []string
	// Deny paths are never reachable through a Read or Write path that
	// contains them: such a grant is narrowed to its other entries. A grant
	// inside a denied path is an explicit exception (a delivery's worktree
	// inside baton's data directory).
	Deny []string
}

// Merge returns p with q's paths added.
func (p Policy) Merge(q Policy) Policy {
	return Policy{
		Read:    append(slices.Clip(p.Read), q.Read...),
		Public:  append(slices.Clip(p.Public), q.Public...),
		Write:   append(slices.Clip(p.Write), q.Write...),
		Devices: append(slices.Clip(p.Devices), q.Devices...),
		Deny:    append(slices.Clip(p.Deny), q.Deny...),
	}
}

// Confinement is how to start one process: the mode and, when it
// confines, the policy and the box's state.
type Confinement struct {
	Mode   Mode
	Policy Policy
	// Home is the agent home: a directory of baton's that the box shows at
	// the process's $HOME, with the paths of the real home that Policy
	// grants shown inside it (read-only unless written). An agent CLI's
	// configuration and sessions persist there, and nothing written there
	// reaches the user's own sessions. "" shows the real home, narrowed by
	// Policy. Without mount namespaces the home is not shown (see
	// ShowsHome): agentrun then points each CLI at it by its variables.
	Home string
	// Cache holds the build caches of what runs in the box (Go's module
	// and build caches, npm, pnpm, cargo, XDG_CACHE_HOME): the user's own
	// caches are never written, so nothing an agent puts there runs in the
	// user's next unconfined build. "" sets none up: what runs in the box
	// writes no cache (baton's own git needs none).
	Cache string
	// SetupCache holds the caches a repository's set-up filled (see
	// ForSetup): read-only here, so that an agent cannot plant what the
	// next delivery's set-up would install; Go modules in it are read as
	// a proxy before any other. "" reads none.
	SetupCache string
	// MaxProcs caps the processes and threads the box holds at once; 0 is
	// DefaultMaxProcs.
	MaxProcs int
	// NoNamespaces builds the box as on a host without user namespaces
	// (NamespacesVar=off).
	NoNamespaces bool
	// Network is what the box may reach over the network.
	Network Network
	// noCgroup and noPidMax build the box as on a host that delegates no
	// pids cgroup, or whose kernel has no pid_max per pid namespace: for
	// tests of those paths.
	noCgroup, noPidMax bool
}

// Network is a box's network policy. Where the host makes namespaces
// (and the program set Hooks.OpenNetwork), the box gets a network
// namespace of its own whose one way out is a proxy outside that allows
// only Allow and records what it refuses; elsewhere Landlock (ABI 4 and
// later) limits its TCP connections to Allow's ports.
type Network struct {
	// Open leaves the box on this machine's network: nothing of the
	// network is confined.
	Open bool
	// Allow is what the box may reach.
	Allow netpolicy.Allowlist
	// OnRefuse, when set, hears of each connection or name refused, as
	// it happens.
	OnRefuse func(netpolicy.Refusal)
}

// Report says how a process was started: confined, or why not, and
// which of the box's defences it had. It is recorded with the run, so a
// person can tell afterwards.
type Report struct {
	// Confined is true when the process ran in the box with its files
	// confined by Landlock.
	Confined bool
	// Detail is "Landlock ABI 7, ..." or why the process was not confined.
	Detail string
	// Missing names the defences this start lacked, each with why.
	Missing []string
	// EndsWithInit is true when nothing the process starts can outlive
	// the box's init: the box has a pid namespace of its own, which the
	// kernel empties when its init ends, and the init dies with the
	// process that started it (a parent-death SIGKILL). The starter needs
	// no watchdog of its own then.
	EndsWithInit bool
}

func (r Report) String() string {
	if !r.Confined {
		return "not confined: " + r.Detail
	}
	if len(r.Missing) > 0 {
		return "confined (" + r.Detail + "; not enforced: " + strings.Join(r.Missing, "; ") + ")"
	}
	return "confined (" + r.Detail + ")"
}

// Exposure is what an unconfined agent can reach, for the warning that
// serve, worker and doctor print when the kernel cannot confine.
const Exposure = "agents and check commands run unconfined, as your user: a prompt-injected agent can read baton's API token, its database and other deliveries' worktrees"

// Env is the part of a child's environment the system policy depends on.
type Env struct {
	Home, Path                  string
	XDGConfigHome, XDGCacheDir  string
	GoPath, GoModCache, GoCache string
}

// EnvFrom reads Env from a child's environment (KEY=value entries; the
// last one of a name wins, as exec does).
func EnvFrom(env []string) Env {
	get := func(name string) string { return envValue(env, name) }
	return Env{
		Home: get("HOME"), Path: get("PATH"),
		XDGConfigHome: get("XDG_CONFIG_HOME"), XDGCacheDir: get("XDG_CACHE_HOME"),
		GoPath: get("GOPATH"), GoModCache: get("GOMODCACHE"), GoCache: get("GOCACHE"),
	}
}

// envValue is name's value in env; the last entry wins, as exec does.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// System is what any program needs to run: the system's directories and
// devices, the directories on PATH and the installations they belong to,
// git's and Go's configuration, and toolchains installed in the home
// directory, all to read. It grants nothing else of the home directory
// (not ~/.ssh, not ~/.config/gh, not baton's data) and nothing to write:
// the box gives the process caches and a /dev/shm of its own, and no
// terminal.
func System(e Env) Policy {
	p := Policy{
		Public: []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix"},
		Read: []string{
			// What programs read of /proc to size themselves. Never /proc
			// as a whole: it holds other processes' environments. (In a pid
			// namespace the box mounts a /proc of its own and grants it.)
			"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/uptime",
			"/proc/version", "/proc/filesystems", "/proc/sys",
		},
		Devices: []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"},
	}
	if os.Geteuid() == 0 {
		// What programs read of /sys, and no more: root reads files there
		// that no one else may (firmware tables, serial numbers).
		p.Read = append(p.Read, "/sys/devices/system/cpu", "/sys/fs/cgroup", "/sys/kernel/mm/transparent_hugepage")
	} else {
		p.Read = append(p.Read, "/sys")
	}
	// /etc/resolv.conf is often a link into /run.
	if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
		p.Public = append(p.Public, r)
	}
	for _, dir := range filepath.SplitList(e.Path) {
		if !filepath.IsAbs(dir) {
			continue // a relative PATH entry names wherever the child runs
		}
		p.Read = append(p.Read, dir)
		if filepath.Base(dir) == "bin" {
			// An installation prefix keeps what its programs load beside
			// bin/ (nvm's node_modules, a venv's packages).
			prefix := filepath.Dir(dir)
			p.Read = append(p.Read, filepath.Join(prefix, "lib"), filepath.Join(prefix, "libexec"))
		}
	}
	if e.Home == "" || !filepath.IsAbs(e.Home) {
		return p
	}
	home := func(rel ...string) string { return filepath.Join(append([]string{e.Home}, rel...)...) }
	configHome := e.XDGConfigHome
	if configHome == "" {
		configHome = home(".config")
	}
	goPath := home("go")
	if gp := filepath.SplitList(e.GoPath); len(gp) > 0 && gp[0] != "" {
		goPath = gp[0]
	}
	p.Read = append(p.Read,
		home(".gitconfig"), filepath.Join(configHome, "git"), filepath.Join(configHome, "go"),
		goPath, home("sdk"), home(".cargo"), home(".rustup"), home(".nvm"), home(".volta"),
		home(".bun"), home(".deno"), home(".pyenv"), home(".local", "lib"),
	)
	// Credentials the user keeps at home: never, even through a grant that
	// contains them.
	p.Deny = append(p.Deny, home(".ssh"), home(".gnupg"), home(".netrc"), home(".git-credentials"),
		filepath.Join(configHome, "gh"), home(".aws"), home(".docker"), home(".kube"),
		home(".cargo", "credentials"), home(".cargo", "credentials.toml"))
	return p
}

// rule is one path and what it grants.
type rule struct {
	path   string
	access access
	dir    bool
}

type access int

const (
	accessRead access = iota
	accessWrite
	accessDevice
)

// rules turns p into the rules to give the kernel: paths made absolute
// and resolved, missing ones dropped, grants that contain a denied path
// narrowed to their other entries. When baton runs as root, the Public
// paths, and the Read paths inside them, are narrowed around what no
// other user may read.
func (p Policy) rules() ([]rule, error) {
	deny := make([]string, 0, len(p.Deny))
	for _, d := range p.Deny {
		if r, ok := resolve(d); ok {
			deny = append(deny, r)
		}
	}
	readDeny := deny
	root := os.Geteuid() == 0
	if root {
		hidden, err := nonPublic(p.Public)
		if err != nil {
			return nil, err
		}
		readDeny = append(slices.Clip(deny), hidden...)
	}
	var out []rule
	seen := map[rule]bool{}
	public := p.Public
	if root {
		// Narrowing a system directory reads hundreds of entries: its
		// rules are kept as its walk is.
		for _, r := range narrowedPublic(public, readDeny) {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
		public = nil
	}
	add := func(path string, a access, deny []string) error {
		return grant(path, a, deny, seen, &out)
	}
	for _, list := range []struct {
		paths []string
		a     access
		deny  []string
	}{{public, accessRead, readDeny}, {p.Read, accessRead, readDeny}, {p.Write, accessWrite, deny}, {p.Devices, accessDevice, deny}} {
		for _, path := range list.paths {
			if err := add(path, list.a, list.deny); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// grant adds the rules that grant a's access to path, narrowed around
// deny.
func grant(path string, a access, deny []string, seen map[rule]bool, out *[]rule) error {
	r, ok := resolve(path)
	if !ok {
		return nil
	}
	fi, err := os.Stat(r)
	if err != nil {
		return nil
	}
	if slices.Contains(deny, r) {
		return nil // a path inside one is an explicit exception, kept
	}
	if fi.IsDir() && containsDenied(r, deny) {
		return narrow(r, a, deny, seen, out)
	}
	ru := rule{path: r, access: a, dir: fi.IsDir()}
	if !seen[ru] {
		seen[ru] = true
		*out = append(*out, ru)
	}
	return nil
}

// narrow grants a's access to each entry of dir except the denied ones,
// descending into entries that contain a denied path.
func narrow(dir string, a access, deny []string, seen map[rule]bool, out *[]rule) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // unreadable: nothing to grant
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		r, ok := resolve(p)
		if !ok || slices.Contains(deny, r) {
			continue
		}
		if r != p && (denied(r, deny) || containsDenied(r, deny)) {
			continue // a link into a denied path, or to one holding it
		}
		if r != p && within(r, "/proc") {
			continue // /etc/mtab: /proc/self is the reader's, not baton's
		}
		fi, err := os.Stat(r)
		if err != nil {
			continue
		}
		if fi.IsDir() && containsDenied(r, deny) {
			if err := narrow(r, a, deny, seen, out); err != nil {
				return err
			}
			continue
		}
		ru := rule{path: r, access: a, dir: fi.IsDir()}
		if !seen[ru] {
			seen[ru] = true
			*out = append(*out, ru)
		}
	}
	return nil
}

// resolve makes path absolute and resolves its links; ok is false when it
// does not exist or is relative.
func resolve(path string) (string, bool) {
	if path == "" || !filepath.IsAbs(path) {
		return "", false
	}
	r, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	return r, true
}

// within reports whether path is dir or lies beneath it.
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	if len(dir) > 0 && dir[0] == '/' && len(path) > 0 && path[0] == '/' &&
		filepath.Clean(dir) == dir && filepath.Clean(path) == path {
		// Both absolute and clean, as resolved paths are: a prefix that
		// ends at a separator. A box start asks this of every rule
		// against every denied path.
		return dir == "/" || len(path) > len(dir) && path[len(dir)] == '/' && path[:len(dir)] == dir
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// denied reports whether path lies beneath a denied path.
func denied(path string, deny []string) bool {
	for _, d := range deny {
		if within(path, d) {
			return true
		}
	}
	return false
}

// containsDenied reports whether a denied path lies strictly beneath dir.
func containsDenied(dir string, deny []string) bool {
	for _, d := range deny {
		if d != dir && within(d, dir) {
			return true
		}
	}
	return false
}
