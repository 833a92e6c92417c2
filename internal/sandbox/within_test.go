package sandbox

import (
	"path/filepath"
	"strings"
	"testing"
)

// withinByRel is within as filepath.Rel decides it, for any two paths.
func withinByRel(path, dir string) bool {
	if path == dir {
		return true
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

func FuzzWithin(f *testing.F) {
	for _, c := range [][2]string{
		{"/a/b", "/a"}, {"/ab", "/a"}, {"/a", "/a/b"}, {"/a/..b", "/a"}, {"/a/../b", "/a"},
		{"/", "/"}, {"/x", "/"}, {"a/b", "a"}, {"/a//b", "/a"}, {"/a/b/", "/a/b"}, {"/a", ""}, {"", "/"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, path, dir string) {
		if got, want := within(path, dir), withinByRel(path, dir); got != want {
			t.Fatalf("within(%q, %q) = %v, filepath.Rel says %v", path, dir, got, want)
		}
	})
}

func TestWithin(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path, dir string
		want      bool
	}{
		{"/usr/lib/x", "/usr/lib", true},
		{"/usr/lib", "/usr/lib", true},
		{"/usr/libexec", "/usr/lib", false},
		{"/usr", "/usr/lib", false},
		{"/etc", "/", true},
		{"/usr/lib/../bin", "/usr/lib", false},
	} {
		if got := within(c.path, c.dir); got != c.want {
			t.Errorf("within(%q, %q) = %v, want %v", c.path, c.dir, got, c.want)
		}
	}
}
