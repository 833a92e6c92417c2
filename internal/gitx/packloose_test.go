package gitx

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/baton-agent/baton/internal/gitx/gittest"
)

// privateObjects is a repository cache and an object directory of its
// own beside it, as a commit in a worktree has: git writes there with
// the cache's objects as alternates. git returns what git run so prints.
func privateObjects(t *testing.T) (cache *Repo, priv string, git func(stdin string, args ...string) string, gits *int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cache.git")
	if _, err := InitCache(t.Context(), dir, "main", nil); err != nil {
		t.Fatal(err)
	}
	priv = filepath.Join(t.TempDir(), "objects")
	if err := os.Mkdir(priv, 0o700); err != nil {
		t.Fatal(err)
	}
	git = func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), gittest.Env()...), "GIT_OBJECT_DIRECTORY="+priv, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+filepath.Join(dir, "objects"))
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gits = new(int)
	cache = &Repo{Dir: dir, Start: func(cmd *exec.Cmd) (func(), error) { *gits++; return func() {}, cmd.Start() }}
	return cache, priv, git, gits
}

func has(dir, name string) bool {
	return exec.Command("git", "-C", dir, "cat-file", "-e", name).Run() == nil
}

// What a commit in a worktree writes (blobs large and empty, a tree, a
// commit) reaches the cache whole through one git process, and git finds
// nothing wrong with it; an empty directory starts none.
func TestSendLooseMatchesGit(t *testing.T) {
	t.Parallel()
	cache, priv, git, gits := privateObjects(t)
	if err := SendLoose(t.Context(), cache, priv); err != nil || *gits != 0 {
		t.Fatalf("an empty directory: %v, %d git processes", err, *gits)
	}
	big := make([]byte, 3<<20)
	rand.Read(big)
	bigFile := filepath.Join(t.TempDir(), "big")
	os.WriteFile(bigFile, big, 0o644)
	blobs := []string{git("", "hash-object", "-w", bigFile), git("", "hash-object", "-w", "--stdin"), git("small\n", "hash-object", "-w", "--stdin")}
	tree := git(fmt.Sprintf("100644 blob %s\tbig\n100644 blob %s\tempty\n100644 blob %s\tsmall\n", blobs[0], blobs[1], blobs[2]), "mktree")
	commit := git("", "commit-tree", "-m", "work", tree)
	if err := SendLoose(t.Context(), cache, priv); err != nil {
		t.Fatal(err)
	}
	if *gits != 1 {
		t.Errorf("%d git processes, want 1 (unpack-objects)", *gits)
	}
	for _, name := range append(blobs, tree, commit) {
		if !has(cache.Dir, name) {
			t.Errorf("the cache lacks %s", name)
		}
	}
	if out, err := exec.Command("git", "-C", cache.Dir, "fsck", "--strict", "--no-dangling").CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v: %s", err, out)
	}
	if got := gittest.Git(t, cache.Dir, "cat-file", "blob", blobs[2]); got != "small" {
		t.Errorf("the small blob reads %q", got)
	}
}

