package brief

import (
	"fmt"
	"io"
	"os"
)

// defaultSpoolMemory is how much of a diff a spool keeps in memory before
// it moves to a temporary file: most pull requests fit, so most briefs
// never touch the disk.
const defaultSpoolMemory = 8 << 20

// Spool holds a streamed diff for random access: in memory up to a limit,
// then in a temporary file that is unlinked as soon as it is created, so
// it cannot outlive the process even if baton is killed. A Spool is written
// once, then read; it is not safe for concurrent use.
type Spool struct {
	// mem holds the contents in fixed-size chunks, so growing never
	// copies and never holds more than limit plus one chunk.
	mem   [][]byte
	limit int
	dir   string
	f     *os.File
	// leftover is the temporary file's name when it could not be unlinked
	// while open; Close removes it.
	leftover string
	size     int64
}

// newSpool returns a spool that keeps up to memLimit bytes in memory and
// puts larger contents in a temporary file in dir (os.TempDir() when
// empty).
func newSpool(memLimit int, dir string) *Spool {
	return &Spool{limit: memLimit, dir: dir}
}

// spoolChunk is the size of one chunk of a spool's memory.
const spoolChunk = 256 << 10

// Write appends p.
func (s *Spool) Write(p []byte) (int, error) {
	if s.f == nil && s.size+int64(len(p)) <= int64(s.limit) {
		n := len(p)
		for len(p) > 0 {
			if len(s.mem) == 0 || len(s.mem[len(s.mem)-1]) == spoolChunk {
				s.mem = append(s.mem, make([]byte, 0, spoolChunk))
			}
			last := &s.mem[len(s.mem)-1]
			k := min(len(p), spoolChunk-len(*last))
			*last = append(*last, p[:k]...)
			p = p[k:]
		}
		s.size += int64(n)
		return n, nil
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
	for _, c := range s.mem {
		if _, err := f.Write(c); err != nil {
			f.Close()
			return fmt.Errorf("write diff spool: %w", err)
		}
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
	n := 0
	for n < len(p) && off < s.size {
		c := s.mem[off/spoolChunk]
		k := copy(p[n:], c[off%spoolChunk:])
		n += k
		off += int64(k)
	}
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
