package main

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// builtBinaries returns a directory holding baton, baton-hook and
// baton-box-init built from this tree, as `go install ./cmd/...` puts
// them. The directory is kept between runs under os.TempDir(), named by
// what the binaries are built from: the test binary's Go build ID, which
// this package's sources and every dependency of the commands feed, the
// companions' own sources, and GOFLAGS (-buildvcs decides whether baton
// may use the baton-box-init beside it). A run of unchanged code so links
// none again (about 6 s of CPU); a changed tree gets a new directory,
// made whole before it is renamed into place, so runs at once never see
// half of one.
func builtBinaries() (string, error) {
	key, err := buildKey()
	if err != nil {
		return "", err
	}
	root := os.TempDir()
	dir := filepath.Join(root, "baton-e2e-bin-"+key)
	pruneBuilt(root, dir)
	if ours(dir) {
		now := time.Now()
		_ = os.Chtimes(dir, now, now) // in use: not pruned
		return dir, nil
	}
	tmp, err := os.MkdirTemp(root, "baton-e2e-build-*")
	if err != nil {
		return "", err
	}
	// One go build for all, so they compile and link at once, and are
	// the same build.
	if out, err := exec.Command("go", "build", "-o", tmp+string(filepath.Separator), ".", "../baton-hook", "../baton-box-init").CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp) // another run put the same build there first
		if !ours(dir) {
			return "", err
		}
	}
	return dir, nil
}

// ours reports whether dir is a finished build this user made: a real
// directory (no link), of this user, open to no one else, holding both
// commands. A name in a shared temp directory can be taken by anyone;
// what another user put there is never run.
func ours(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return false
	}
	for _, name := range []string{"baton", "baton-hook", "baton-box-init"} {
		if b, err := os.Lstat(filepath.Join(dir, name)); err != nil || !b.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// buildKey names the binaries' sources: the test binary's Go build ID, a
// hash of the companions' files, and GOFLAGS.
func buildKey() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := elf.Open(exe)
	if err != nil {
		return "", err
	}
	defer f.Close()
	note := f.Section(".note.go.buildid")
	if note == nil {
		return "", errors.New("the test binary has no Go build ID")
	}
	id, err := note.Data()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(id)
	fmt.Fprintf(h, "GOFLAGS=%s\n", os.Getenv("GOFLAGS"))
	companions, err := filepath.Glob(filepath.Join("..", "baton-*", "*.go"))
	if err != nil {
		return "", err
	}
	for _, p := range companions {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// pruneBuilt removes the builds of other trees unused for a day, and
// builds that never finished.
func pruneBuilt(root, keep string) {
	old := time.Now().Add(-24 * time.Hour)
	for _, pattern := range []string{"baton-e2e-bin-*", "baton-e2e-build-*"} {
		dirs, _ := filepath.Glob(filepath.Join(root, pattern))
		for _, d := range dirs {
			if fi, err := os.Lstat(d); d != keep && err == nil && fi.IsDir() && fi.ModTime().Before(old) {
				_ = os.RemoveAll(d)
			}
		}
	}
}
