package release_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
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

// What the release tests need from outside, and how they run it: podman
// as this machine allows, Debian roots made by debootstrap (no container
// registry is reachable here; the release builds on debian:trixie-slim),
// and the worker image's Node.js and agent CLIs as podman's layer cache
// keeps them. TestPrefetch makes all of it before a timed run.

// TestPrefetch makes the Debian roots and the worker image's slow layers
// through the helpers the tests call, and compiles baton as the snapshot
// does, when scripts/test.sh fetches prerequisites before the timed run
// (testenv.Prefetch).
func TestPrefetch(t *testing.T) {
	testenv.Prefetch(t)
	need(t, "podman")
	for _, r := range []debianRoot{imageBase, systemdRoots[0], systemdRoots[1]} {
		start := time.Now()
		tag := r.image(t)
		t.Logf("%s ready in %s", tag, time.Since(start).Round(time.Second))
	}
	start := time.Now()
	workerLayers(t)
	t.Logf("the worker image's Node.js and agent CLIs ready in %s", time.Since(start).Round(time.Second))
	start = time.Now()
	compileRelease(t)
	t.Logf("baton compiled as the release compiles it in %s", time.Since(start).Round(time.Second))
}

// compileRelease compiles baton, baton-hook and baton-box-init as GoReleaser does
// (CGO_ENABLED=0, -trimpath), and baton as its completions hook does (go
// run), so that Go's build cache holds every package when the snapshot
// links them: minutes on a cold cache, which the timed run then does not
// spend.
func compileRelease(t testing.TB) {
	t.Helper()
	for _, args := range [][]string{
		{"build", "-trimpath", "-o", t.TempDir(), "./cmd/baton", "./cmd/baton-hook", "./cmd/baton-box-init"},
		{"build", "-o", t.TempDir(), "./cmd/baton"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// need skips the test when a program is missing.
func need(t testing.TB, prog string) string {
	t.Helper()
	testenv.Heavy(t, "builds and installs a release with "+prog)
	p, err := exec.LookPath(prog)
	if err != nil {
		t.Skipf("%s is not installed (scripts/test.sh installs it)", prog)
	}
	return p
}

// podmanConf is a containers.conf for this machine: cgroupfs (no systemd
// user session to ask) and no ulimits above the hard limits.
var podmanConf = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "baton-release-podman-")
	if err != nil {
		return "", err
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	conf := filepath.Join(dir, "containers.conf")
	return conf, os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = \"cgroupfs\"\n"), 0o644)
})

// podmanArgs are the arguments every podman call starts with: runc where
// it is installed (crun refuses hybrid cgroups).
func podmanArgs() []string {
	if _, err := exec.LookPath("runc"); err == nil {
		return []string{"--runtime", "runc"}
	}
	return nil
}

// podman runs podman and returns its combined output.
func podman(t testing.TB, args ...string) (string, error) {
	t.Helper()
	return runPodman(args...)
}

// runPodman is podman for what runs after the tests (cleanups).
func runPodman(args ...string) (string, error) {
	conf, err := podmanConf()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("podman", append(podmanArgs(), args...)...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustPodman is podman that fails the test on an error.
func mustPodman(t testing.TB, args ...string) string {
	t.Helper()
	out, err := podman(t, args...)
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, tail(out))
	}
	return out
}

// debianRoot is a Debian root made by debootstrap (minbase and the
// packages named), kept as a tarball in testenv.CacheDir and imported
// into podman under a tag that names what it holds.
type debianRoot struct {
	suite   string
	include []string
}

var (
	// imageBase stands for debian:trixie-slim, the images' base.
	imageBase = debianRoot{suite: "trixie", include: []string{"ca-certificates"}}
	// systemdRoots are clean Debian systems with systemd to boot in a
	// container and install the packages on: the current release and
	// the one before, with git for a delivery and openssl for
	// docs/deploy.md's recipe; and rpm in the first for the rpm package
	// (no rpm-based distribution is reachable here).
	systemdRoots = []debianRoot{
		{suite: "trixie", include: []string{"systemd", "systemd-sysv", "ca-certificates", "git", "openssl", "rpm"}},
		{suite: "bookworm", include: []string{"systemd", "systemd-sysv", "ca-certificates", "git", "openssl"}},
	}
)

