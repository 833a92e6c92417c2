package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// openTreeCloexec is OPEN_TREE_CLOEXEC (O_CLOEXEC).
const openTreeCloexec = unix.O_CLOEXEC

// mountBox builds the box's mounts, in its own mount namespace: a /proc
// that shows the box's pid namespace only, a /dev/shm and terminal
// devices (/dev/pts, /dev/ptmx) of its own, and, with s.Home, the agent
// home at $HOME with the paths s.Binds names shown in it. Nothing of
// this reaches the mounts of baton or the machine.
func mountBox(s *spec) (*homeView, error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("make the mounts private: %w", err)
	}
	// The home view covers what it shows: open it all first.
	type source struct {
		bind specBind
		fd   int
	}
	var sources []source
	homeFD := -1
	defer func() {
		for _, src := range sources {
			unix.Close(src.fd)
		}
		if homeFD >= 0 {
			unix.Close(homeFD)
		}
	}()
	if s.Home != "" && !s.Probe {
		var err error
		if homeFD, err = openNoFollow(unix.AT_FDCWD, s.HomeSource, true); err != nil {
			return nil, fmt.Errorf("open the agent home %s: %w", s.HomeSource, err)
		}
		binds := slices.Clone(s.Binds)
		slices.SortFunc(binds, func(a, b specBind) int { return strings.Compare(a.Path, b.Path) })
		for _, b := range binds {
			fd, err := openNoFollow(unix.AT_FDCWD, b.Path, b.Dir)
			if errors.Is(err, unix.ENOENT) {
				continue // gone since baton looked
			}
			if err != nil {
				return nil, fmt.Errorf("open %s to show it in the box: %w", b.Path, err)
			}
			sources = append(sources, source{b, fd})
		}
	}
	if s.ABI > 0 && !s.Probe {
		if err := hideSocketDirs(s); err != nil {
			return nil, err
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, fmt.Errorf("mount a /proc of its own: %w", err)
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return nil, fmt.Errorf("mount a /dev/shm of its own: %w", err)
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return nil, fmt.Errorf("mount terminals of its own on /dev/pts: %w", err)
	}
	if err := unix.Mount("/dev/pts/ptmx", "/dev/ptmx", "", unix.MS_BIND, ""); err != nil {
		return nil, fmt.Errorf("show its own /dev/ptmx: %w", err)
	}
	if homeFD < 0 {
		return nil, nil
	}
	v := &homeView{home: s.Home}
	target, err := openNoFollow(unix.AT_FDCWD, s.Home, true)
	if err != nil {
		return nil, fmt.Errorf("open $HOME %s: %w", s.Home, err)
	}
	err = attach(homeFD, target, true)
	unix.Close(target)
	if err != nil {
		return nil, fmt.Errorf("show the agent home at %s: %w", s.Home, err)
	}
	var shown []string
	for _, src := range sources {
		rel, err := filepath.Rel(s.Home, src.bind.Path)
		if err != nil {
			continue
		}
		// Inside a path already shown, the mount point is the user's own
		// and exists: nothing may be made there.
		nested := slices.ContainsFunc(shown, func(p string) bool { return within(src.bind.Path, p) })
		target, err := v.mountpoint(rel, src.bind.Dir, !nested)
		if err != nil {
			v.remove()
			return nil, fmt.Errorf("make a place for %s in the agent home: %w", src.bind.Path, err)
		}
		err = attach(src.fd, target, src.bind.Write)
		unix.Close(target)
		if err != nil {
			v.remove()
			return nil, fmt.Errorf("show %s in the box: %w", src.bind.Path, err)
		}
		v.mounted = append(v.mounted, src.bind.Path)
		shown = append(shown, src.bind.Path)
	}
	return v, nil
}

// openNoFollow opens path (absolute, or relative to dirfd) as an O_PATH
// descriptor, following no link on the way.
func openNoFollow(dirfd int, path string, dir bool) (int, error) {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	if dir {
		how.Flags |= unix.O_DIRECTORY
	}
	fd, err := unix.Openat2(dirfd, path, &how)
	if errors.Is(err, unix.ENOSYS) {
		// Before Linux 5.6: the path was resolved by baton and lies where
		// the process cannot write, but its last component is checked.
		return unix.Openat(dirfd, path, int(how.Flags), 0)
	}
	return fd, err
}

