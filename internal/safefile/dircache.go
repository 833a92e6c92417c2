package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A short process (a hook) opens a handful of files in the same few
// directories of a store; without a cache each open resolves the root
// and the whole way down again. The cache keeps each directory it opened
// beneath the root, and every lookup after starts from the nearest one:
// still resolved with no link followed, beneath a descriptor that was
// itself opened with no link followed. A directory swapped for a link
// after it was cached is not followed either: the descriptor still names
// the directory it opened, wherever that now is. Only one who could
// write where a directory was moved can move it there, so a cached
// descriptor never reaches a place its mover could not write anyway; a
// long-lived process still resolves every path afresh (the zero cache),
// so no directory outlives the process that opened it by more than one
// short call.

// dirCache holds the directories opened beneath one root: "" is the
// root itself, and every other key is a cleaned slash path below it.
type dirCache struct{ fds *dirFDs }

// dirFDs is the cache's table, apart from it so that the cleanup that
// closes the descriptors does not keep the cache reachable.
type dirFDs struct {
	mu sync.Mutex
	m  map[string]int
}

// WithDirCache returns r keeping open, until it is no longer used, every
// directory it opens beneath r.Dir, and resolving each later path from
// the nearest of them. It is for one short process: the store a hook
// opens. The zero Root is returned as it is.
func (r Root) WithDirCache() Root {
	if r.Dir == "" {
		return r
	}
	c := &dirCache{fds: &dirFDs{m: map[string]int{}}}
	runtime.AddCleanup(c, func(t *dirFDs) { t.closeAll() }, c.fds)
	r.dirs = c
	return r
}

func (t *dirFDs) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, fd := range t.m {
		unix.Close(fd)
		delete(t.m, k)
	}
}

// dir returns the descriptor of the directory rel beneath root (cleaned,
// slash-separated; "" for root), opening it from the nearest cached
// directory above it (making the missing ones with perm when mkdir is
// set) and caching it. The descriptor stays the cache's: never close it.
func (c *dirCache) dir(root, rel string, mkdir bool, perm uint32) (int, error) {
	t := c.fds
	t.mu.Lock()
	defer t.mu.Unlock()
	if fd, ok := t.m[rel]; ok {
		return fd, nil
	}
	// The nearest cached directory above rel, the root at worst.
	base, below := "", rel
	for i := strings.LastIndexByte(rel, '/'); i > 0; i = strings.LastIndexByte(rel[:i], '/') {
		if _, ok := t.m[rel[:i]]; ok {
			base, below = rel[:i], rel[i+1:]
			break
		}
	}
	bfd, ok := t.m[base]
	if !ok {
		fd, err := openRoot(root)
		if err != nil {
			return -1, err
		}
		t.m[""] = fd
		bfd = fd
	}
	if below == "" {
		return bfd, nil
	}
	fd, err := openDirAt(bfd, strings.Split(below, "/"), mkdir, perm)
	if err != nil {
		return -1, err
	}
	t.m[rel] = fd
	return fd, nil
}

// cacheKey cleans rel into the cache's key for it.
func cacheKey(rel string) (string, error) {
	parts, err := splitBeneath(rel)
	if err != nil {
		return "", err
	}
	return strings.Join(parts, "/"), nil
}

// openDirAt opens the directory of parts beneath dirfd, making the
// missing ones with perm when mkdir is set, following no link on the
// way: a link or a file where a directory should be is ErrNotBeneath.
// The descriptor returned is a new one, never dirfd.
func openDirAt(dirfd int, parts []string, mkdir bool, perm uint32) (int, error) {
	if len(parts) > 0 && !walkOnly.Load() {
		// One call where the kernel resolves the whole way down. A
		// directory to make, when that fails, is walked to: the walk
		// makes what is missing and says what is in the way.
		fd, ok, err := openat2(dirfd, strings.Join(parts, "/"), unix.O_RDONLY|unix.O_DIRECTORY|beneathFlags, 0)
		if ok && (err == nil || !mkdir) {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				err = ErrNotBeneath // a link or a file anywhere on a directory's path
			}
			return fd, err
		}
	}
	fd := dirfd
	for _, p := range parts {
		next, err := unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|beneathFlags, 0)
		if errors.Is(err, unix.ENOENT) && mkdir {
			if err = unix.Mkdirat(fd, p, perm); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, p, unix.O_RDONLY|unix.O_DIRECTORY|beneathFlags, 0)
			}
		}
		if fd != dirfd {
			unix.Close(fd)
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			err = ErrNotBeneath
		}
		if err != nil {
			return -1, err
		}
		fd = next
	}
	if fd == dirfd {
		return unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	return fd, nil
}

// OpenDir opens the directory rel beneath r.Dir as OpenDirBeneath does;
// with a cache (WithDirCache) from the nearest directory already open,
// and the directory it returns is the cache's: closing it is harmless.
func (r Root) OpenDir(rel string, mkdir bool, perm os.FileMode) (*DirBeneath, error) {
	if r.dirs == nil {
		return OpenDirBeneath(r.Dir, rel, mkdir, perm)
	}
	key, err := cacheKey(rel)
	if err != nil {
		return nil, beneathError("open", r.Dir, rel, err)
	}
	fd, err := r.dirs.dir(r.Dir, key, mkdir, uint32(perm.Perm()))
	if err != nil {
		return nil, beneathError("open", r.Dir, rel, err)
	}
	return &DirBeneath{fd: fd, path: filepath.Join(r.Dir, filepath.FromSlash(key)), shared: true}, nil
}