// localCAs are the certificate authorities this machine adds to its
// trust (Debian's /usr/local/share/ca-certificates): a proxy between
// this machine and the package registries signs with one, so the roots
// made here trust them too, as an image on a mirror of Debian's would.
func localCAs() map[string][]byte {
	cas := map[string][]byte{}
	files, _ := filepath.Glob("/usr/local/share/ca-certificates/*.crt")
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			cas[filepath.Base(f)] = b
		}
	}
	return cas
}

// name says what the root holds: its suite, and a hash of its packages
// and the local CAs in it.
func (r debianRoot) name() string {
	h := sha256.New()
	h.Write([]byte(strings.Join(r.include, ",")))
	cas := localCAs()
	for _, name := range keys(cas) {
		h.Write([]byte(name))
		h.Write(cas[name])
	}
	return "debian-" + r.suite + "-" + hex.EncodeToString(h.Sum(nil)[:4])
}

func (r debianRoot) tag() string { return "localhost/baton-test-" + r.name() + ":latest" }

// rootMu keeps two tests from making one root at once.
var rootMu sync.Mutex

// image returns the podman tag of the root, making it first if this
// machine has none: minutes the first time, nothing after.
func (r debianRoot) image(t testing.TB) string {
	t.Helper()
	need(t, "podman")
	rootMu.Lock()
	defer rootMu.Unlock()
	tag := r.tag()
	if _, err := podman(t, "image", "exists", tag); err == nil {
		return tag
	}
	cache, err := testenv.CacheDir()
	if err != nil {
		t.Skipf("no cache directory for the Debian root: %v", err)
	}
	tarball := filepath.Join(cache, r.name()+".tar")
	if _, err := os.Stat(tarball); err != nil {
		need(t, "debootstrap")
		// Said before and after: it takes minutes, and scripts/test.sh
		// shows these lines as its progress.
		t.Logf("debootstrap %s with %s into %s (once per cache)", r.suite, strings.Join(r.include, ","), tarball)
		start := time.Now()
		root, err := os.MkdirTemp("", "baton-debootstrap-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(root)
		cmd := exec.Command("debootstrap", "--variant=minbase", "--include="+strings.Join(r.include, ","), r.suite, root, "http://deb.debian.org/debian")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("debootstrap could not make a Debian root: %v\n%s", err, tail(string(out)))
		}
		if cas := localCAs(); len(cas) > 0 {
			for name, b := range cas {
				writeFile(t, filepath.Join(root, "usr", "local", "share", "ca-certificates", name), string(b), 0o644)
			}
			if out, err := exec.Command("chroot", root, "update-ca-certificates").CombinedOutput(); err != nil {
				t.Fatalf("update-ca-certificates in the Debian root: %v\n%s", err, out)
			}
		}
		if err := os.MkdirAll(cache, 0o755); err != nil {
			t.Fatal(err)
		}
		tmp := tarball + ".tmp"
		if out, err := exec.Command("tar", "-C", root, "-cf", tmp, ".").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v\n%s", err, out)
		}
		if err := os.Rename(tmp, tarball); err != nil {
			t.Fatal(err)
		}
		t.Logf("made the Debian root in %s", time.Since(start).Round(time.Second))
	}
	mustPodman(t, "import", tarball, tag)
	return tag
}

// workerLayers builds the worker image up to its binaries (the stage
// "agents": git, Node.js, npm and the agent CLIs), with the arguments a
// snapshot builds it with, and tags it so that podman's layer cache
// keeps it when the snapshot's image is removed.
func workerLayers(t testing.TB) {
	t.Helper()
	base := imageBase.image(t)
	mustPodman(t, "build", "-q", "--format", "docker", "--platform", "linux/"+runtime.GOARCH,
		"--build-arg", "BASE="+base, "--target", "agents", "-t", "localhost/baton-test-worker-agents:latest",
		"-f", filepath.Join(repo, "deploy", "images", "worker.Dockerfile"), t.TempDir())
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitReady waits for url/readyz to answer 200.
func waitReady(t testing.TB, url string) {
	t.Helper()
	if !testenv.Until(30*time.Second, nil, func() bool {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("%s/readyz did not answer 200 within 30s", url)
	}
}

func tail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}

// writeFile writes a file or fails the test.
func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
