package safefile

import (
	"errors"
	"io/fs"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once the kernel said it has no openat2 (before 5.6).
var noOpenat2 atomic.Bool

// openat2 opens path beneath dirfd in one call, with no link followed
// and no way out. ok is false when the kernel has no openat2: walk the
// components instead.
func openat2(dirfd int, path string, flags int, perm uint32) (fd int, ok bool, err error) {
	if noOpenat2.Load() {
		return -1, false, nil
	}
	if flags&(unix.O_CREAT|unix.O_TMPFILE) == 0 {
		perm = 0 // openat2, unlike openat, refuses a mode it would not use
	}
	how := unix.OpenHow{
		Flags:   uint64(flags),
		Mode:    uint64(perm),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err = unix.Openat2(dirfd, path, &how)
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			break
		}
	}
	if errors.Is(err, unix.ENOSYS) {
		noOpenat2.Store(true)
		return -1, false, nil
	}
	if errors.Is(err, unix.ELOOP) {
		// A link on the way or at the end: tell which, as the walk does.
		return -1, true, linkError(dirfd, path)
	}
	if errors.Is(err, unix.ENOTDIR) {
		return -1, true, ErrNotBeneath
	}
	return fd, true, err
}

// linkError tells a link at the end of path (ELOOP, which callers report
// as a symlink) from one on the way (ErrNotBeneath).
func linkError(dirfd int, path string) error {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return unix.ELOOP
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}
	fd, err := unix.Openat2(dirfd, path[:i], &how)
	if err != nil {
		return ErrNotBeneath
	}
	unix.Close(fd)
	return unix.ELOOP
}

// noExchange is set once the file system said it cannot exchange names.
var noExchange atomic.Bool

// swapInto puts the file tmp in place of name, both in dirfd, as a
// rename would, for a cache. ext4 writes a file's data out when it is
// renamed over another (so that a crash leaves the old content or the
// new, not an empty file), which a cache does not need: exchanging the
// two names and removing the old file spares it. A cache may then come
// back empty after a crash of the machine: its reader checks it and
// rebuilds.
func swapInto(dirfd int, tmp, name string) error {
	if noExchange.Load() {
		return unix.Renameat(dirfd, tmp, dirfd, name)
	}
	err := unix.Renameat2(dirfd, tmp, dirfd, name, unix.RENAME_EXCHANGE)
	switch {
	case errors.Is(err, unix.ENOENT):
		return unix.Renameat(dirfd, tmp, dirfd, name) // nothing to replace
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP):
		noExchange.Store(true)
		return unix.Renameat(dirfd, tmp, dirfd, name)
	case err != nil:
		return err
	}
	// tmp now names what name was: a file, a link (removed, not
	// followed, as a rename over it would), or a directory, which a
	// rename would not have replaced: put it back.
	if err := unix.Unlinkat(dirfd, tmp, 0); err != nil {
		if errors.Is(err, unix.EISDIR) && unix.Renameat2(dirfd, tmp, dirfd, name, unix.RENAME_EXCHANGE) == nil {
			return unix.EISDIR // the caller removes its temp file
		}
		return err
	}
	return nil
}

// names lists the entries of d: getdents(2) straight into a buffer
// large enough for a few hundred names at a call, where os.File reads
// 8 KiB at a time.
func (d *DirBeneath) names() ([]string, error) {
	// A description of its own: d may be a cache's, listed by more than
	// one caller.
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "readdirent", Path: d.path, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 32<<10)
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		} else if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: d.path, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
