package gitx

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// maxLooseObject bounds the size an object's header may declare: a
// larger one is refused rather than streamed.
const maxLooseObject = 1 << 40

// pack object types (git's object type numbers).
var packTypes = map[string]byte{"commit": 1, "tree": 2, "blob": 3, "tag": 4}

// SendLoose gives dst the loose objects of the object directory dir,
// through dst's git unpack-objects --strict, as a push's receiving end
// takes them: only well-formed objects, each named by its content, and
// only when everything they refer to is in dst or among them. The pack is
// made here, from the files, where SendObjects starts git pack-objects.
// dir may be a confined git's (hostile): each object is read through
// zlib, bounded by the size its header declares, and one that is not
// exactly that size ends the send. dst gets nothing when dir holds no
// object. ErrNotLoose means dir holds more than loose objects (a pack):
// use SendObjects.
func SendLoose(ctx context.Context, dst *Repo, dir string) error {
	names, err := looseObjects(dir)
	if err != nil || len(names) == 0 {
		return err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	written := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(pw, 64<<10)
		err := writePack(ctx, bw, dir, names)
		if err == nil {
			err = bw.Flush()
		}
		pw.Close() // a pack cut short fails the unpack
		written <- err
	}()
	_, unpackErr := dst.runReader(ctx, pr, "unpack-objects", "-q", "--strict")
	pr.Close()
	cancel()
	if err := <-written; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("pack the objects of %s: %w", dir, err)
	}
	return unpackErr
}

// looseObjects lists the loose objects of an object directory, by name.
// Temporary files git left are not objects; anything but the fan-out
// directories and an empty pack or info directory is ErrNotLoose.
func looseObjects(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		switch n := e.Name(); {
		case !e.IsDir():
			return nil, ErrNotLoose
		case n == "pack" || n == "info":
			if sub, err := os.ReadDir(filepath.Join(dir, n)); err != nil || len(sub) > 0 {
				return nil, ErrNotLoose
			}
		case len(n) == 2 && isHex(n):
			files, err := os.ReadDir(filepath.Join(dir, n))
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				if name := n + f.Name(); IsObjectName(name) && f.Type().IsRegular() {
					names = append(names, name)
				}
			}
		default:
			return nil, ErrNotLoose
		}
	}
	if len(names) > 0 && len(names[0]) != len(names[len(names)-1]) {
		return nil, ErrNotLoose // two hash functions in one directory
	}
	return names, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// deflaters keeps zlib writers between sends: making one allocates the
// compressor's tables, which cost more than a small commit's objects.
var deflaters = sync.Pool{New: func() any {
	zw, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed)
	return zw
}}

// writePack writes a version 2 pack of the loose objects names of dir to
// w: the header, each object whole (no deltas), and the checksum of all
// before it, with the hash function the names are made with.
func writePack(ctx context.Context, w io.Writer, dir string, names []string) error {
	var h hash.Hash = sha1.New()
	if len(names[0]) == 64 {
		h = sha256.New()
	}
	mw := io.MultiWriter(w, h)
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(names)))
	if _, err := mw.Write(hdr[:]); err != nil {
		return err
	}
	zw := deflaters.Get().(*zlib.Writer)
	defer deflaters.Put(zw)
	zr := io.ReadCloser(nil)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(dir, name[:2], name[2:]), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return err
		}
		err = packEntry(ctx, mw, f, zw, &zr)
		f.Close()
		if err != nil {
			return fmt.Errorf("object %s: %w", name, err)
		}
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// packEntry copies one loose object from f into the pack as a whole
// object: its type and size, then its content deflated again. zw and zr
// are reused between objects.
func packEntry(ctx context.Context, w io.Writer, f *os.File, zw *zlib.Writer, zr *io.ReadCloser) error {
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	br := bufio.NewReaderSize(f, 32<<10)
	var err error
	if *zr == nil {
		*zr, err = zlib.NewReader(br)
	} else {
		err = (*zr).(zlib.Resetter).Reset(br, nil)
	}
	if err != nil {
		return err
	}
	in := bufio.NewReaderSize(*zr, 32<<10)
	head, err := in.Peek(32) // "commit <size>\0" and then some
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	typ, size, n, ok := parseLooseHeader(head)
	if !ok {
		return errors.New("not a loose object")
	}
	in.Discard(n)
	var eh [16]byte
	if _, err := w.Write(eh[:packEntryHeader(eh[:], typ, size)]); err != nil {
		return err
	}
	zw.Reset(w)
	if got, err := io.CopyN(zw, ctxReader{ctx, in}, size); err != nil {
		return fmt.Errorf("%d of the %d bytes its header says: %w", got, size, err)
	}
	if _, err := in.ReadByte(); !errors.Is(err, io.EOF) {
		return errors.New("more content than its header says")
	}
	return zw.Close()
}

// parseLooseHeader parses the start of an inflated loose object, "<type>
// <size>\0": its pack type number, its size, and the header's length.
// Only git's own form is accepted: a known type, the size in decimal
// without leading zeros.
func parseLooseHeader(b []byte) (typ byte, size int64, n int, ok bool) {
	end := bytes.IndexByte(b, 0)
	if end < 0 {
		return 0, 0, 0, false
	}
	name, num, found := bytes.Cut(b[:end], []byte{' '})
	typ, known := packTypes[string(name)]
	if !found || !known || len(num) == 0 || len(num) > 1 && num[0] == '0' {
		return 0, 0, 0, false
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, 0, 0, false
		}
	}
	size, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || size > maxLooseObject {
		return 0, 0, 0, false
	}
	return typ, size, end + 1, true
}

// packEntryHeader writes a pack entry's type and size into b (16 bytes
// hold any) and returns its length: the type and the size's low four bits
// in the first byte, seven more bits in each next, the high bit saying
// another follows.
func packEntryHeader(b []byte, typ byte, size int64) int {
	c := typ<<4 | byte(size&0x0f)
	size >>= 4
	n := 0
	for size > 0 {
		b[n] = c | 0x80
		n++
		c = byte(size & 0x7f)
		size >>= 7
	}
	b[n] = c
	return n + 1
}

// ctxReader ends a read when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
