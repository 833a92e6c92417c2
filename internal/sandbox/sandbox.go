// Package sandbox confines the processes baton starts for an agent: the
// agent itself, and the check commands (verify, deploy, observe, a
// runner's guards) that run code an agent wrote. An agent acts on text
// anyone can write into an issue, so a prompt-injected agent is the
// expected case, and it runs as the same user as baton: without
// confinement it could read baton's API token, its database, other
// deliveries' worktrees and the secrets of whoever runs it.
//
// On Linux the confinement is Landlock: a process started by Start may
// read, list and execute only below its Policy's Read paths, write only
// below its Write paths, open only the listed devices, signal no process
// outside its own domain and connect to no abstract socket outside it.
// The network stays open (an agent needs its model's API). Landlock is
// applied to one locked OS thread just before it forks the child, so
// baton itself is never confined.
package sandbox

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/baton-agent/baton"
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
)

// Configure is the confinement flags and the environment ask for: mode,
// unless "", over ModeVar; the read and write paths of both, the flags'
// first. Relative paths are taken from dir.
func Configure(getenv func(string) string, dir, mode string, read, write []string) (Confinement, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	m, err := ParseMode(cmp.Or(mode, getenv(ModeVar)))
	if err != nil {
		return Confinement{}, err
	}
	c := Confinement{Mode: m}
	c.Policy.Read = pathsFrom(dir, read, getenv(ReadVar))
	c.Policy.Write = pathsFrom(dir, write, getenv(WriteVar))
	return c, nil
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
	// Write paths may also be written: files created, changed, truncated,
	// removed and renamed beneath them.
	Write []string
	// Devices are opened for reading and writing, with ioctl: terminals,
	// /dev/null.
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
		Write:   append(slices.Clip(p.Write), q.Write...),
		Devices: append(slices.Clip(p.Devices), q.Devices...),
		Deny:    append(slices.Clip(p.Deny), q.Deny...),
	}
}

// Confinement is how to start one process: the mode and, when it
// confines, the policy.
type Confinement struct {
	Mode   Mode
	Policy Policy
}

// Report says how a process was started: confined, or why not. It is
// recorded with the run, so a person can tell afterwards.
type Report struct {
	Confined bool
	Detail   string // "Landlock ABI 7", or why the process was not confined
}

func (r Report) String() string {
	if r.Confined {
		return "confined (" + r.Detail + ")"
	}
	return "not confined: " + r.Detail
}

// Status says whether this machine can confine processes.
type Status struct {
	// ABI is the kernel's Landlock ABI version; 0 when it has none.
	ABI int
	// Why the kernel cannot confine, when ABI is 0.
	Why string
}

// Available reports whether processes can be confined.
func (s Status) Available() bool { return s.ABI > 0 }

func (s Status) String() string {
	if s.Available() {
		return fmt.Sprintf("Landlock ABI %d", s.ABI)
	}
	return "unavailable: " + s.Why
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
	get := func(name string) string {
		v := ""
		for _, kv := range env {
			if k, val, ok := strings.Cut(kv, "="); ok && k == name {
				v = val
			}
		}
		return v
	}
	return Env{
		Home: get("HOME"), Path: get("PATH"),
		XDGConfigHome: get("XDG_CONFIG_HOME"), XDGCacheDir: get("XDG_CACHE_HOME"),
		GoPath: get("GOPATH"), GoModCache: get("GOMODCACHE"), GoCache: get("GOCACHE"),
	}
}

// System is what any program needs to run: the system's directories and
// devices, the directories on PATH and the installations they belong to,
// git's configuration, toolchains installed in the home directory, and
// the caches they write. It grants nothing else of the home directory:
// not ~/.ssh, not ~/.config/gh, not baton's data.
func System(e Env) Policy {
	p := Policy{
		Read: []string{
			"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
			"/sys",
			// What programs read of /proc to size themselves. Never /proc
			// as a whole: it holds other processes' environments.
			"/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg", "/proc/uptime",
			"/proc/version", "/proc/filesystems", "/proc/sys",
		},
		Devices: []string{
			"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
			"/dev/tty", "/dev/ptmx", "/dev/pts",
		},
		Write: []string{"/dev/shm"},
	}
	// /etc/resolv.conf is often a link into /run.
	if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil {
		p.Read = append(p.Read, r)
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
	cacheHome := e.XDGCacheDir
	if cacheHome == "" {
		cacheHome = home(".cache")
	}
	goPath := home("go")
	if gp := filepath.SplitList(e.GoPath); len(gp) > 0 && gp[0] != "" {
		goPath = gp[0]
	}
	p.Read = append(p.Read,
		home(".gitconfig"), filepath.Join(configHome, "git"),
		goPath, home("sdk"), home(".cargo"), home(".rustup"), home(".nvm"), home(".volta"),
		home(".bun"), home(".deno"), home(".pyenv"), home(".local", "lib"),
	)
	p.Write = append(p.Write, cacheHome, home(".npm"),
		filepath.Join(goPath, "pkg", "mod"), home(".cargo", "registry"), home(".cargo", "git"))
	for _, d := range []string{e.GoModCache, e.GoCache} {
		if filepath.IsAbs(d) {
			p.Write = append(p.Write, d)
		}
	}
	// Credentials the user keeps at home: never, even through a grant that
	// contains them.
	p.Deny = append(p.Deny, home(".ssh"), home(".gnupg"), home(".netrc"), home(".git-credentials"),
		filepath.Join(configHome, "gh"), home(".aws"), home(".docker"), home(".kube"))
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
// narrowed to their other entries.
func (p Policy) rules() ([]rule, error) {
	deny := make([]string, 0, len(p.Deny))
	for _, d := range p.Deny {
		if r, ok := resolve(d); ok {
			deny = append(deny, r)
		}
	}
	var out []rule
	seen := map[rule]bool{}
	add := func(path string, a access) error {
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
			return narrow(r, a, deny, seen, &out)
		}
		ru := rule{path: r, access: a, dir: fi.IsDir()}
		if !seen[ru] {
			seen[ru] = true
			out = append(out, ru)
		}
		return nil
	}
	for _, list := range []struct {
		paths []string
		a     access
	}{{p.Read, accessRead}, {p.Write, accessWrite}, {p.Devices, accessDevice}} {
		for _, path := range list.paths {
			if err := add(path, list.a); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
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
