package fsstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/safefile"
)

// Bounds on what the store reads. A checkout can hold anything in
// .agent/context; these keep every read, and so every hook, short.
const (
	// MaxArtifactBytes bounds a packet or loop file: larger ones are
	// skipped with a warning naming them.
	MaxArtifactBytes = 4 << 20
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
	for _, p := range parts {
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
	}
	return nil
}

// readFile reads a store file: a regular file (not a symlink) of at most
// max bytes. A file that is not one is Invalid and named.
func readFile(path string, max int64) ([]byte, error) {
	b, err := safefile.ReadFile(path, max)
	return b, refused(path, err)
}

// refused turns a refusal of a file (a link, a FIFO, a device, too large)
// into an Invalid error naming it; other errors pass through.
func refused(path string, err error) error {
	if errors.Is(err, safefile.ErrNotRegular) || errors.Is(err, safefile.ErrTooLarge) {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return corrupt(path, err)
	}
	return err
}

// sweep removes the temp files killed writers left in the store's
// subdirectory sub.
func (s *Store) sweep(sub string) {
	safefile.SweepTemps(s.path(sub), staleTemp, time.Now())
}
