// Package diskspacetest gives tests a small file system of their own, to
// fill up: a tmpfs mounted on a fresh directory.
package diskspacetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/baton-agent/baton/internal/diskspace"
)

// Mount mounts a tmpfs of size bytes on a fresh directory and returns it;
// it is unmounted when the test ends. The test is skipped, saying why,
// where that needs privileges the test does not have (mounting takes
// root, or a user namespace the test is not in).
func Mount(t testing.TB, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system to fill needs root")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10)+",mode=0700", "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs to fill: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file at path until the file system holding it is full,
// and returns how many bytes it wrote.
func Fill(t testing.TB, path string) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i) // not zeros: nothing below may compress them away
	}
	var n int64
	for {
		m, err := f.Write(buf)
		n += int64(m)
		if err != nil {
			return n
		}
	}
}

// FillTo writes a file at path until the file system holding it has at
// most leave bytes free, and returns how many bytes it wrote.
func FillTo(t testing.TB, path string, leave int64) int64 {
	t.Helper()
	free, err := diskspace.Free(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i)
	}
	var n int64
	for n < free-leave {
		m, err := f.Write(buf[:min(int64(len(buf)), free-leave-n)])
		n += int64(m)
		if err != nil {
			break
		}
	}
	return n
}
