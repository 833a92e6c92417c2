package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Files below a directory someone else writes (a worktree an agent
// worked in, a store a checkout carried) are opened beneath it: the
// directory is baton's choice and trusted, the path below it is not.
// No link on the path is followed, final or intermediate, so nothing
// opened, created, replaced or removed lies outside the directory; a
// FIFO or a device is never opened blocking; reads are bounded. Where
// the kernel has openat2 (Linux 5.6) one call resolves the path with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS; elsewhere each component is
// opened in turn with O_NOFOLLOW from the one before.

// ErrNotBeneath is the cause when a path below a directory leads out of
// it: a symlink or a non-directory where a directory is on the way, or a
// ".." or an absolute path.
var ErrNotBeneath = errors.New("not beneath its directory (a link or a file on the way)")

// walkOnly forces the component walk where openat2 exists, so the
// older kernels' path is tested too (SetOpenat2).
var walkOnly atomic.Bool

// SetOpenat2 turns the use of openat2 off (or back on where the kernel
// has it) and returns the function that restores the previous setting.
// It is for tests of the component walk that older kernels take.
func SetOpenat2(on bool) (restore func()) {
	was := walkOnly.Swap(!on)
	return func() { walkOnly.Store(was) }
}

// beneathFlags are added to every open beneath a directory: no final
// link, no blocking on a FIFO or a device, no leak into children.
const beneathFlags = unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// splitBeneath cleans rel (slash or OS separators) into its components;
// none for the directory itself. ".." and absolute paths are refused.
func splitBeneath(rel string) ([]string, error) {
	rel = filepath.ToSlash(rel)
	if strings.HasPrefix(rel, "/") {
		return nil, ErrNotBeneath
	}
	var parts []string
	for _, p := range strings.Split(rel, "/") {
		switch p {
		case "", ".":
		case "..":
			return nil, ErrNotBeneath
		default:
			parts = append(parts, p)
		}
	}
	return parts, nil
}

// openAt opens the path of parts beneath the directory dirfd with flags
// (beneathFlags added) and perm.
func openAt(dirfd int, parts []string, flags int, perm uint32) (int, error) {
	flags |= beneathFlags
	if len(parts) == 0 {
		return unix.Openat(dirfd, ".", flags&^unix.O_NOFOLLOW, perm)
	}
	if !walkOnly.Load() {
		if fd, ok, err := openat2(dirfd, strings.Join(parts, "/"), flags, perm); ok {
			return fd, err
		}
	}
	fd := dirfd
	for i, p := range parts {
		last := i == len(parts)-1
		f := unix.O_RDONLY | unix.O_DIRECTORY | beneathFlags
		if last {
			f = flags
		}
		next, err := unix.Openat(fd, p, f, perm)
		if fd != dirfd {
			unix.Close(fd)
		}
		if err != nil {
			if !last && (errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR)) {
				err = ErrNotBeneath
			}
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// openRoot opens the trusted directory root.
func openRoot(root string) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	return fd, nil
}

// beneathError names the file of an error from beneath root.
func beneathError(op, root, rel string, err error) error {
	path := filepath.Join(root, filepath.FromSlash(rel))
	switch {
	case errors.Is(err, unix.ELOOP):
		err = fmt.Errorf("%w (a symlink)", ErrNotRegular)
	case errors.Is(err, unix.ENXIO): // a FIFO with no reader, opened to write
		err = fmt.Errorf("%w (a FIFO)", ErrNotRegular)
	case errors.Is(err, unix.EXDEV): // openat2 saw the path leave the directory
		err = ErrNotBeneath
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// OpenBeneath opens rel beneath the directory root with flag (os.O_*)
// and perm, following no link on the way and never blocking. A file
// opened to read or write must be a regular file (ErrNotRegular for a
// link, a FIFO, a device or a directory); with os.O_CREATE it is created
// as one. The file it returns blocks as usual.
func OpenBeneath(root, rel string, flag int, perm os.FileMode) (*os.File, error) {
	parts, err := splitBeneath(rel)
	if err != nil {
		return nil, beneathError("open", root, rel, err)
	}
	rfd, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer unix.Close(rfd)
	fd, err := openAt(rfd, parts, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, beneathError("open", root, rel, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(root, filepath.FromSlash(rel)))
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: f.Name(), Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	_ = unix.SetNonblock(fd, false)
	return f, nil
}

// ReadBeneath reads the regular file rel beneath root, of at most max
// bytes (ErrTooLarge otherwise), following no link.
func ReadBeneath(root, rel string, max int64) ([]byte, error) {
	f, err := OpenBeneath(root, rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, _, err := readAllOf(f, f.Name(), max)
	return b, err
}

// DirBeneath is a directory opened beneath a trusted one, for the
// changes made in it: files replaced atomically, removed, made. Close
// it when done.
type DirBeneath struct {
	fd   int
	path string
	// shared is a directory a Root's cache keeps open: Close leaves it.
	shared bool
}

// OpenDirBeneath opens the directory rel beneath root, making it and
// every missing directory on the way (with perm) when mkdir is set. No
// link on the way is followed: a link or a file where a directory should
// be is ErrNotBeneath.
func OpenDirBeneath(root, rel string, mkdir bool, perm os.FileMode) (*DirBeneath, error) {
	parts, err := splitBeneath(rel)
	if err != nil {
		return nil, beneathError("open", root, rel, err)
	}
	fd, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(root, filepath.FromSlash(rel))
	if len(parts) == 0 {
		return &DirBeneath{fd: fd, path: path}, nil
	}
	next, err := openDirAt(fd, parts, mkdir, uint32(perm.Perm()))
	unix.Close(fd)
	if err != nil {
		return nil, beneathError("open", root, rel, err)
	}
	return &DirBeneath{fd: next, path: path}, nil
}

// Path is the directory's path.
func (d *DirBeneath) Path() string { return d.path }

// Close closes the directory (one a Root's cache keeps stays open).
func (d *DirBeneath) Close() error {
	if d.shared {
		return nil
	}
	return unix.Close(d.fd)
}

// WriteAtomic replaces the file name in d with data, as WriteAtomic
// does: a temp file in d, fsynced and renamed over name. Whatever name
// was (a link, a FIFO), it is replaced, never followed or opened.
func (d *DirBeneath) WriteAtomic(name string, data []byte, perm os.FileMode) error {
	return d.WriteAtomicFunc(name, perm, writeAll(data))
}

// WriteAtomicFunc is WriteAtomic with the content written by write.
func (d *DirBeneath) WriteAtomicFunc(name string, perm os.FileMode, write func(*os.File) error) error {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return &fs.PathError{Op: "write", Path: filepath.Join(d.path, name), Err: ErrNotBeneath}
	}
	return replaceAt(d.fd, name, filepath.Join(d.path, name), perm, syncFile, write)
}

// Remove removes the entry name of d, whatever it is (a link is removed,
// not followed; a directory with everything in it). A missing name is no
// error.
func (d *DirBeneath) Remove(name string) error {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return &fs.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: ErrNotBeneath}
	}
	err := unix.Unlinkat(d.fd, name, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		err = d.removeDir(name)
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// removeDir removes the directory name of d and everything in it,
// through file descriptors: a link inside is removed, never followed.
func (d *DirBeneath) removeDir(name string) error {
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|beneathFlags, 0)
	if err != nil {
		return err
	}
	sub := &DirBeneath{fd: fd, path: filepath.Join(d.path, name)}
	names, rerr := sub.names()
	for _, n := range names {
		if err := sub.Remove(n); err != nil {
			sub.Close()
			return err
		}
	}
	sub.Close()
	if rerr != nil {
		return rerr
	}
	return unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
}

// ReadFile reads the regular file name of d, of at most max bytes,
// without following a link or blocking on a FIFO.
func (d *DirBeneath) ReadFile(name string, max int64) ([]byte, error) {
	path := filepath.Join(d.path, name)
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotBeneath}
	}
	f, err := openFileAt(d.fd, name, path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, _, err := readAllOf(f, path, max)
	return b, err
}

// Names lists the entries of d, in no particular order.
func (d *DirBeneath) Names() ([]string, error) { return d.names() }

// ReadDir lists the entries of d with their types, in no particular
// order.
func (d *DirBeneath) ReadDir() ([]fs.DirEntry, error) {
	var ents []fs.DirEntry
	err := d.list(func(f *os.File) (err error) {
		ents, err = f.ReadDir(-1)
		return err
	})
	return ents, err
}

// list calls read with d as a file, read from its start.
func (d *DirBeneath) list(read func(*os.File) error) error {
	// A description of its own, not a dup sharing d's offset: d may be
	// a cache's, listed by more than one caller.
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return read(f)
}

// Lstat describes the entry name of d without following it.
func (d *DirBeneath) Lstat(name string) (fs.FileMode, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, &fs.PathError{Op: "lstat", Path: filepath.Join(d.path, name), Err: err}
	}
	return modeOf(uint32(st.Mode)), nil
}

// FileID tells one version of a file from another without reading it: a
// write in place changes its size, its modification time or its change
// time (which no program can set back), a replacement its inode.
type FileID struct {
	Mode   fs.FileMode
	Ino    uint64
	Size   int64
	Mod    int64 // modification time, ns since the epoch
	Change int64 // change time, ns since the epoch
}

// Ident describes the entry name of d without following it: one fstatat
// in d, which costs a fraction of a stat of the whole path.
func (d *DirBeneath) Ident(name string) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return FileID{}, &fs.PathError{Op: "lstat", Path: filepath.Join(d.path, name), Err: err}
	}
	return FileID{Mode: modeOf(uint32(st.Mode)), Ino: st.Ino, Size: st.Size,
		Mod: st.Mtim.Nano(), Change: st.Ctim.Nano()}, nil
}

// modeOf turns a stat mode's type bits into fs.FileMode's.
func modeOf(m uint32) fs.FileMode {
	perm := fs.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return perm | fs.ModeDir
	case syscall.S_IFLNK:
		return perm | fs.ModeSymlink
	case syscall.S_IFIFO:
		return perm | fs.ModeNamedPipe
	case syscall.S_IFCHR:
		return perm | fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return perm | fs.ModeDevice
	case syscall.S_IFSOCK:
		return perm | fs.ModeSocket
	}
	return perm
}

// WriteBeneath replaces rel beneath root with data atomically, making
// the directories on the way (0755) and following no link: a plan an
// agent's worktree names through a link to elsewhere is refused, not
// written there.
func WriteBeneath(root, rel string, data []byte, perm os.FileMode) error {
	dir, name := filepath.Split(filepath.FromSlash(rel))
	if name == "" {
		return &fs.PathError{Op: "write", Path: filepath.Join(root, rel), Err: ErrNotBeneath}
	}
	d, err := OpenDirBeneath(root, dir, true, 0o755)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteAtomic(name, data, perm)
}
