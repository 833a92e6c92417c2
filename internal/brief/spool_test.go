package brief

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"
)

// A spool reads back what was written, in memory and after spilling to a
// temporary file, which it leaves nowhere on disk.
func TestSpool(t *testing.T) {
	t.Parallel()
	data := make([]byte, 3*spoolChunk+123)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rnd.IntN(256))
	}
	for _, limit := range []int{len(data), spoolChunk + 7, 0} {
		dir := t.TempDir()
		s := newSpool(limit, dir)
		for p := data; len(p) > 0; {
			k := min(len(p), 1+rnd.IntN(100_000))
			if _, err := s.Write(p[:k]); err != nil {
				t.Fatal(err)
			}
			p = p[k:]
		}
		if s.Size() != int64(len(data)) || s.OnDisk() != (limit < len(data)) {
			t.Errorf("limit %d: size %d, on disk %v", limit, s.Size(), s.OnDisk())
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("limit %d: the spool left %d files in its directory", limit, len(entries))
		}
		got, err := io.ReadAll(io.NewSectionReader(s, 0, s.Size()))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("limit %d: read back %d bytes (err %v), equal %v", limit, len(got), err, bytes.Equal(got, data))
		}
		for _, off := range []int64{0, spoolChunk - 1, spoolChunk, int64(len(data)) - 5} {
			buf := make([]byte, 10)
			n, err := s.ReadAt(buf, off)
			want := data[off:min(off+10, int64(len(data)))]
			if !bytes.Equal(buf[:n], want) || (n < 10) != errors.Is(err, io.EOF) {
				t.Errorf("limit %d: ReadAt(10, %d) = %d, %v", limit, off, n, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}
