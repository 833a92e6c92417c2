package fsstore

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// Bounds on what the store reads. A checkout can hold anything in
// .agent/context; these keep every read, and so every hook, short.
const (
	// MaxArtifactBytes bounds a packet or loop file: baton refuses to
	// write a larger one, and skips one it finds with a warning naming it.
	MaxArtifactBytes = 4 << 20
	// RecentLogBytes is how much of the end of the relevant-files log
	// hooks and handoffs read (about 9,000 touches): the files touched
	// since the last packet are the newest entries, and a hook must not
	// slow down as the log grows.
	RecentLogBytes = 1 << 20
	// maxSmallFile bounds root.json and the foreground pointer.
	maxSmallFile = 64 << 10
	// staleTemp is how old a temp file must be before a write sweeps it:
	// older than any write in progress.
	staleTemp = time.Minute
)

// checkDirs refuses a store whose directories are not real directories
// below the root: .agent, .agent/context and the subdirectory sub (when
// given) must each be a directory or absent, never a symlink, so nothing
// the store reads or writes can be outside it. A checkout can carry such
// links; baton never follows them.
func (s *Store) checkDirs(sub string) error {
	parts := []string{filepath.Join(s.root, ".agent"), s.dir}
	if sub != "" {
		parts = append(parts, s.path(sub))
	}
	if sub == IndexesDir {
		parts = append(parts, s.machineDir())
	}
	for _, p := range parts {
		if _, ok := s.realDirs.Load(p); ok {
			continue
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // nothing below it exists either
		} else if err != nil {
			return fmt.Errorf("check %s: %w", p, err)
		}
		if !fi.IsDir() {
			what := "not a directory"
			if fi.Mode()&fs.ModeSymlink != 0 {
				what = "a symlink"
			}
			return baton.Errorf(baton.Invalid, "%s is %s: baton keeps its store in real directories and never follows links out of it; remove it (`baton init` recreates the store)", p, what)
		}
		if s.oneShot {
			s.realDirs.Store(p, struct{}{})
		}
	}
	return nil
}

// readDir lists the store's subdirectory sub, opened beneath the root
// as every store file is: no link on the way is followed, and a named
// pipe in a directory's place is refused, never waited on. A directory
// checkDirs found real can have been swapped since.
func (s *Store) readDir(sub string) ([]fs.DirEntry, error) {
	d, err := s.files.OpenDir(filepath.Join(Dir, sub), false, 0)
	if err != nil {
		return nil, refused(s.path(sub), err)
	}
	defer d.Close()
	return d.ReadDir()
}

// readFile reads a store file: a regular file (not a symlink) of at most
// max bytes. A file that is not one is Invalid and named.
func (s *Store) readFile(path string, max int64) ([]byte, error) {
	b, err := s.files.ReadFile(path, max)
	return b, refusedMax(path, max, err)
}

// RefusedError is a store file baton will not read or write: what it is,
// and what to do.
type RefusedError struct {
	Path string
	What string // "a symlink", "6.0 MiB, over the 4.0 MiB limit"
	Hint string
	Err  error
}

func (e *RefusedError) Error() string { return e.Path + " is " + e.What + ": " + e.Hint }
func (e *RefusedError) Unwrap() error { return e.Err }

// refused turns a refusal of a file (a link, a FIFO, a device) into an
// Invalid error naming it; other errors pass through.
func refused(path string, err error) error { return refusedMax(path, 0, err) }

// refusedMax is refused for a read limited to max bytes.
func refusedMax(path string, max int64, err error) error {
	var r *RefusedError
	switch {
	case errors.Is(err, safefile.ErrNotRegular):
		r = &RefusedError{Path: path, What: "not a regular file", Err: err,
			Hint: "baton keeps only regular files in its store and follows no links out of it; remove it"}
		if fi, lerr := os.Lstat(path); lerr == nil {
			r.What = describeMode(fi.Mode())
		}
	case errors.Is(err, safefile.ErrNotBeneath):
		r = &RefusedError{Path: path, What: "reached through a link", Err: err,
			Hint: "baton keeps its store in real directories and follows no links out of it; remove the link"}
	case errors.Is(err, safefile.ErrTooLarge):
		r = &RefusedError{Path: path, What: "over the size limit", Err: err, Hint: "skipped"}
		if fi, lerr := os.Lstat(path); lerr == nil && max > 0 {
			r.What = fmt.Sprintf("%s, over the %s limit", mib(fi.Size()), mib(max))
		}
	default:
		return err
	}
	return &baton.Error{Code: baton.Invalid, Err: r}
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file"
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// A sweep reads the whole directory: in a directory larger than
// sweepAlways bytes (two blocks, about a hundred files: every stop of a
// loop would otherwise list all the loops) one write in sweepOdds
// sweeps. Temp files are left only by writers that were killed, and git
// and readers ignore them: they can wait.
const (
	sweepAlways = 8 << 10
	sweepOdds   = 32
)

// sweep removes the temp files killed writers left in the store's
// subdirectory sub: at every write in a small directory, now and then in
// a large one.
func (s *Store) sweep(sub string) {
	fi, err := os.Lstat(s.path(sub))
	if err != nil || (fi.Size() > sweepAlways && rand.IntN(sweepOdds) != 0) {
		return
	}
	s.files.SweepTemps(s.path(sub), staleTemp, time.Now())
}
