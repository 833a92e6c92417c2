package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A walk of a system directory costs a process a second or more of a
// large /usr's lstat calls, and every `baton delivery run` as root used
// to make its own. The walks root's baton processes make are therefore
// kept for one another in walkDir, each standing for what is left of its
// publicTTL: the same ten minutes a walk stands in one process. Only
// root can write there, and only files root alone may write are read.

// walkDir holds the kept walks: under /run, which only root may write,
// and which a reboot empties where it is a tmpfs.
const walkDir = "/run/baton/walks"

// maxWalkFile bounds a kept walk's file: a larger one is neither written
// nor read (its root is walked again).
const maxWalkFile = 32 << 20

// walkMagic opens a kept walk's file: its format and version.
const walkMagic = "baton system walk 1"

// encodeWalk is a kept walk's file: the magic, the root, the walk's
// start in Unix nanoseconds and the hidden paths, each followed by a NUL
// (no path holds one).
func encodeWalk(root string, at time.Time, hidden []string) []byte {
	var b bytes.Buffer
	for _, s := range append([]string{walkMagic, root, strconv.FormatInt(at.UnixNano(), 10)}, hidden...) {
		b.WriteString(s)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// decodeWalk reads a kept walk of root from b; ok is false unless b is
// one, whole, of root, and every path in it lies within root, absolute
// and clean, as a walk of root finds them.
func decodeWalk(b []byte, root string) (at time.Time, hidden []string, ok bool) {
	if len(b) == 0 || b[len(b)-1] != 0 {
		return time.Time{}, nil, false
	}
	fields := strings.Split(string(b[:len(b)-1]), "\x00")
	if len(fields) < 3 || fields[0] != walkMagic || fields[1] != root {
		return time.Time{}, nil, false
	}
	ns, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil || ns <= 0 {
		return time.Time{}, nil, false
	}
	hidden = fields[3:]
	for _, p := range hidden {
		if p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p || !within(p, root) {
			return time.Time{}, nil, false
		}
	}
	if len(hidden) == 0 {
		hidden = nil
	}
	return time.Unix(0, ns), hidden, true
}

// walkFile is where root's kept walk lies.
func walkFile(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(walkDir, hex.EncodeToString(sum[:16]))
}

// keptWalk returns the walk of root another of root's processes kept,
// when one begun within maxAge is there and sound.
func keptWalk(root string, maxAge time.Duration) (*publicWalk, bool) {
	if os.Geteuid() != 0 || maxAge <= 0 || !rootsOwn(walkDir, true) {
		return nil, false
	}
	// No link followed, no FIFO waited on.
	f, err := os.OpenFile(walkFile(root), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxWalkFile || !ownedByRootAlone(fi) {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxWalkFile+1))
	if err != nil || len(b) > maxWalkFile {
		return nil, false
	}
	at, hidden, ok := decodeWalk(b, root)
	if age := time.Since(at); !ok || age < -time.Minute || age > maxAge {
		return nil, false // stale, or from a clock far ahead of this one
	}
	return &publicWalk{hidden: hidden, at: at}, true
}

// keepWalk leaves w, a walk of root, for root's other processes, and
// drops the kept walks past their age. Failing, it leaves nothing: each
// process walks for itself, as it would without.
func keepWalk(root string, w *publicWalk) {
	if os.Geteuid() != 0 {
		return
	}
	b := encodeWalk(root, w.at, w.hidden)
	if len(b) > maxWalkFile {
		return
	}
	if err := os.MkdirAll(walkDir, 0o700); err != nil || !rootsOwn(walkDir, true) {
		return
	}
	tmp, err := os.CreateTemp(walkDir, ".tmp-")
	if err != nil {
		return
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), walkFile(root))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	pruneWalks(time.Now())
}

// pruneWalks removes the kept walks (and temporary files a crash left)
// older than a walk stands.
func pruneWalks(now time.Time) {
	d, err := os.Open(walkDir)
	if err != nil {
		return
	}
	defer d.Close()
	names, _ := d.Readdirnames(1024)
	for _, n := range names {
		if fi, err := os.Lstat(filepath.Join(walkDir, n)); err == nil && now.Sub(fi.ModTime()) > publicTTL {
			_ = os.Remove(filepath.Join(walkDir, n))
		}
	}
}

// rootsOwn reports whether path is root's and no one else may write it
// (with its parent, when parent is set): a directory of kept walks
// another user could plant in is not read.
func rootsOwn(path string, parent bool) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() || !ownedByRootAlone(fi) {
		return false
	}
	return !parent || rootsOwn(filepath.Dir(path), false)
}

// ownedByRootAlone reports whether fi is root's and writable by root alone.
func ownedByRootAlone(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == 0 && fi.Mode().Perm()&0o022 == 0
}