// attach shows the tree at src on target, read-only unless write.
func attach(src, target int, write bool) error {
	tree, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|openTreeCloexec|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	if !write {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			return fmt.Errorf("make it read-only: %w", err)
		}
	}
	if err := unix.MoveMount(tree, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// homeView is the agent home as shown at $HOME: what was mounted in it,
// and the mount points made for them, to take away when the box ends.
type homeView struct {
	home    string
	mounted []string
	created []createdEntry
}

type createdEntry struct {
	rel string
	dir bool
}

// mountpoint opens rel beneath the home view for a mount, as a directory
// or a file. With create, what is missing is made and what is in the way
// (a link, a file where a directory belongs: the agent's own doing in an
// earlier box) is removed; no link is ever followed.
func (v *homeView) mountpoint(rel string, dir, create bool) (int, error) {
	fd, err := openNoFollow(unix.AT_FDCWD, v.home, true)
	if err != nil {
		return -1, err
	}
	if rel == "." {
		return fd, nil
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for i, name := range parts {
		last := i == len(parts)-1
		wantDir := !last || dir
		next, err := v.entry(fd, strings.Join(parts[:i+1], "/"), name, wantDir, create)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// entry opens name in the directory dirfd, as a directory or a file,
// making it (or making room for it) when create allows.
func (v *homeView) entry(dirfd int, rel, name string, wantDir, create bool) (int, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil:
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		isReg := st.Mode&unix.S_IFMT == unix.S_IFREG
		if (wantDir && isDir) || (!wantDir && isReg) {
			return openNoFollow(dirfd, name, wantDir)
		}
		if !create {
			return -1, fmt.Errorf("%s is not a %s", rel, kind(wantDir))
		}
		flag := 0
		if isDir {
			flag = unix.AT_REMOVEDIR
		}
		if err := unix.Unlinkat(dirfd, name, flag); err != nil {
			return -1, fmt.Errorf("remove %s, in the way: %w", rel, err)
		}
	case !errors.Is(err, unix.ENOENT):
		return -1, err
	case !create:
		return -1, fmt.Errorf("%s is missing", rel)
	}
	if wantDir {
		if err := unix.Mkdirat(dirfd, name, 0o755); err != nil {
			return -1, err
		}
	} else {
		f, err := unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return -1, err
		}
		unix.Close(f)
	}
	v.created = append(v.created, createdEntry{rel: rel, dir: wantDir})
	return openNoFollow(dirfd, name, wantDir)
}

func kind(dir bool) string {
	if dir {
		return "directory"
	}
	return "file"
}

// remove takes away what the view mounted and made, so the agent home
// keeps only what the agent wrote. Everything in the box has ended.
func (v *homeView) remove() {
	if v == nil {
		return
	}
	for i := len(v.mounted) - 1; i >= 0; i-- {
		_ = unix.Unmount(v.mounted[i], unix.MNT_DETACH)
	}
	v.mounted = nil
	for i := len(v.created) - 1; i >= 0; i-- {
		removeBeneath(v.home, v.created[i])
	}
	v.created = nil
}

// removeBeneath removes e beneath home, if it is still an empty mount
// point: following no link, so that nothing outside the agent home is
// touched whatever the agent left there.
func removeBeneath(home string, e createdEntry) {
	dir, name := filepath.Split(e.rel)
	fd, err := openNoFollow(unix.AT_FDCWD, filepath.Join(home, dir), true)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if e.dir {
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			_ = unix.Unlinkat(fd, name, unix.AT_REMOVEDIR) // fails unless empty
		}
		return
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == 0 {
		_ = unix.Unlinkat(fd, name, 0)
	}
}

// socketDirs are where a machine's services keep their unix sockets: a
// database's, a container engine's, D-Bus, a terminal multiplexer's
// (tmux would type into the user's terminal), X, ssh and gpg agents.
// Landlock does not govern connecting to a socket by its path (not
// before its resolve-unix right), so the box shows each as an empty
// directory of its own, with only what it grants beneath them shown
// again. Abstract sockets belong to the network namespace, which the
// box has of its own.
var socketDirs = []string{"/tmp", "/var/tmp", "/run", "/var/run"}

// hideSocketDirs puts an empty tmpfs over each of socketDirs that s
// does not grant whole, and shows again the paths s grants beneath it
// (its rules, its working directory, its Keep), each as it is outside.
// The agent cannot write the tmpfs: no rule grants it.
func hideSocketDirs(s *spec) error {
	keep := slices.Clone(s.Keep)
	for _, r := range s.Rules {
		keep = append(keep, r.Path)
	}
	if s.Dir != "" {
		keep = append(keep, s.Dir)
	}
	slices.Sort(keep)
	var hidden []string
	for _, d := range socketDirs {
		dir, err := filepath.EvalSymlinks(d)
		if err != nil || slices.Contains(hidden, dir) {
			continue
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if slices.ContainsFunc(keep, func(p string) bool { return within(dir, p) }) {
			continue // granted whole
		}
		hidden = append(hidden, dir)
		if err := hideDir(dir, keep); err != nil {
			return fmt.Errorf("hide %s: %w", dir, err)
		}
	}
	return nil
}

// hideDir mounts an empty tmpfs on dir and shows the paths of keep
// (sorted) beneath it again.
func hideDir(dir string, keep []string) error {
	type shown struct {
		path string
		dir  bool
		fd   int
	}
	var show []shown
	defer func() {
		for _, sh := range show {
			unix.Close(sh.fd)
		}
	}()
	for _, p := range keep {
		if p == dir || !within(p, dir) || slices.ContainsFunc(show, func(sh shown) bool { return within(p, sh.path) }) {
			continue // elsewhere, or shown with a path that holds it
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			continue // gone since baton looked: nothing to show
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		fd, err := openNoFollow(unix.AT_FDCWD, p, isDir)
		if err != nil {
			return fmt.Errorf("open %s to show it again: %w", p, err)
		}
		show = append(show, shown{p, isDir, fd})
	}
	mode := "mode=1777"
	if !slices.Contains([]string{"/tmp", "/var/tmp"}, dir) {
		mode = "mode=755"
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, mode+",size=1m"); err != nil {
		return fmt.Errorf("mount an empty tmpfs: %w", err)
	}
	// The tmpfs is new and the box's alone, and nothing runs in the box
	// yet: its mount points are made by path.
	for _, sh := range show {
		if err := os.MkdirAll(filepath.Dir(sh.path), 0o755); err != nil {
			return err
		}
		if sh.dir {
			err := os.Mkdir(sh.path, 0o755)
			if err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
		} else if err := os.WriteFile(sh.path, nil, 0o644); err != nil {
			return err
		}
		target, err := openNoFollow(unix.AT_FDCWD, sh.path, sh.dir)
		if err != nil {
			return err
		}
		err = attach(sh.fd, target, true) // as it is outside: Landlock decides
		unix.Close(target)
		if err != nil {
			return fmt.Errorf("show %s again: %w", sh.path, err)
		}
	}
	return nil
}
