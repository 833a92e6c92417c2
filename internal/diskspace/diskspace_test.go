package diskspace_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/baton-agent/baton/internal/diskspace"
	"github.com/baton-agent/baton/internal/diskspace/diskspacetest"
)

func TestFree(t *testing.T) {
	t.Parallel()
	if n, err := diskspace.Free(t.TempDir()); err != nil || n <= 0 {
		t.Errorf("Free(a temporary directory) = %d, %v; want room", n, err)
	}
	if _, err := diskspace.Free(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Free(a missing path) = nil error")
	}
}

// The reserve is held while there is room for it, and given up on a full
// disk leaves that much room to write.
func TestReserve(t *testing.T) {
	dir := diskspacetest.Mount(t, 16<<20)
	r := &diskspace.Reserve{Path: filepath.Join(dir, "reserve"), Size: 4 << 20}
	if held, err := r.Hold(1 << 20); !held || err != nil {
		t.Fatalf("Hold on an empty 16 MiB disk = %v, %v", held, err)
	}
	if fi, err := os.Stat(r.Path); err != nil || fi.Size() != r.Size {
		t.Fatalf("the reserve file: %v, %v; want %d bytes", fi, err, r.Size)
	}
	diskspacetest.Fill(t, filepath.Join(dir, "filler"))
	if n, _ := diskspace.Free(dir); n >= 1<<20 {
		t.Fatalf("Free after filling = %d, want under 1 MiB", n)
	}
	if !r.Release() {
		t.Fatal("Release found no reserve to free")
	}
	if n, _ := diskspace.Free(dir); n < r.Size {
		t.Errorf("Free after Release = %d, want at least the reserve's %d", n, r.Size)
	}
	if held, err := r.Hold(1 << 20); held || err != nil {
		t.Errorf("Hold with no room = %v, %v; want not held, no error", held, err)
	}
	os.Remove(filepath.Join(dir, "filler"))
	if held, err := r.Hold(1 << 20); !held || err != nil {
		t.Errorf("Hold once the room is back = %v, %v", held, err)
	}
	if r.Release(); r.Release() {
		t.Error("a second Release freed something")
	}
}
