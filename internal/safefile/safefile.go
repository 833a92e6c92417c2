// Package safefile holds the file primitives every part of baton reads
// and writes through: atomic replacement, advisory locks, JSONL logs that
// many processes append to at once, and bounded reads that refuse what a
// hostile checkout could put in their place (a symlink out of the
// project, a FIFO that blocks open(2), a device that never ends).
package safefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNotRegular is the cause when a path is a symlink, a directory, a
// FIFO, a device or a socket where a regular file was expected.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is the cause when a file is larger than its reader accepts.
var ErrTooLarge = errors.New("file too large")

// OpenRegular opens path for reading, refusing (with ErrNotRegular) a
// symlink, a FIFO, a device or anything else that is not a regular file.
// It never blocks: a FIFO is opened non-blocking, seen, and closed. The
// returned file reads in blocking mode.
func OpenRegular(path string) (*os.File, error) { return Root{}.OpenRegular(path) }

// OpenRegularFollow is OpenRegular for a path someone else named (a
// harness's transcript): a symlink is followed, but what it leads to must
// be a regular file, and opening it never blocks.
func OpenRegularFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	// Reads of a regular file never block; clear O_NONBLOCK anyway so the
	// file behaves as any other for its reader.
	_ = unix.SetNonblock(int(f.Fd()), false)
	return f, nil
}

// kind names a file mode's type for messages.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a regular file"
}

// ReadFile reads the regular file at path (not through a symlink) of at
// most max bytes. A larger file is refused with ErrTooLarge before it is
// read; a file that grows while read is cut off at max+1 and refused.
func ReadFile(path string, max int64) ([]byte, error) {
	b, _, err := ReadFileInfo(path, max)
	return b, err
}

// ReadFileInfo is ReadFile that also returns what fstat said of the file
// it read, so a caller can record the size and time of exactly the
// content it got.
func ReadFileInfo(path string, max int64) ([]byte, fs.FileInfo, error) {
	return Root{}.ReadFileInfo(path, max)
}

// ReadFileFollow is ReadFile for a file the user may keep as a link (a
// harness's settings in a dotfiles repository): a symlink is followed,
// but what it leads to must be a regular file, and opening it never
// blocks.
func ReadFileFollow(path string, max int64) ([]byte, error) {
	f, err := OpenRegularFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, _, err := readAllOf(f, path, max)
	return b, err
}

// readAllOf reads f, opened from path, whole: at most max bytes.
func readAllOf(f *os.File, path string, max int64) ([]byte, fs.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() > max {
		return nil, nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, fi.Size(), max)}
	}
	// One buffer of the size fstat gave, plus a byte to see growth: a
	// large file is not copied again each time a growing buffer doubles.
	b := make([]byte, 0, fi.Size()+1)
	for int64(len(b)) <= max {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // the file grew while read
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, err
		}
	}
	if int64(len(b)) > max {
		return nil, nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: over %d bytes", ErrTooLarge, max)}
	}
	return b, fi, nil
}

// TempMarker is in the name of every temp file WriteAtomic makes:
// ".<name>.tmp-<random>". A store's .gitignore ignores them, and
// SweepTemps removes the ones a killed writer left behind.
const TempMarker = ".tmp-"

// WriteAtomic replaces path with data so that a reader, or a crash, sees
// the old file or the new one, never a torn mix: it writes a temp file in
// the same directory, fsyncs it and renames it over path. A symlink at
// path is replaced, not followed.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	return Root{}.WriteAtomic(path, data, perm)
}

// WriteCache is WriteAtomic without the fsync, for a file that is a
// cache of others and is rebuilt when it is damaged (the store's
// indexes): readers still see the old file or the new one, never a torn
// mix, but after a crash the new one may be empty or missing, which its
// reader must detect. An fsync costs a hook more than the rest of its
// index update.
func WriteCache(path string, data []byte, perm os.FileMode) error {
	return Root{}.WriteCache(path, data, perm)
}

// WriteCacheFunc is WriteCache with the content written by write, into
// the temp file, so that parts of another file can be copied in by the
// kernel rather than through memory.
func WriteCacheFunc(path string, perm os.FileMode, write func(*os.File) error) error {
	return Root{}.WriteCacheFunc(path, perm, write)
}

func writeAll(data []byte) func(*os.File) error {
	return func(f *os.File) error {
		_, err := f.Write(data)
		return err
	}
}

// CreateExclusive creates path with data atomically, failing with
// fs.ErrExist when path exists (a symlink included): the content goes to
// a temp file first, fsynced, and is hard-linked into place, and the
// directory is fsynced after the link: once it returns, a crash of the
// machine leaves the file (a link reaches the disk otherwise only with the
// file system's next commit; ext4: within five seconds).
func CreateExclusive(path string, data []byte, perm os.FileMode) error {
	return Root{}.CreateExclusive(path, data, perm)
}

func writeSyncClose(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// SweepTemps removes, from dir, the temp files of atomic writes whose
// writer died: regular files named as WriteAtomic names them (or as
// earlier versions of baton did) and not modified for olderThan. It
// reports how many it removed; errors are ignored, since a sweep is a
// courtesy and the next one will try again.
func SweepTemps(dir string, olderThan time.Duration, now time.Time) int {
	return Root{}.SweepTemps(dir, olderThan, now)
}

// IsTempName reports whether a file name is an atomic write's temp file:
// ".<name>.tmp-<random>", or the ".<name>.tmp<digits>" and
// ".<name>.md<digits>" of earlier versions.
func IsTempName(name string) bool {
	if !strings.HasPrefix(name, ".") {
		return false
	}
	if strings.Contains(name, TempMarker) {
		return true
	}
	for _, suffix := range []string{".tmp", ".md", ".json"} {
		if i := strings.LastIndex(name, suffix); i > 0 && isDigits(name[i+len(suffix):]) {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Lock takes an exclusive advisory lock on path+".lock" and returns the
// function that releases it. Waiters queue in the kernel (flock), so
// under contention each gets the lock as soon as it is free, in no
// worse than the kernel's order, instead of sleeping and retrying. The
// kernel drops the lock if the process dies, so a crashed writer never
// wedges anything. It gives up when ctx ends. The lock file is never
// opened through a symlink.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	return Root{}.Lock(ctx, path)
}

// lockFile takes the flock of f, path's lock file, as Lock says.
func lockFile(ctx context.Context, f *os.File, path string) (unlock func(), err error) {
	fd := int(f.Fd())
	release := func() {
		_ = unix.Flock(fd, unix.LOCK_UN)
		f.Close()
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err == nil {
		return release, nil
	} else if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	got := make(chan error, 1)
	go func() {
		for {
			err := unix.Flock(fd, unix.LOCK_EX)
			if !errors.Is(err, unix.EINTR) {
				got <- err
				return
			}
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		return release, nil
	case <-ctx.Done():
		// The waiting flock cannot be interrupted: let it finish in the
		// background and give the lock straight back.
		go func() {
			if <-got == nil {
				_ = unix.Flock(fd, unix.LOCK_UN)
			}
			f.Close()
		}()
		return nil, fmt.Errorf("lock %s: %w", path, context.Cause(ctx))
	}
}

// TryLock is Lock without waiting: ok is false when another holder has
// the lock.
func TryLock(path string) (unlock func(), ok bool, err error) {
	return Root{}.TryLock(path)
}

// tryLockFile is lockFile without waiting.
func tryLockFile(f *os.File, path string) (unlock func(), ok bool, err error) {
	fd := int(f.Fd())
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, false, nil
	} else if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = unix.Flock(fd, unix.LOCK_UN)
		f.Close()
	}, true, nil
}
