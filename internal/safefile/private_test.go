package safefile

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestPrivateDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mode := func(p string) fs.FileMode {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	fresh := filepath.Join(root, "a", "b")
	if was, err := PrivateDir(fresh); err != nil || was != 0 || mode(fresh) != 0o700 {
		t.Errorf("PrivateDir(new) = %04o, %v; mode %04o, want 0, nil, 0700", was, err, mode(fresh))
	}
	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o775); err != nil {
		t.Fatal(err)
	}
	if was, err := PrivateDir(open); err != nil || was != 0o775 || mode(open) != 0o700 {
		t.Errorf("PrivateDir(0775) = %04o, %v; mode %04o, want 0775, nil, 0700", was, err, mode(open))
	}
	if was, err := PrivateDir(open); err != nil || was != 0 {
		t.Errorf("PrivateDir(private) = %04o, %v; want 0, nil", was, err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PrivateDir(file); err == nil {
		t.Error("PrivateDir(a file) = nil, want an error")
	}
	if err := PrivateFiles(file, filepath.Join(root, "missing")); err != nil || mode(file) != 0o600 {
		t.Errorf("PrivateFiles = %v, mode %04o; want nil, 0600", err, mode(file))
	}
}
