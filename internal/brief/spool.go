package brief

import (
	"fmt"
	"io"
	"os"
)

// DefaultSpoolMemory is how much of a diff a spool keeps in memory before
// it moves to a temporary file: most pull requests fit, so most briefs
// never touch the disk.
const DefaultSpoolMemory = 8 << 20

// Spool holds a streamed diff for random access: in memory up to a limit,
// then in a temporary file that is unlinked as soon as it is created, so
// it cannot outlive the process even if baton is killed. A Spool is written
// once, then read; it is not safe for concurrent use.
type Spool struct {
	mem   []byte
	limit int
	dir   string
	f     *os.File
	// leftover is the temporary file's name when it could not be unlinked
	// while open; Close removes it.
	leftover string
	size     int64
}

// NewSpool returns a spool that keeps up to memLimit bytes in memory and
// puts larger contents in a temporary file in dir (os.TempDir() when
// empty).
func NewSpool(memLimit int, dir string) *Spool {
	return &Spool{limit: memLimit, dir: dir}
}

// Write appends p.
func (s *Spool) Write(p []byte) (int, error) {
	if s.f == nil && len(s.mem)+len(p) <= s.limit {
		s.mem = append(s.mem, p...)
		s.size += int64(len(p))
		return len(p), nil
	}
	if s.f == nil {
		if err := s.spill(); err != nil {
			return 0, err
		}
	}
	n, err := s.f.Write(p)
	s.size += int64(n)
	if err != nil {
		return n, fmt.Errorf("write diff spool: %w", err)
	}
	return n, nil
}

// spill moves the contents to a temporary file.
func (s *Spool) spill() error {
	f, err := os.CreateTemp(s.dir, "baton-diff-*")
	if err != nil {
		return fmt.Errorf("create diff spool: %w", err)
	}
	// Unlink at once: the open descriptor keeps the data; nothing is
	// left behind however the process ends. (Windows refuses; Close
	// removes it there.)
	if os.Remove(f.Name()) != nil {
		s.leftover = f.Name()
	}
	if _, err := f.Write(s.mem); err != nil {
		f.Close()
		return fmt.Errorf("write diff spool: %w", err)
	}
	s.f, s.mem = f, nil
	return nil
}

// Size returns the number of bytes written.
func (s *Spool) Size() int64 { return s.size }

// OnDisk reports whether the contents moved to a temporary file.
func (s *Spool) OnDisk() bool { return s.f != nil }

// ReadAt reads len(p) bytes at off (io.ReaderAt).
func (s *Spool) ReadAt(p []byte, off int64) (int, error) {
	if s.f != nil {
		return s.f.ReadAt(p, off)
	}
	if off < 0 {
		return 0, fmt.Errorf("read diff spool: negative offset %d", off)
	}
	if off >= int64(len(s.mem)) {
		return 0, io.EOF
	}
	n := copy(p, s.mem[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Close releases the memory or the temporary file.
func (s *Spool) Close() error {
	s.mem = nil
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	if s.leftover != "" {
		os.Remove(s.leftover)
	}
	s.f = nil
	return err
}
