package fsstore

import (
	"encoding/binary"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// countNames counts the artifact names in dir, whatever their type. It
// reads the directory's entries in large blocks and checks each name where
// it lies, allocating nothing per name: a reader counts 10,000 packets
// whenever a write was too recent to trust the directory's time alone.
func countNames(dir string) (int, error) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer syscall.Close(fd)
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	n := 0
	for {
		k, err := syscall.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &os.PathError{Op: "readdirent", Path: dir, Err: err}
		}
		if k <= 0 {
			return n, nil
		}
		for b := buf[:k]; len(b) > 0; {
			// struct linux_dirent64: ino, off, reclen, type, name (NUL-terminated).
			const nameAt = 19
			if len(b) < nameAt {
				return 0, &os.PathError{Op: "readdirent", Path: dir, Err: syscall.EIO}
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			if reclen < nameAt || reclen > len(b) {
				return 0, &os.PathError{Op: "readdirent", Path: dir, Err: syscall.EIO}
			}
			name := b[nameAt:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			// The string is only looked at, never kept.
			if _, ok := artifactID(unsafe.String(unsafe.SliceData(name), len(name))); ok {
				n++
			}
			b = b[reclen:]
		}
	}
}

// direntBufs are the blocks countNames reads entries into: 10,000 packet
// names fit in two.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}
