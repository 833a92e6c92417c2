package safefile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// bothPaths runs f with openat2 (where the kernel has it) and with the
// component walk older kernels take. The switch is the package's, so
// neither runs in parallel.
func bothPaths(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", f)
	t.Run("walk", func(t *testing.T) {
		restore := SetOpenat2(false)
		t.Cleanup(restore)
		f(t)
	})
}

// tree is a directory an agent wrote: files, and links and special files
// where baton expects files and directories.
type tree struct {
	root, outside string
}

func newTree(t *testing.T) tree {
	t.Helper()
	tr := tree{root: t.TempDir(), outside: t.TempDir()}
	for rel, body := range map[string]string{"a.txt": "a", "d/b.txt": "b", "d/e/c.txt": "c"} {
		p := filepath.Join(tr.root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tr.outside, "secret"), []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"linkfile": "a.txt", "linkdir": "d", "out": tr.outside, "d/up": "..",
		"secret": filepath.Join(tr.outside, "secret"), "zero": "/dev/zero",
	} {
		if err := os.Symlink(target, filepath.Join(tr.root, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(tr.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestReadBeneath(t *testing.T) {
	t.Parallel()
	bothPaths(t, func(t *testing.T) {
		tr := newTree(t)
		for _, tt := range []struct {
			rel  string
			want string
			err  error
		}{
			{"a.txt", "a", nil},
			{"d/e/c.txt", "c", nil},
			{"./d//b.txt", "b", nil},
			{"linkfile", "", ErrNotRegular},
			{"secret", "", ErrNotRegular},
			{"zero", "", ErrNotRegular},
			{"fifo", "", ErrNotRegular}, // and it does not block
			{"d", "", ErrNotRegular},
			{"linkdir/b.txt", "", ErrNotBeneath},
			{"out/secret", "", ErrNotBeneath},
			{"d/up/a.txt", "", ErrNotBeneath},
			{"a.txt/x", "", ErrNotBeneath},
			{"../" + filepath.Base(tr.outside) + "/secret", "", ErrNotBeneath},
			{"/etc/passwd", "", ErrNotBeneath},
			{"missing", "", os.ErrNotExist},
		} {
			b, err := ReadBeneath(tr.root, tt.rel, 100)
			if tt.err == nil && (err != nil || string(b) != tt.want) {
				t.Errorf("ReadBeneath(%q) = %q, %v, want %q", tt.rel, b, err, tt.want)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("ReadBeneath(%q) = %q, %v, want %v", tt.rel, b, err, tt.err)
			}
		}
		if _, err := ReadBeneath(tr.root, "d/e/c.txt", 0); !errors.Is(err, ErrTooLarge) {
			t.Errorf("ReadBeneath over its limit = %v, want ErrTooLarge", err)
		}
		// A FIFO opened to write, with no reader, fails at once.
		if _, err := OpenBeneath(tr.root, "fifo", os.O_WRONLY, 0); !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenBeneath(fifo, write) = %v, want ErrNotRegular", err)
		}
	})
}

func TestWriteBeneath(t *testing.T) {
	t.Parallel()
	bothPaths(t, func(t *testing.T) {
		tr := newTree(t)
		if err := WriteBeneath(tr.root, "docs/plan.md", []byte("plan\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(tr.root, "docs/plan.md")); err != nil || string(b) != "plan\n" {
			t.Errorf("docs/plan.md = %q, %v", b, err)
		}
		// A link where a directory should be: refused, nothing written out.
		for _, rel := range []string{"out/plan.md", "linkdir/plan.md", "a.txt/plan.md", "d/up/plan.md"} {
			if err := WriteBeneath(tr.root, rel, []byte("x"), 0o644); !errors.Is(err, ErrNotBeneath) {
				t.Errorf("WriteBeneath(%q) = %v, want ErrNotBeneath", rel, err)
			}
		}
		// A link or a FIFO as the file itself: replaced, never followed.
		for _, rel := range []string{"secret", "fifo", "zero"} {
			if err := WriteBeneath(tr.root, rel, []byte("new"), 0o644); err != nil {
				t.Errorf("WriteBeneath(%q) = %v", rel, err)
			}
			fi, err := os.Lstat(filepath.Join(tr.root, rel))
			if err != nil || !fi.Mode().IsRegular() {
				t.Errorf("%s after WriteBeneath: %v %v, want a regular file", rel, fi.Mode(), err)
			}
		}
		entries, _ := os.ReadDir(tr.outside)
		if b, _ := os.ReadFile(filepath.Join(tr.outside, "secret")); string(b) != "SECRET" || len(entries) != 1 {
			t.Errorf("outside after the writes: %d entries, secret = %q", len(entries), b)
		}
	})
}

func TestDirBeneathRemove(t *testing.T) {
	t.Parallel()
	bothPaths(t, func(t *testing.T) {
		tr := newTree(t)
		d, err := OpenDirBeneath(tr.root, "", false, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		// The link goes, not what it names; a directory goes whole, its
		// links removed and not followed.
		for _, name := range []string{"out", "fifo", "d", "missing"} {
			if err := d.Remove(name); err != nil {
				t.Errorf("Remove(%s) = %v", name, err)
			}
			if _, err := os.Lstat(filepath.Join(tr.root, name)); !os.IsNotExist(err) {
				t.Errorf("%s after Remove: %v", name, err)
			}
		}
		if b, err := os.ReadFile(filepath.Join(tr.outside, "secret")); err != nil || string(b) != "SECRET" {
			t.Errorf("outside/secret after the removes = %q, %v", b, err)
		}
		if _, err := OpenDirBeneath(tr.root, "linkdir", false, 0); !errors.Is(err, ErrNotBeneath) {
			t.Errorf("OpenDirBeneath(linkdir) = %v, want ErrNotBeneath", err)
		}
		if m, err := d.Lstat("linkfile"); err != nil || m&os.ModeSymlink == 0 {
			t.Errorf("Lstat(linkfile) = %v, %v", m, err)
		}
	})
}

// FuzzOpenBeneath opens any path beneath a tree of files, links and a
// FIFO, both ways (openat2 and the component walk), and checks the
// answer against the tree: a file is opened only when every component
// before it is a real directory of the tree and it is a regular file of
// the tree, and then it is that file.
func FuzzOpenBeneath(f *testing.F) {
	for _, s := range []string{"a.txt", "d/e/c.txt", "linkdir/b.txt", "out/secret", "d/up/a.txt", "../x", "/etc/passwd", "fifo", "d//./b.txt", "d/../a.txt"} {
		f.Add(s)
	}
	tr := tree{root: f.TempDir(), outside: f.TempDir()}
	for rel, body := range map[string]string{"a.txt": "a", "d/b.txt": "b", "d/e/c.txt": "c"} {
		p := filepath.Join(tr.root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	for link, target := range map[string]string{"linkfile": "a.txt", "linkdir": "d", "out": tr.outside, "d/up": ".."} {
		if err := os.Symlink(target, filepath.Join(tr.root, link)); err != nil {
			f.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(tr.root, "fifo"), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tr.outside, "secret"), []byte("SECRET"), 0o600); err != nil {
		f.Fatal(err)
	}
	// What the tree holds: directories and regular files, by clean path.
	dirs := map[string]bool{"": true, "d": true, "d/e": true}
	files := map[string]string{"a.txt": "a", "d/b.txt": "b", "d/e/c.txt": "c"}
	want := func(rel string) (string, bool) {
		if strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) {
			return "", false
		}
		var parts []string
		for _, p := range strings.Split(rel, "/") {
			switch p {
			case "", ".":
			case "..":
				return "", false
			default:
				parts = append(parts, p)
			}
		}
		if len(parts) == 0 {
			return "", false
		}
		for i := 1; i < len(parts); i++ {
			if !dirs[strings.Join(parts[:i], "/")] {
				return "", false
			}
		}
		body, ok := files[strings.Join(parts, "/")]
		return body, ok
	}
	f.Fuzz(func(t *testing.T, rel string) {
		if len(rel) > 200 {
			return
		}
		body, ok := want(rel)
		for _, walk := range []bool{false, true} {
			restore := SetOpenat2(!walk)
			b, err := ReadBeneath(tr.root, rel, 16)
			restore()
			switch {
			case ok && (err != nil || string(b) != body):
				t.Fatalf("ReadBeneath(%q) walk=%v = %q, %v, want %q", rel, walk, b, err, body)
			case !ok && err == nil:
				t.Fatalf("ReadBeneath(%q) walk=%v = %q, want an error", rel, walk, b)
			}
		}
	})
}

// A Root reads, writes, locks, appends and makes nothing through a link
// on the way below it; the zero Root (what the plain functions use)
// follows those links, as the system does: the control. Both ways the
// kernel may take: openat2, and the walk of a kernel before 5.6.
func TestRootFollowsNoLinkOnTheWay(t *testing.T) {
	bothPaths(t, testRootFollowsNoLink)
}

func testRootFollowsNoLink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "real"), 0o755)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o600)
	if err := os.Symlink(outside, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		r    Root
		bad  bool // the operations through the link must fail
	}{{"root", Root{Dir: root}, true}, {"zero", Root{}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			p := func(name string) string { return filepath.Join(root, "linked", name) }
			var errs []error
			_, err := tc.r.ReadFile(p("secret"), 100)
			errs = append(errs, err)
			errs = append(errs, tc.r.WriteAtomic(p("w-"+tc.name), []byte("x"), 0o644))
			errs = append(errs, tc.r.WriteCache(p("c-"+tc.name), []byte("x"), 0o644))
			errs = append(errs, tc.r.CreateExclusive(p("e-"+tc.name), []byte("x"), 0o644))
			unlock, err := tc.r.Lock(ctx, p("l-"+tc.name))
			if err == nil {
				unlock()
			}
			errs = append(errs, err)
			errs = append(errs, AppendJSONLBeneath(ctx, tc.r, p("j-"+tc.name), map[string]int{"a": 1}))
			_, err = ScanJSONLBeneath(tc.r, p("secret"), func(map[string]any) error { return nil })
			errs = append(errs, err)
			errs = append(errs, tc.r.MkdirAll(p("d-"+tc.name), 0o755))
			for i, err := range errs {
				if tc.bad && !errors.Is(err, ErrNotBeneath) {
					t.Errorf("operation %d through the link = %v, want ErrNotBeneath", i, err)
				}
				if !tc.bad && err != nil {
					t.Errorf("operation %d through the link, zero Root = %v", i, err)
				}
			}
			// Beneath it, without a link, everything works.
			if tc.bad {
				q := filepath.Join(root, "real", "f")
				if err := tc.r.WriteAtomic(q, []byte("ok"), 0o644); err != nil {
					t.Fatal(err)
				}
				if b, err := tc.r.ReadFile(q, 10); err != nil || string(b) != "ok" {
					t.Errorf("ReadFile beneath = %q, %v", b, err)
				}
				if _, err := tc.r.ReadFile(filepath.Join(outside, "secret"), 100); !errors.Is(err, ErrNotBeneath) {
					t.Errorf("ReadFile of a path outside the root = %v, want ErrNotBeneath", err)
				}
			}
		})
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) == 1 {
		t.Error("the zero Root wrote nothing through the link: the control shows nothing")
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), "root") {
			t.Errorf("a Root wrote %s outside through the link", e.Name())
		}
	}
}

