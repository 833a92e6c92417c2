package safefile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Root is a directory files are opened beneath: a context store that a
// checkout wrote. Every path given to its methods lies below Dir; no
// directory between Dir and the file may be a link (ErrNotBeneath), and
// the file itself is never followed (ErrNotRegular), so nothing read,
// written, locked or removed through a Root lies outside it. The zero
// Root follows the directories of a path as the system does: it is what
// the package's functions (ReadFile, WriteAtomic, Lock, ...) use, for
// paths baton chose itself.
type Root struct {
	Dir string
	// dirs, when set, keeps the directories opened beneath Dir open for
	// the next lookups (WithDirCache).
	dirs *dirCache
}

// at opens the directory that holds path, for the *at calls: beneath
// r.Dir, or none (the working directory's descriptor and path itself)
// for the zero Root. done closes what it opened.
func (r Root) at(path string) (dirfd int, name string, done func(), err error) {
	if r.Dir == "" {
		return unix.AT_FDCWD, path, func() {}, nil
	}
	rel, err := filepath.Rel(r.Dir, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return -1, "", nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotBeneath}
	}
	dir, name := filepath.Split(rel)
	d, err := r.OpenDir(dir, false, 0)
	if err != nil {
		return -1, "", nil, err
	}
	return d.fd, name, func() { d.Close() }, nil
}

