package safefile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFileRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(regular, 5); err != nil || string(b) != "hello" {
		t.Errorf("ReadFile(regular) = %q, %v", b, err)
	}
	for _, tt := range []struct {
		path string
		max  int64
		want error
	}{
		{link, 100, ErrNotRegular},
		{zero, 100, ErrNotRegular},
		{fifo, 100, ErrNotRegular}, // and it must not block
		{dir, 100, ErrNotRegular},
		{regular, 4, ErrTooLarge},
	} {
		if _, err := ReadFile(tt.path, tt.max); !errors.Is(err, tt.want) {
			t.Errorf("ReadFile(%s, %d) = %v, want %v", filepath.Base(tt.path), tt.max, err, tt.want)
		}
	}
	// A transcript named by a payload may be a link to a regular file, but
	// never a FIFO or a device.
	if f, err := OpenRegularFollow(link); err != nil {
		t.Errorf("OpenRegularFollow(link to a file) = %v", err)
	} else {
		f.Close()
	}
	for _, p := range []string{zero, fifo} {
		if _, err := OpenRegularFollow(p); !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenRegularFollow(%s) = %v, want ErrNotRegular", filepath.Base(p), err)
		}
	}
}

func TestWritesNeverFollowLinks(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "log.jsonl")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if err := AppendJSONL(context.Background(), link, map[string]int{"a": 1}); !errors.Is(err, ErrNotRegular) {
		t.Errorf("AppendJSONL through a link = %v, want ErrNotRegular", err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "x.lock")); err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(context.Background(), filepath.Join(dir, "x")); err == nil {
		t.Error("Lock opened a lock file through a link")
	}
	if err := CreateExclusive(link, []byte("new"), 0o644); !errors.Is(err, os.ErrExist) {
		t.Errorf("CreateExclusive over a link = %v, want ErrExist", err)
	}
	if err := WriteAtomic(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("WriteAtomic wrote through a link: the target holds %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("WriteAtomic did not replace the link with a file: %v", err)
	}
}

func TestLockWaitsAndGivesUp(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "x")
	unlock, err := Lock(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while held = %v, want the deadline", err)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := Lock(context.Background(), p)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	unlock()
	(<-got)()
	// The waiter that gave up released what it got later: the lock is free.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u, err := Lock(ctx, p)
	if err != nil {
		t.Fatalf("Lock after the others = %v", err)
	}
	u()
}

func TestSweepTemps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	files := map[string]bool{ // name: swept when stale
		".a.md" + TempMarker + "x1": true,
		".a.md.tmp123":              true, // an earlier baton's createExclusive
		".a.md9876543":              true, // an earlier baton's atomic write
		"a.md":                      false,
		".gitignore":                false,
		".notes.md.bak":             false,
	}
	for name := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-2*time.Minute), now.Add(-2*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	fresh := filepath.Join(dir, ".b.md"+TempMarker+"x2")
	if err := os.WriteFile(fresh, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := SweepTemps(dir, time.Minute, now); n != 3 {
		t.Errorf("SweepTemps removed %d, want 3", n)
	}
	for name, swept := range files {
		if _, err := os.Stat(filepath.Join(dir, name)); (err != nil) != swept {
			t.Errorf("%s: removed = %v, want %v", name, err != nil, swept)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temp file was swept")
	}
}

func TestScanLinesTail(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "log.jsonl")
	var lines []string
	for i := range 100 {
		lines = append(lines, `{"n":`+strings.Repeat(" ", i%7)+strconv.Itoa(i)+`}`)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type rec struct{ N int }
	for _, tail := range []int64{1, 10, 50, 333, 1 << 20} {
		var got []int
		if _, err := ScanJSONLTail(p, tail, func(r rec) error { got = append(got, r.N); return nil }); err != nil {
			t.Fatal(err)
		}
		// The tail holds whole lines only, and every line that ends in it
		// and starts in it: the last k lines, in order.
		var size, k int
		for i := len(lines) - 1; i >= 0 && size+len(lines[i])+1 <= int(tail); i-- {
			size += len(lines[i]) + 1
			k++
		}
		if len(got) != k || (k > 0 && got[len(got)-1] != 99) || (k > 0 && got[0] != 100-k) {
			t.Errorf("tail %d: got %v, want the last %d lines", tail, got, k)
		}
	}
}

// FuzzScanLines checks ScanLines against a reference that splits the
// whole file on newlines: with a tail, exactly the lines that start
// inside the last tail bytes, trimmed, empty ones skipped, in order.
func FuzzScanLines(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc\ndddd"), int64(0))
	f.Add([]byte("a\nbb\nccc\n"), int64(4))
	f.Add([]byte("\n\n x \n"), int64(2))
	f.Fuzz(func(t *testing.T, data []byte, tail int64) {
		if tail < 0 {
			return
		}
		path := filepath.Join(t.TempDir(), "log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var got []string
		st, err := ScanLines(path, tail,
			func(line []byte, v *string) error { *v = string(line); return nil },
			func(s string) error { got = append(got, s); return nil })
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		start := int64(len(data)) - tail
		off := int64(0)
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if tail == 0 || off >= start {
				if trimmed := strings.TrimSpace(line); trimmed != "" {
					want = append(want, trimmed)
				}
			}
			off += int64(len(line))
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) || st.Lines != len(want) {
			t.Fatalf("ScanLines(%q, tail %d) = %q (%+v), want %q", data, tail, got, st, want)
		}
	})
}
