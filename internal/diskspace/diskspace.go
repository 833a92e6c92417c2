// Package diskspace keeps baton working when a disk fills up. An agent
// (or a verify command, or anything else on the machine) can fill the disk
// that holds baton's data directory; baton must then still record why the
// phase failed, and carry on by itself once there is room again. Free says
// how much room is left; a Reserve is room baton sets aside while there is
// plenty and gives up when there is none, so its own last writes succeed.
package diskspace

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Free returns the bytes an unprivileged process can still write on the
// file system holding path.
func Free(path string) (int64, error) { return free(path) }

// Reserve is a file of Size bytes kept at Path while the disk has room
// for it, released when the disk is full.
type Reserve struct {
	Path string
	Size int64

	mu sync.Mutex
}

// Hold makes sure the reserve file exists with its full size, when the
// disk has room for it and keep bytes more; it reports whether it is held.
func (r *Reserve) Hold(keep int64) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fi, err := os.Lstat(r.Path); err == nil && fi.Mode().IsRegular() && fi.Size() >= r.Size {
		return true, nil
	}
	n, err := Free(filepath.Dir(r.Path))
	if err != nil {
		return false, err
	}
	if n < r.Size+keep {
		return false, nil
	}
	f, err := os.OpenFile(r.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return false, err
	}
	err = allocate(f, r.Size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(r.Path)
		return false, fmt.Errorf("set aside %d bytes in %s: %w", r.Size, r.Path, err)
	}
	return true, nil
}

// Release deletes the reserve file; it reports whether there was one to
// free.
func (r *Reserve) Release() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return os.Remove(r.Path) == nil
}

// writeZeros writes size zero bytes to f and syncs them to disk.
func writeZeros(f *os.File, size int64) error {
	buf := make([]byte, 1<<20)
	for size > 0 {
		n := min(size, int64(len(buf)))
		if _, err := f.Write(buf[:n]); err != nil {
			return err
		}
		size -= n
	}
	return f.Sync()
}