// openFileAt opens name in dirfd with flag (never following a final
// link, never blocking) and returns it only when it is a regular file;
// path names it in errors.
func openFileAt(dirfd int, name, path string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := unix.Openat(dirfd, name, flag|beneathFlags, uint32(perm.Perm()))
	if err != nil {
		switch {
		case errors.Is(err, unix.ELOOP):
			err = fmt.Errorf("%w (a symlink)", ErrNotRegular)
		case errors.Is(err, unix.ENXIO): // a FIFO with no reader, opened to write
			err = fmt.Errorf("%w (a FIFO)", ErrNotRegular)
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	// Reads and writes of a regular file never block; clear O_NONBLOCK
	// anyway so the file behaves as any other for its user.
	_ = unix.SetNonblock(fd, false)
	return f, nil
}

// createTempAt creates a new temp file beside name in dirfd, with perm
// (set explicitly, whatever the umask), and returns its name there.
func createTempAt(dirfd int, name string, perm os.FileMode) (string, int, error) {
	dir, base := filepath.Split(name)
	for range 100 {
		tmp := dir + "." + base + TempMarker + strconv.FormatUint(rand.Uint64(), 36)
		fd, err := unix.Openat(dirfd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", -1, err
		}
		if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
			unix.Close(fd)
			_ = unix.Unlinkat(dirfd, tmp, 0)
			return "", -1, err
		}
		return tmp, fd, nil
	}
	return "", -1, errors.New("no free temp file name")
}

// syncLevel is what a replacement fsyncs.
type syncLevel int

const (
	syncNone       syncLevel = iota // a cache: rebuilt when lost
	syncFile                        // the new file's bytes, before the rename
	syncFileAndDir                  // and the directory after it: the rename too
)

// replaceAt writes a temp file beside name with write, fsyncs what sync
// says, and renames it over name: whatever name was (a link, a FIFO), it
// is replaced, never followed or opened. On any error the temp file goes.
func replaceAt(dirfd int, name, path string, perm os.FileMode, sync syncLevel, write func(*os.File) error) error {
	tmp, fd, err := createTempAt(dirfd, name, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	err = write(f)
	if err == nil && sync >= syncFile {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && sync == syncNone {
		err = swapInto(dirfd, tmp, name)
	} else if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if sync == syncFileAndDir {
		if err := fsyncDir(dirfd, path); err != nil {
			return fmt.Errorf("write %s: the rename may not survive a crash: %w", path, err)
		}
	}
	return nil
}

// fsyncDir fsyncs the directory dirfd, or path's for AT_FDCWD.
func fsyncDir(dirfd int, path string) error {
	if dirfd != unix.AT_FDCWD {
		return unix.Fsync(dirfd)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// OpenRegular opens path for reading as the package's OpenRegular does,
// beneath r.
func (r Root) OpenRegular(path string) (*os.File, error) {
	dirfd, name, done, err := r.at(path)
	if err != nil {
		return nil, err
	}
	defer done()
	return openFileAt(dirfd, name, path, unix.O_RDONLY, 0)
}

// ReadFile reads path as the package's ReadFile does, beneath r.
func (r Root) ReadFile(path string, max int64) ([]byte, error) {
	b, _, err := r.ReadFileInfo(path, max)
	return b, err
}

// ReadFileInfo reads path as the package's ReadFileInfo does, beneath r.
func (r Root) ReadFileInfo(path string, max int64) ([]byte, fs.FileInfo, error) {
	f, err := r.OpenRegular(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return readAllOf(f, path, max)
}

// WriteAtomic replaces path as the package's WriteAtomic does, beneath r.
func (r Root) WriteAtomic(path string, data []byte, perm os.FileMode) error {
	return r.replace(path, perm, syncFile, writeAll(data))
}

// WriteDurable is WriteAtomic that also makes the rename durable: it
// fsyncs the directory after it, so that once it returns a crash of the
// machine leaves the new file, not the old one. A rename reaches the disk
// otherwise only with the file system's next commit (ext4: within five
// seconds). It costs a second commit.
func (r Root) WriteDurable(path string, data []byte, perm os.FileMode) error {
	return r.replace(path, perm, syncFileAndDir, writeAll(data))
}

// SyncDir fsyncs the directory that holds path, beneath r: what makes a
// rename or a link in it survive a crash of the machine. WriteAtomic and
// then SyncDir is WriteDurable with the directory's commit moved out of
// a lock held around the write.
func (r Root) SyncDir(path string) error {
	dirfd, _, done, err := r.at(path)
	if err != nil {
		return fmt.Errorf("write %s: the rename may not survive a crash: %w", path, err)
	}
	defer done()
	if err := fsyncDir(dirfd, path); err != nil {
		return fmt.Errorf("write %s: the rename may not survive a crash: %w", path, err)
	}
	return nil
}

// WriteCache replaces path as the package's WriteCache does, beneath r.
func (r Root) WriteCache(path string, data []byte, perm os.FileMode) error {
	return r.replace(path, perm, syncNone, writeAll(data))
}

// WriteCacheFunc is WriteCache with the content written by write.
func (r Root) WriteCacheFunc(path string, perm os.FileMode, write func(*os.File) error) error {
	return r.replace(path, perm, syncNone, write)
}

func (r Root) replace(path string, perm os.FileMode, sync syncLevel, write func(*os.File) error) error {
	dirfd, name, done, err := r.at(path)
	if err != nil {
		return err
	}
	defer done()
	return replaceAt(dirfd, name, path, perm, sync, write)
}

// CreateExclusive creates path as the package's CreateExclusive does,
// beneath r.
func (r Root) CreateExclusive(path string, data []byte, perm os.FileMode) error {
	dirfd, name, done, err := r.at(path)
	if err != nil {
		return err
	}
	defer done()
	tmp, fd, err := createTempAt(dirfd, name, perm)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	err = writeSyncClose(os.NewFile(uintptr(fd), path), data)
	if err == nil {
		err = unix.Linkat(dirfd, tmp, dirfd, name, 0)
	}
	// The temp name goes before the directory's fsync, so that one commit
	// records both the new name and the temp's removal.
	_ = unix.Unlinkat(dirfd, tmp, 0)
	if errors.Is(err, unix.EEXIST) {
		return fs.ErrExist
	} else if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := fsyncDir(dirfd, path); err != nil {
		return fmt.Errorf("create %s: the new file may not survive a crash: %w", path, err)
	}
	return nil
}

// MkdirAll makes the directory path and the missing ones above it below
// r.Dir (the zero Root: os.MkdirAll), never through a link.
func (r Root) MkdirAll(path string, perm os.FileMode) error {
	if r.Dir == "" {
		return os.MkdirAll(path, perm)
	}
	rel, err := filepath.Rel(r.Dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return &fs.PathError{Op: "mkdir", Path: path, Err: ErrNotBeneath}
	}
	d, err := r.OpenDir(rel, true, perm)
	if err != nil {
		return err
	}
	return d.Close()
}

// Remove removes the file path beneath r (a link is removed, never
// followed; a directory is left in place). A missing
// file is no error.
func (r Root) Remove(path string) error {
	dirfd, name, done, err := r.at(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer done()
	if err := unix.Unlinkat(dirfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// openLockFile opens path+".lock", creating it, never through a link and
// only when it is a regular file.
func (r Root) openLockFile(path string) (*os.File, error) {
	dirfd, name, done, err := r.at(path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	defer done()
	f, err := openFileAt(dirfd, name, path+".lock", unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// Lock takes path's lock as the package's Lock does, beneath r.
func (r Root) Lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := r.openLockFile(path)
	if err != nil {
		return nil, err
	}
	return lockFile(ctx, f, path)
}

// TryLock is Lock without waiting: ok is false when another holder has
// the lock.
func (r Root) TryLock(path string) (unlock func(), ok bool, err error) {
	f, err := r.openLockFile(path)
	if err != nil {
		return nil, false, err
	}
	return tryLockFile(f, path)
}

// SweepTemps removes from dir, beneath r, the temp files of killed
// writers, as the package's SweepTemps does.
func (r Root) SweepTemps(dir string, olderThan time.Duration, now time.Time) int {
	var d *DirBeneath
	var err error
	if r.Dir == "" {
		var fd int
		if fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			d = &DirBeneath{fd: fd, path: dir}
		}
	} else {
		rel, rerr := filepath.Rel(r.Dir, dir)
		if rerr != nil || strings.HasPrefix(rel, "..") {
			return 0
		}
		d, err = r.OpenDir(rel, false, 0)
	}
	if err != nil {
		return 0
	}
	defer d.Close()
	names, err := d.names()
	if err != nil {
		return 0
	}
	n := 0
	for _, name := range names {
		if !IsTempName(name) {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || modeOf(uint32(st.Mode))&fs.ModeType != 0 {
			continue // gone, or not a regular file
		}
		if now.Sub(time.Unix(st.Mtim.Unix())) < olderThan {
			continue
		}
		if unix.Unlinkat(d.fd, name, 0) == nil {
			n++
		}
	}
	return n
}