// Root.Remove removes a file or a link beneath the root, never what a
// link leads to, never a directory, and refuses a path through a link.
func TestRootRemove(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	r := Root{Dir: root}
	target := filepath.Join(outside, "f")
	for _, p := range []string{target, filepath.Join(root, "f")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(target, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"f", "link", "missing"} {
		if err := r.Remove(filepath.Join(root, name)); err != nil {
			t.Errorf("Remove(%s) = %v", name, err)
		}
		if _, err := os.Lstat(filepath.Join(root, name)); err == nil {
			t.Errorf("Remove(%s) left it", name)
		}
	}
	if err := r.Remove(filepath.Join(root, "dirlink", "f")); !errors.Is(err, ErrNotBeneath) {
		t.Errorf("Remove through a link = %v; want ErrNotBeneath", err)
	}
	if err := r.Remove(filepath.Join(root, "dir")); err == nil {
		t.Error("Remove of a directory succeeded")
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("what the links lead to is gone: %v", err)
	}
}

// TestDirCacheNeverFollowsASwappedDirectory swaps directories a cached
// Root has opened, and ones below them, for links out of the root
// between two reads: the second read, and a write, reach the directory
// first opened or are refused, never the link's target.
func TestDirCacheNeverFollowsASwappedDirectory(t *testing.T) {
	bothPaths(t, func(t *testing.T) {
		tr := newTree(t)
		for _, name := range []string{"c.txt", "b.txt"} {
			if err := os.WriteFile(filepath.Join(tr.outside, name), []byte("SECRET"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r := Root{Dir: tr.root}.WithDirCache()
		read := func(rel string) (string, error) {
			b, err := r.ReadFile(filepath.Join(tr.root, rel), 1<<10)
			return string(b), err
		}
		swap := func(rel string) {
			p := filepath.Join(tr.root, rel)
			if err := os.Rename(p, p+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tr.outside, p); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := read("d/e/c.txt"); err != nil || got != "c" {
			t.Fatalf("first read of d/e/c.txt: %q, %v", got, err)
		}
		swap("d/e") // cached: the read goes on in the directory first opened
		if got, err := read("d/e/c.txt"); err != nil || got != "c" {
			t.Fatalf("d/e/c.txt after d/e became a link: %q, %v; want the file first opened", got, err)
		}
		if err := r.WriteAtomic(filepath.Join(tr.root, "d/e/new.txt"), []byte("new"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(tr.outside, "new.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a write through the cache reached the link's target: %v", err)
		}
		if b, err := os.ReadFile(filepath.Join(tr.root, "d/e.old/new.txt")); err != nil || string(b) != "new" {
			t.Fatalf("the write did not reach the directory first opened: %q, %v", b, err)
		}
		// Not cached, below a cached directory: resolved beneath it, the
		// link refused.
		if err := os.Mkdir(filepath.Join(tr.root, "d/e.old/f"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(tr.outside, filepath.Join(tr.root, "d/e.old/g")); err != nil {
			t.Fatal(err)
		}
		if got, err := read("d/e/g/c.txt"); !errors.Is(err, ErrNotBeneath) {
			t.Fatalf("d/e/g/c.txt, g a link below a cached directory: %q, %v; want ErrNotBeneath", got, err)
		}
		// Never opened, above nothing cached: the link is refused.
		swap("d")
		if got, err := read("d/b.txt"); !errors.Is(err, ErrNotBeneath) {
			t.Fatalf("d/b.txt after d became a link: %q, %v; want ErrNotBeneath", got, err)
		}
		if _, err := r.OpenDir("d", false, 0); !errors.Is(err, ErrNotBeneath) {
			t.Fatalf("OpenDir(d) after d became a link: %v; want ErrNotBeneath", err)
		}
		// A Root without the cache sees the links as they now are.
		if _, err := (Root{Dir: tr.root}).ReadFile(filepath.Join(tr.root, "d/e/c.txt"), 1<<10); !errors.Is(err, ErrNotBeneath) {
			t.Fatalf("uncached read of d/e/c.txt: %v; want ErrNotBeneath", err)
		}
	})
}

// TestDirCacheMakesAndReuses checks that a cached Root makes missing
// directories, lists a shared directory twice from its start, and that
// closing what OpenDir returned leaves the cache's descriptor open.
func TestDirCacheMakesAndReuses(t *testing.T) {
	root := t.TempDir()
	r := Root{Dir: root}.WithDirCache()
	if err := r.MkdirAll(filepath.Join(root, "x/y/z"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteAtomic(filepath.Join(root, "x/y/z/f"), []byte("f"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		d, err := r.OpenDir("x/y/z", false, 0)
		if err != nil {
			t.Fatal(err)
		}
		names, err := d.Names()
		if err != nil || len(names) != 1 || names[0] != "f" {
			t.Fatalf("Names: %v, %v", names, err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := r.ReadFile(filepath.Join(root, "x/y/z/f"), 10); err != nil || string(b) != "f" {
		t.Fatalf("read after Close: %q, %v", b, err)
	}
	if _, err := r.OpenDir("../x", false, 0); !errors.Is(err, ErrNotBeneath) {
		t.Fatalf("OpenDir(../x): %v; want ErrNotBeneath", err)
	}
}

// A cache replaced beneath a root takes the place of a file or a link
// (never writing through it), leaves a directory where it was, and
// leaves no temp file either way.
func TestWriteCacheReplaces(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r := Root{Dir: root}
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file, link, dir := filepath.Join(root, "file"), filepath.Join(root, "link"), filepath.Join(root, "dir")
	if err := os.WriteFile(file, bytes.Repeat([]byte("old\n"), 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, link, filepath.Join(root, "new")} {
		if err := r.WriteCache(p, []byte("new\n"), 0o644); err != nil {
			t.Errorf("WriteCache(%s): %v", p, err)
		}
		fi, err := os.Lstat(p)
		if b, _ := os.ReadFile(p); err != nil || !fi.Mode().IsRegular() || string(b) != "new\n" {
			t.Errorf("%s after WriteCache: %v, %v, %q", p, fi, err, b)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if err := r.WriteCache(dir, []byte("new\n"), 0o644); err == nil {
		t.Error("WriteCache replaced a directory")
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		t.Errorf("the directory is gone: %v, %v", fi, err)
	}
	names, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	if want := []string{"dir", "file", "link", "new"}; !slices.Equal(got, want) {
		t.Errorf("the root holds %v, want %v (no temp file)", got, want)
	}
}
