// Package harnesstest runs the real agent harnesses in tests: it installs
// their npm packages into a cache shared by test runs, and serves a
// scripted model on loopback that each harness is pointed at, deciding
// every answer from the request it gets.
package harnesstest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-agent/baton/internal/testenv"
)

var installMu sync.Mutex

// NPMBin installs pkg@version (once per cache) and returns the path of its
// executable bin: a name in node_modules/.bin, or a path under
// node_modules when it contains a slash (packages that ship a native
// binary without a bin entry). When npm is missing or the registry
// cannot be reached, the test is skipped, saying why, in an everyday run,
// and fails in a run of every test (BATON_TEST_ALL, as scripts/test.sh
// and CI run): there a skip would pass a run that tested nothing.
func NPMBin(t testing.TB, pkg, version, bin string) string {
	t.Helper()
	return NPM{Pkg: pkg, Version: version, Bin: bin}.Install(t)
}

// NPM is one package to install for a test.
type NPM struct {
	Pkg, Version string
	// Bin is the executable to return: a name in node_modules/.bin, or a
	// path under node_modules when it contains a slash.
	Bin string
	// Stubs names dependencies (name@version) that the registry reachable
	// from CI does not serve, installed as empty local packages through
	// npm overrides so the rest of the tree installs. Only for
	// dependencies the code under test never loads: pi 1.5.2 bundles its
	// CLI, so pi-tui's marked-cjk-friendly (missing from that registry)
	// is never required at run time.
	Stubs []string
}

// Install installs n (once per cache) and returns the path of n.Bin.
func (n NPM) Install(t testing.TB) string {
	t.Helper()
	installMu.Lock()
	defer installMu.Unlock()
	cache, err := testenv.CacheDir()
	if err != nil {
		unavailable(t, "no cache directory for npm installs: %v", err)
	}
	dir := filepath.Join(cache, strings.NewReplacer("@", "", "/", "-").Replace(n.Pkg)+"-"+n.Version)
	path := filepath.Join(dir, "node_modules", ".bin", n.Bin)
	if strings.Contains(n.Bin, "/") {
		path = filepath.Join(dir, "node_modules", filepath.FromSlash(n.Bin))
	}
	if _, err := os.Stat(path); err == nil {
		return path
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable(t, "npm is not installed, so %s cannot be: %v", n.Pkg, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if len(n.Stubs) > 0 {
		if err := writeStubs(dir, n); err != nil {
			t.Fatal(err)
		}
	}
	// Said before and after: a first install takes minutes, and
	// scripts/test.sh shows these lines as its progress.
	t.Logf("npm install %s@%s into %s (once per cache)", n.Pkg, n.Version, dir)
	start := time.Now()
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--loglevel=error", n.Pkg+"@"+n.Version)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		unavailable(t, "npm install %s@%s failed (is the registry reachable?): %v\n%s", n.Pkg, n.Version, err, out)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("npm install %s@%s gave no %s: %v", n.Pkg, n.Version, n.Bin, err)
	}
	t.Logf("installed %s@%s in %s", n.Pkg, n.Version, time.Since(start).Round(time.Second))
	return path
}

// unavailable ends a test whose outside program cannot be installed:
// skipped in an everyday run, failed in a run of every test.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if testenv.All() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// writeStubs writes dir/package.json with n's stubs as overrides, and an
// empty package for each under dir/stubs/.
func writeStubs(dir string, n NPM) error {
	overrides := map[string]string{}
	for _, s := range n.Stubs {
		name, version, _ := strings.Cut(s[1:], "@")
		name = s[:1] + name
		sd := filepath.Join(dir, "stubs", strings.ReplaceAll(name, "/", "-"))
		if err := os.MkdirAll(sd, 0o755); err != nil {
			return err
		}
		pj, _ := json.Marshal(map[string]string{"name": name, "version": version, "main": "index.js"})
		if err := os.WriteFile(filepath.Join(sd, "package.json"), pj, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(sd, "index.js"), []byte("module.exports = {};\n"), 0o644); err != nil {
			return err
		}
		overrides[name] = "file:./" + filepath.ToSlash(filepath.Join("stubs", filepath.Base(sd)))
	}
	pj, _ := json.MarshalIndent(map[string]any{"private": true, "overrides": overrides}, "", "  ")
	return os.WriteFile(filepath.Join(dir, "package.json"), pj, 0o644)
}

// NodeDir installs Node.js version from the npm registry (the
// node-<os>-<arch> packages ship the binary) and returns the directory
// holding its node executable, to put first on PATH for a harness that
// needs a newer Node than the machine's (pi 1.x needs Node 22.19 or
// later; Debian's is older).
func NodeDir(t testing.TB, version string) string {
	t.Helper()
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" {
		t.Skipf("no Node.js package on npm for %s", runtime.GOARCH)
	}
	pkg := "node-" + runtime.GOOS + "-" + arch
	return filepath.Dir(NPM{Pkg: pkg, Version: version, Bin: pkg + "/bin/node"}.Install(t))
}
