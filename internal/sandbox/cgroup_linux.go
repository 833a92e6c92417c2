package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// cgroupRoot is the pids cgroup baton runs in, where it may make one
// cgroup per box: cgroup v2 with the pids controller delegated to it, or
// cgroup v1's pids hierarchy where baton may write (as root).
type cgroupRoot struct {
	dir string
	v2  bool
}

func (r *cgroupRoot) String() string {
	if r.v2 {
		return "a pids cgroup (v2) per box"
	}
	return "a pids cgroup (v1) per box"
}

// cgroup is one box's.
type cgroup struct {
	dir string
	v2  bool
	fd  int // v2: the directory, for CLONE_INTO_CGROUP; -1 for v1
}

var cgroupSeq atomic.Uint64

// pendingCgroups are cgroups whose last process was still on its way out
// when the box ended: removed by a later box.
var pendingCgroups struct {
	sync.Mutex
	dirs []string
}

// findCgroup finds where this process may make pids cgroups, or says why
// it may not.
func findCgroup() (*cgroupRoot, string) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, "cannot read /proc/self/cgroup"
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, "cannot read /proc/self/mountinfo"
	}
	var why []string
	for _, v2 := range []bool{true, false} {
		dir := cgroupDir(own, mounts, v2)
		if dir == "" {
			continue
		}
		r := &cgroupRoot{dir: dir, v2: v2}
		if err := r.check(); err != nil {
			why = append(why, err.Error())
			continue
		}
		r.sweep()
		return r, ""
	}
	if len(why) == 0 {
		return nil, "no pids controller is mounted"
	}
	return nil, strings.Join(why, "; ")
}

// cgroupDir is the directory of this process's cgroup in the v2
// hierarchy, or in v1's pids hierarchy; "" when there is none.
func cgroupDir(own, mounts []byte, v2 bool) string {
	var rel string
	for line := range bytes.Lines(own) {
		parts := strings.SplitN(strings.TrimSuffix(string(line), "\n"), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v2 && parts[0] == "0" && parts[1] == "" {
			rel = parts[2]
		}
		if !v2 && slices.Contains(strings.Split(parts[1], ","), "pids") {
			rel = parts[2]
		}
	}
	if rel == "" {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(mounts))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		// Fields are split by single spaces; a name escapes its own.
		f, g := strings.Split(pre, " "), strings.Split(post, " ")
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		root, mnt := unescapeMount(f[3]), f[4]
		switch {
		case v2 && g[0] == "cgroup2":
		case !v2 && g[0] == "cgroup" && slices.Contains(strings.Split(g[2], ","), "pids"):
		default:
			continue
		}
		// The mount shows the hierarchy from root: our cgroup is below it.
		r, err := filepath.Rel(root, rel)
		if err != nil || strings.HasPrefix(r, "..") {
			continue
		}
		return filepath.Join(unescapeMount(mnt), r)
	}
	return ""
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// check makes and removes a cgroup, to learn whether boxes can have one.
func (r *cgroupRoot) check() error {
	if r.v2 {
		ctl, err := os.ReadFile(filepath.Join(r.dir, "cgroup.subtree_control"))
		if err != nil || !slices.Contains(strings.Fields(string(ctl)), "pids") {
			return fmt.Errorf("cgroup v2: the pids controller is not delegated to %s", r.dir)
		}
	}
	g, err := r.create(1)
	if err != nil {
		return fmt.Errorf("cgroup %s: cannot make a cgroup in %s: %v", map[bool]string{true: "v2", false: "v1"}[r.v2], r.dir, errors.Unwrap(err))
	}
	g.destroy()
	return nil
}

// create makes a box's cgroup holding at most max processes.
func (r *cgroupRoot) create(max int) (*cgroup, error) {
	dir := filepath.Join(r.dir, fmt.Sprintf("baton-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("mkdir: %w", err)
	}
	g := &cgroup{dir: dir, v2: r.v2, fd: -1}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("set pids.max: %w", err)
	}
	if r.v2 {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			os.Remove(dir)
			return nil, fmt.Errorf("open: %w", err)
		}
		g.fd = fd
	}
	return g, nil
}

// add moves pid into g (cgroup v1, which has no CLONE_INTO_CGROUP).
func (g *cgroup) add(pid int) error {
	return os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// destroy kills whatever is left in g and removes it; one still emptying
// is removed by a later box.
func (g *cgroup) destroy() {
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
	if g.v2 {
		// Linux 5.14 and later kill a whole cgroup at once.
		_ = os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
	}
	// Each round kills what the last one missed; a process being killed
	// forks no more, so the rounds end.
	for range 1000 {
		b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
		if err != nil || len(bytes.TrimSpace(b)) == 0 {
			break
		}
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if os.Remove(g.dir) != nil {
		pendingCgroups.Lock()
		pendingCgroups.dirs = append(pendingCgroups.dirs, g.dir)
		pendingCgroups.Unlock()
	}
	removePending()
}

func removePending() {
	pendingCgroups.Lock()
	defer pendingCgroups.Unlock()
	kept := pendingCgroups.dirs[:0]
	for _, d := range pendingCgroups.dirs {
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			kept = append(kept, d)
		}
	}
	pendingCgroups.dirs = kept
}

// sweep removes the empty cgroups of baton processes that are gone (one
// killed before it could remove its own).
func (r *cgroupRoot) sweep() {
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		var pid, seq int
		if !e.IsDir() {
			continue
		}
		if n, _ := fmt.Sscanf(e.Name(), "baton-%d-%d", &pid, &seq); n != 2 || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == nil {
			continue // its baton still runs
		}
		_ = os.Remove(filepath.Join(r.dir, e.Name())) // fails while it holds a process
	}
}