// looseFile writes content as the loose object name in the object
// directory dir, compressed as given.
func looseFile(t *testing.T, dir, name string, content []byte) {
	t.Helper()
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	zw.Write(content)
	zw.Close()
	os.MkdirAll(filepath.Join(dir, name[:2]), 0o755)
	if err := os.WriteFile(filepath.Join(dir, name[:2], name[2:]), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// What a hostile git could leave in the object directory never reaches
// the cache: an object longer or shorter than its header says (a
// decompression bomb is the first), one that is not zlib, a header git
// never writes, a tree naming a blob nobody has; links and named pipes
// are not read; a pack is left to SendObjects.
func TestSendLooseRefusesHostileObjects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		plant func(t *testing.T, priv string, git func(string, ...string) string)
	}{
		{"longer than it says", func(t *testing.T, priv string, _ func(string, ...string) string) {
			looseFile(t, priv, strings.Repeat("1", 40), append([]byte("blob 4\x00"), bytes.Repeat([]byte("A"), 1<<20)...))
		}},
		{"shorter than it says", func(t *testing.T, priv string, _ func(string, ...string) string) {
			looseFile(t, priv, strings.Repeat("2", 40), []byte("blob 400\x00short"))
		}},
		{"not zlib", func(t *testing.T, priv string, _ func(string, ...string) string) {
			os.MkdirAll(filepath.Join(priv, "33"), 0o755)
			os.WriteFile(filepath.Join(priv, "33", strings.Repeat("3", 38)), []byte("blob 1\x00x"), 0o644)
		}},
		{"a header git never writes", func(t *testing.T, priv string, _ func(string, ...string) string) {
			looseFile(t, priv, strings.Repeat("4", 40), []byte("blob 01\x00x"))
		}},
		{"a tree naming a missing blob", func(t *testing.T, priv string, git func(string, ...string) string) {
			git(fmt.Sprintf("100644 blob %s\tgone\n", strings.Repeat("5", 40)), "mktree", "--missing")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cache, priv, git, _ := privateObjects(t)
			git("fine\n", "hash-object", "-w", "--stdin")
			c.plant(t, priv, git)
			if err := SendLoose(t.Context(), cache, priv); err == nil {
				t.Error("sent")
			}
			// Well-formed objects before the bad one may have been
			// written, unreferenced, as by a push that failed; nothing
			// broken was.
			if out, err := exec.Command("git", "-C", cache.Dir, "fsck", "--strict", "--no-dangling").CombinedOutput(); err != nil {
				t.Errorf("git fsck of the cache after the refused send: %v: %s", err, out)
			}
		})
	}

	t.Run("links and pipes", func(t *testing.T) {
		t.Parallel()
		cache, priv, git, gits := privateObjects(t)
		os.MkdirAll(filepath.Join(priv, "66"), 0o755)
		os.Symlink("/etc/passwd", filepath.Join(priv, "66", strings.Repeat("6", 38)))
		if err := syscallMkfifo(filepath.Join(priv, "66", strings.Repeat("7", 38))); err != nil {
			t.Fatal(err)
		}
		good := git("fine\n", "hash-object", "-w", "--stdin")
		if err := SendLoose(t.Context(), cache, priv); err != nil || *gits != 1 || !has(cache.Dir, good) {
			t.Errorf("SendLoose = %v after %d git processes; the object sent: %v", err, *gits, has(cache.Dir, good))
		}
	})
	t.Run("a pack", func(t *testing.T) {
		t.Parallel()
		cache, priv, git, _ := privateObjects(t)
		git("fine\n", "hash-object", "-w", "--stdin")
		os.MkdirAll(filepath.Join(priv, "pack"), 0o755)
		os.WriteFile(filepath.Join(priv, "pack", "pack-x.pack"), []byte("PACK"), 0o644)
		if err := SendLoose(t.Context(), cache, priv); !errors.Is(err, ErrNotLoose) {
			t.Errorf("SendLoose = %v, want ErrNotLoose", err)
		}
	})
}

// A canceled send stops reading.
func TestSendLooseStopsWhenCanceled(t *testing.T) {
	t.Parallel()
	cache, priv, git, _ := privateObjects(t)
	git("fine\n", "hash-object", "-w", "--stdin")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := SendLoose(ctx, cache, priv); err == nil {
		t.Error("a canceled send succeeded")
	}
}

// parseLooseHeader accepts exactly git's own headers: whatever it accepts
// is "<type> <size>\0" written back the same, and every such header of a
// known type is accepted with its size.
func FuzzParseLooseHeader(f *testing.F) {
	for _, s := range []string{"blob 0\x00", "commit 123\x00rest", "tree 01\x00", "tag -1\x00", "blob 12", "blob  3\x00", "Blob 3\x00", "blob 99999999999999999999\x00"} {
		f.Add([]byte(s), "blob", int64(3))
	}
	names := map[byte]string{1: "commit", 2: "tree", 3: "blob", 4: "tag"}
	f.Fuzz(func(t *testing.T, b []byte, typeName string, size int64) {
		if typ, n, hl, ok := parseLooseHeader(b); ok {
			if want := fmt.Sprintf("%s %d\x00", names[typ], n); string(b[:hl]) != want {
				t.Fatalf("parsed %q as %q", b[:hl], want)
			}
		}
		if _, known := packTypes[typeName]; !known || size < 0 || size > maxLooseObject {
			return
		}
		h := fmt.Sprintf("%s %d\x00", typeName, size)
		typ, n, hl, ok := parseLooseHeader([]byte(h + "data"))
		if !ok || names[typ] != typeName || n != size || hl != len(h) {
			t.Fatalf("%q parsed as %d %d %d %v", h, typ, n, hl, ok)
		}
	})
}

// The size an entry's header carries is the size written.
func TestPackEntryHeader(t *testing.T) {
	t.Parallel()
	for _, size := range []int64{0, 1, 15, 16, 127, 128, 2047, 2048, 1 << 20, maxLooseObject} {
		var b [16]byte
		n := packEntryHeader(b[:], 3, size)
		typ := b[0] >> 4 & 7
		got := int64(b[0] & 0x0f)
		shift := 4
		for i := 1; i < n; i++ {
			if b[i-1]&0x80 == 0 {
				t.Fatalf("size %d: byte %d follows one without the high bit", size, i)
			}
			got |= int64(b[i]&0x7f) << shift
			shift += 7
		}
		if b[n-1]&0x80 != 0 || typ != 3 || got != size {
			t.Errorf("size %d: header %x reads type %d size %d", size, b[:n], typ, got)
		}
	}
}

func syscallMkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
