// Package harnesstest runs the real agent harnesses in tests: it installs
// their npm packages into a cache shared by test runs, and serves a
// scripted model on loopback that each harness is pointed at, deciding
// every answer from the request it gets.
package harnesstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var installMu sync.Mutex

// NPMBin installs pkg@version (once per cache) and returns the path of its
// executable bin: a name in node_modules/.bin, or a path under
// node_modules when it contains a slash (packages that ship a native
// binary without a bin entry). The test is skipped, saying why, only when
// npm is missing or the registry cannot be reached; scripts/test.sh
// installs npm.
func NPMBin(t testing.TB, pkg, version, bin string) string {
	t.Helper()
	installMu.Lock()
	defer installMu.Unlock()
	cache := os.Getenv("BATON_TEST_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			t.Skipf("no cache directory for npm installs: %v", err)
		}
		cache = filepath.Join(base, "baton-test")
	}
	dir := filepath.Join(cache, strings.NewReplacer("@", "", "/", "-").Replace(pkg)+"-"+version)
	path := filepath.Join(dir, "node_modules", ".bin", bin)
	if strings.Contains(bin, "/") {
		path = filepath.Join(dir, "node_modules", filepath.FromSlash(bin))
	}
	if _, err := os.Stat(path); err == nil {
		return path
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skipf("npm is not installed, so %s cannot be: %v", pkg, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--loglevel=error", pkg+"@"+version)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm install %s@%s failed (is the registry reachable?): %v\n%s", pkg, version, err, out)
	}
	return path
}
