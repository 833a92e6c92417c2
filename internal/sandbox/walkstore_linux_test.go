package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// walkRoot is a fresh directory to walk, readable by all, with private
// files named by names in it.
func walkRoot(t *testing.T, names ...string) (root string, paths []string) {
	t.Helper()
	root = t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	for _, n := range names {
		p := filepath.Join(root, n)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return root, paths
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("walks are kept by root's processes only")
	}
}

// walkedElsewhere asks another process (this test binary again) what
// walked returns for root, as a second `baton delivery run` would.
func walkedElsewhere(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWalkedHelper$")
	cmd.Env = append(os.Environ(), "BATON_WALKED_ROOT="+root)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the other process: %v\n%s", err, out)
	}
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if p, ok := strings.CutPrefix(l, "HIDDEN "); ok {
			got = append(got, p)
		}
	}
	return got
}

// TestWalkedHelper is the other process of walkedElsewhere.
func TestWalkedHelper(t *testing.T) {
	root := os.Getenv("BATON_WALKED_ROOT")
	if root == "" {
		t.Skip("run by walkedElsewhere")
	}
	got, err := walked(root, publicTTL)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got {
		os.Stdout.WriteString("HIDDEN " + p + "\n")
	}
}

// A walk one of root's processes made stands for the next process for
// what is left of its age: the next `baton delivery run` does not walk
// /usr again. Past its age, the next process walks anew.
func TestKeptWalkStandsForTheNextProcess(t *testing.T) {
	needRoot(t)
	t.Parallel()
	root, first := walkRoot(t, "first")
	t.Cleanup(func() { os.Remove(walkFile(root)) })
	if got, err := walked(root, time.Hour); err != nil || !slices.Equal(got, first) {
		t.Fatalf("walked = %q, %v; want %q", got, err, first)
	}
	later := filepath.Join(root, "later")
	if err := os.WriteFile(later, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := walkedElsewhere(t, root); !slices.Equal(got, first) {
		t.Errorf("the next process walked again: %q, want the kept %q", got, first)
	}
	// Aged past what a walk stands for: walked anew, and kept anew.
	keepWalk(root, &publicWalk{hidden: first, at: time.Now().Add(-publicTTL - time.Minute)})
	want := []string{first[0], later}
	if got := walkedElsewhere(t, root); !slices.Equal(got, want) {
		t.Errorf("a walk past its age stood: %q, want %q", got, want)
	}
	if w, ok := keptWalk(root, time.Hour); !ok || !slices.Equal(w.hidden, want) || time.Since(w.at) > time.Minute {
		t.Errorf("the new walk was not kept: %+v, %v", w, ok)
	}
}

// A kept walk is read only when root alone could have written it, whole,
// and of the root asked: anything else is walked again.
func TestKeptWalkRefusesWhatRootDidNotWrite(t *testing.T) {
	needRoot(t)
	t.Parallel()
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, file, root string)
	}{
		{"writable by others", func(t *testing.T, file, _ string) {
			if err := os.Chmod(file, 0o666); err != nil {
				t.Fatal(err)
			}
		}},
		{"not root's", func(t *testing.T, file, _ string) {
			if err := os.Chown(file, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
		{"a link", func(t *testing.T, file, root string) {
			// To the same walk, sound, elsewhere: only not following
			// the link refuses it.
			elsewhere := filepath.Join(t.TempDir(), "walk")
			if err := os.WriteFile(elsewhere, encodeWalk(root, time.Now(), nil), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Remove(file)
			if err := os.Symlink(elsewhere, file); err != nil {
				t.Fatal(err)
			}
		}},
		{"a FIFO", func(t *testing.T, file, _ string) {
			os.Remove(file)
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"another root's walk", func(t *testing.T, file, _ string) {
			if err := os.WriteFile(file, encodeWalk("/elsewhere", time.Now(), nil), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"cut short", func(t *testing.T, file, root string) {
			b := encodeWalk(root, time.Now(), []string{root + "/first"})
			if err := os.WriteFile(file, b[:len(b)-3], 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a path outside its root", func(t *testing.T, file, root string) {
			if err := os.WriteFile(file, encodeWalk(root, time.Now(), []string{"/etc/shadow"}), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"from far ahead", func(t *testing.T, file, root string) {
			if err := os.WriteFile(file, encodeWalk(root, time.Now().Add(time.Hour), nil), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, _ := walkRoot(t, "first")
			file := walkFile(root)
			t.Cleanup(func() { os.Remove(file) })
			keepWalk(root, &publicWalk{at: time.Now()}) // says nothing is hidden
			if _, ok := keptWalk(root, time.Hour); !ok {
				t.Fatal("the walk root kept is not read")
			}
			tc.plant(t, file, root)
			if w, ok := keptWalk(root, time.Hour); ok {
				t.Errorf("read a kept walk %s: %q", tc.name, w.hidden)
			}
		})
	}
}

// A kept walk past its age is removed by the next walk kept.
func TestKeepWalkPrunesOldWalks(t *testing.T) {
	needRoot(t)
	t.Parallel()
	old, _ := walkRoot(t)
	keepWalk(old, &publicWalk{at: time.Now()})
	aged := time.Now().Add(-publicTTL - time.Minute)
	if err := os.Chtimes(walkFile(old), aged, aged); err != nil {
		t.Fatal(err)
	}
	fresh, _ := walkRoot(t)
	t.Cleanup(func() { os.Remove(walkFile(fresh)) })
	keepWalk(fresh, &publicWalk{at: time.Now()})
	if _, err := os.Lstat(walkFile(old)); err == nil {
		t.Error("a kept walk past its age is still there")
	}
	if _, err := os.Lstat(walkFile(fresh)); err != nil {
		t.Errorf("the walk just kept is gone: %v", err)
	}
}

// Kept walks are read only from a directory root alone may write.
func TestRootsOwn(t *testing.T) {
	needRoot(t)
	t.Parallel()
	dir := t.TempDir()
	sub := filepath.Join(dir, "walks")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if !rootsOwn(sub, true) {
		t.Fatal("root's own 0700 directory refused")
	}
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"the directory writable by others", func() error { return os.Chmod(sub, 0o777) }},
		{"the directory another user's", func() error { return os.Chown(sub, 65534, 65534) }},
		{"its parent writable by others", func() error { return os.Chmod(dir, 0o777) }},
		{"its parent another user's", func() error { return os.Chown(dir, 65534, 65534) }},
	} {
		if err := tc.do(); err != nil {
			t.Fatal(err)
		}
		if rootsOwn(sub, true) {
			t.Errorf("%s: accepted", tc.name)
		}
		// Back to root's own.
		if err := errors.Join(os.Chown(sub, 0, 0), os.Chmod(sub, 0o700), os.Chown(dir, 0, 0), os.Chmod(dir, 0o755)); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(sub, link); err != nil {
		t.Fatal(err)
	}
	if rootsOwn(link, true) {
		t.Error("a link to root's directory accepted")
	}
}

// What decodeWalk accepts is a walk of its root: every path absolute,
// clean and within the root; and a walk encoded is read back whole.
func FuzzDecodeWalk(f *testing.F) {
	f.Add([]byte(encodeWalk("/usr", time.Unix(1700000000, 5), []string{"/usr/lib/secret", "/usr/x"})), "/usr")
	f.Add([]byte(encodeWalk("/etc", time.Unix(1, 0), nil)), "/etc")
	f.Add([]byte(walkMagic+"\x00/usr\x00123\x00/etc/shadow\x00"), "/usr")
	f.Add([]byte(walkMagic+"\x00/usr\x00123\x00/usr/../etc\x00"), "/usr")
	f.Add([]byte(""), "/")
	f.Fuzz(func(t *testing.T, b []byte, root string) {
		at, hidden, ok := decodeWalk(b, root)
		if !ok {
			return
		}
		for _, p := range hidden {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p || !within(p, root) {
				t.Fatalf("decodeWalk(%q, %q) accepted %q", b, root, p)
			}
		}
		again, hidden2, ok := decodeWalk(encodeWalk(root, at, hidden), root)
		if !ok || !again.Equal(at) || !slices.Equal(hidden, hidden2) {
			t.Fatalf("a walk re-encoded reads %v %q %v, want %v %q", again, hidden2, ok, at, hidden)
		}
	})
}
