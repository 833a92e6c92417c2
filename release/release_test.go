// Package release_test checks what baton ships: the GoReleaser
// configuration and a snapshot build of this platform (archive,
// checksums, SBOM, deb and rpm), install.sh against that snapshot served
// on loopback, the npm packages made from it, and the container images
// built from it and run. Each part skips, saying why, where its tool
// (goreleaser, npm, podman) is missing; scripts/test.sh installs them.
package release_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/baton-agent/baton/internal/testenv"
)

// repo is the repository root.
var repo = func() string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}()

var (
	snapOnce sync.Once
	snapDir  string
	snapErr  error
	snapOut  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if snapDir != "" {
		os.RemoveAll(snapDir)
	}
	os.Exit(code)
}

// need skips the test when a program is missing.
func need(t *testing.T, prog string) string {
	t.Helper()
	testenv.Heavy(t, "builds and installs a release with "+prog)
	p, err := exec.LookPath(prog)
	if err != nil {
		t.Skipf("%s is not installed (scripts/test.sh installs it)", prog)
	}
	return p
}

// snapshot builds the release for this platform alone, once per test
// process, with GoReleaser and the repository's own configuration
// narrowed to runtime.GOOS/GOARCH; it returns the dist directory.
func snapshot(t *testing.T) string {
	t.Helper()
	need(t, "goreleaser")
	need(t, "cyclonedx-gomod")
	snapOnce.Do(func() {
		snapDir, snapErr = os.MkdirTemp("", "baton-release-")
		if snapErr != nil {
			return
		}
		cfg, err := hostConfig(filepath.Join(snapDir, "dist"))
		if err != nil {
			snapErr = err
			return
		}
		path := filepath.Join(snapDir, "goreleaser.yaml")
		if snapErr = os.WriteFile(path, cfg, 0o644); snapErr != nil {
			return
		}
		src := filepath.Join(snapDir, "src")
		if snapErr = copyTree(src); snapErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		// No images (they need docker buildx; TestServeImage and
		// TestWorkerImage build them with podman), no signing (it needs the
		// workflow's OIDC identity), nothing published.
		cmd := exec.CommandContext(ctx, "goreleaser", "release", "--snapshot", "--clean", "--config", path,
			"--skip=docker,sign,homebrew")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "HOMEBREW_TAP_TOKEN=unused", "PWD="+src)
		out, err := cmd.CombinedOutput()
		snapOut = string(out)
		if err != nil {
			snapErr = fmt.Errorf("goreleaser release --snapshot: %w", err)
		}
	})
	if snapErr != nil {
		t.Fatalf("%v\n%s", snapErr, tail(snapOut))
	}
	return filepath.Join(snapDir, "dist")
}

// copyTree copies the working tree (what git tracks, and what it would
// track) into dst as a repository of one commit with an origin, as a
// release workflow's checkout is: GoReleaser records no commit for a
// snapshot without a remote, and its hooks write into the tree.
func copyTree(dst string) error {
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = repo
	out, err := ls.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		fi, err := os.Lstat(filepath.Join(repo, name))
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the working tree, or a link
		}
		b, err := os.ReadFile(filepath.Join(repo, name))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, name)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=release test", "-c", "user.email=release@example.com", "commit", "-qm", "snapshot"},
		{"remote", "add", "origin", "https://github.com/baton-agent/baton.git"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dst
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %w\n%s", args, err, out)
		}
	}
	return nil
}

// hostConfig is .goreleaser.yaml building only this platform, into dist.
func hostConfig(dist string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(repo, ".goreleaser.yaml"))
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return nil, err
	}
	builds, _ := cfg["builds"].([]any)
	if len(builds) == 0 {
		return nil, fmt.Errorf(".goreleaser.yaml has no builds")
	}
	for _, b := range builds {
		build := b.(map[string]any)
		build["goos"] = []string{runtime.GOOS}
		build["goarch"] = []string{runtime.GOARCH}
		// Without -trimpath the build reuses what the other tests compiled:
		// a minute less, and nothing this test checks depends on it.
		delete(build, "flags")
	}
	cfg["dist"] = dist
	return yaml.Marshal(cfg)
}

func tail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}

func TestGoReleaserCheck(t *testing.T) {
	need(t, "goreleaser")
	cmd := exec.Command("goreleaser", "check")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goreleaser check: %v\n%s", err, out)
	}
}

// release is what the snapshot holds.
type release struct {
	dist, version, archive string
	sums                   map[string]string
}

var archiveRE = regexp.MustCompile(`^baton_(.+)_` + runtime.GOOS + `_` + runtime.GOARCH + `\.tar\.gz$`)

func readRelease(t *testing.T) release {
	t.Helper()
	r := release{dist: snapshot(t), sums: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(r.dist, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("checksums.txt line %q", line)
		}
		r.sums[name] = sum
		if m := archiveRE.FindStringSubmatch(name); m != nil {
			r.archive, r.version = name, m[1]
		}
	}
	if r.archive == "" {
		t.Fatalf("checksums.txt names no archive for %s/%s:\n%s", runtime.GOOS, runtime.GOARCH, b)
	}
	return r
}

// The snapshot: an archive with the binary, README, licence, completions
// and the systemd units; its checksum; a CycloneDX SBOM beside it; deb
// and rpm packages installing the binary and the units; and the binary
// says its version and commit.
func TestSnapshotRelease(t *testing.T) {
	r := readRelease(t)
	files := archiveFiles(t, filepath.Join(r.dist, r.archive))
	for _, want := range []string{"baton", "baton-hook", "README.md", "LICENSE", "completions/baton.bash", "completions/baton.zsh",
		"completions/baton.fish", "deploy/systemd/baton-serve.service", "deploy/systemd/baton-worker.service"} {
		if _, ok := files[want]; !ok {
			t.Errorf("%s lacks %s (it has %v)", r.archive, want, keys(files))
		}
	}
	var sbom struct {
		BOMFormat  string `json:"bomFormat"`
		Components []struct {
			Name string `json:"name"`
		} `json:"components"`
	}
	b, err := os.ReadFile(filepath.Join(r.dist, r.archive+".cdx.json"))
	if err != nil {
		t.Fatalf("no SBOM beside the archive: %v", err)
	}
	if err := json.Unmarshal(b, &sbom); err != nil || sbom.BOMFormat != "CycloneDX" {
		t.Fatalf("SBOM: %v, format %q", err, sbom.BOMFormat)
	}
	found := false
	for _, c := range sbom.Components {
		found = found || c.Name == "github.com/landlock-lsm/go-landlock"
	}
	if !found {
		t.Errorf("the SBOM lists %d components but not go-landlock, which baton links", len(sbom.Components))
	}

	bin := filepath.Join(t.TempDir(), "baton")
	if err := os.WriteFile(bin, files["baton"], 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Version, Commit string }
	if err := json.Unmarshal(out, &v); err != nil || v.Version != r.version || len(v.Commit) != 40 {
		t.Errorf("baton version --json = %s (%v), want version %s and a full commit", out, err, r.version)
	}

	if runtime.GOOS == "linux" {
		debs, _ := filepath.Glob(filepath.Join(r.dist, "*.deb"))
		rpms, _ := filepath.Glob(filepath.Join(r.dist, "*.rpm"))
		if len(debs) != 1 || len(rpms) != 1 {
			t.Fatalf("packages: %v %v, want one deb and one rpm", debs, rpms)
		}
		if _, err := exec.LookPath("dpkg-deb"); err == nil {
			out, err := exec.Command("dpkg-deb", "-c", debs[0]).CombinedOutput()
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"./usr/bin/baton", "./usr/bin/baton-hook", "./usr/lib/systemd/system/baton-serve.service",
				"./usr/lib/systemd/system/baton-worker.service", "./usr/share/bash-completion/completions/baton"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("%s lacks %s:\n%s", filepath.Base(debs[0]), want, out)
				}
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// archiveFiles reads a .tar.gz into memory: name → contents.
func archiveFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
}

// serveRelease serves dist as GitHub serves a release: under
// /latest/download/ and /download/v<version>/; tamper changes what is
// served for a file.
func serveRelease(t *testing.T, r release, tamper map[string][]byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		name := filepath.Base(req.URL.Path)
		dir := filepath.Dir(req.URL.Path)
		if dir != "/latest/download" && dir != "/download/v"+r.version {
			http.NotFound(w, req)
			return
		}
		if b, ok := tamper[name]; ok {
			w.Write(b)
			return
		}
		http.ServeFile(w, req, filepath.Join(r.dist, name))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// install runs install.sh with env and returns its output and error.
func install(t *testing.T, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("sh", filepath.Join(repo, "install.sh"))
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestInstallScript(t *testing.T) {
	r := readRelease(t)
	t.Run("latest", func(t *testing.T) {
		prefix := t.TempDir()
		out, err := install(t, "BATON_BASE_URL="+serveRelease(t, r, nil), "BATON_PREFIX="+prefix)
		if err != nil {
			t.Fatalf("install.sh: %v\n%s", err, out)
		}
		got, err := exec.Command(filepath.Join(prefix, "bin", "baton"), "version").CombinedOutput()
		if err != nil || !strings.Contains(string(got), r.version) {
			t.Errorf("the installed baton says %q, %v; want version %s", got, err, r.version)
		}
		if _, err := os.Stat(filepath.Join(prefix, "bin", "baton-hook")); err != nil {
			t.Errorf("baton-hook was not installed beside baton: %v", err)
		}
	})
	t.Run("a version", func(t *testing.T) {
		prefix := t.TempDir()
		out, err := install(t, "BATON_BASE_URL="+serveRelease(t, r, nil), "BATON_PREFIX="+prefix, "BATON_VERSION=v"+r.version)
		if err != nil {
			t.Fatalf("install.sh: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(prefix, "bin", "baton")); err != nil {
			t.Error(err)
		}
	})
	t.Run("tampered", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(r.dist, r.archive))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Clone(b)
		b[len(b)/2] ^= 0xff
		prefix := t.TempDir()
		out, err := install(t, "BATON_BASE_URL="+serveRelease(t, r, map[string][]byte{r.archive: b}), "BATON_PREFIX="+prefix)
		if err == nil || !strings.Contains(out, "does not match checksums.txt") || !strings.Contains(out, "nothing was installed") {
			t.Errorf("a tampered archive: %v\n%s", err, out)
		}
		if entries, _ := os.ReadDir(prefix); len(entries) != 0 {
			t.Errorf("a refused install left %v in the prefix", entries)
		}
	})
	t.Run("unknown platform", func(t *testing.T) {
		out, err := install(t, "BATON_BASE_URL="+serveRelease(t, r, nil), "BATON_PREFIX="+t.TempDir(), "BATON_ARCH=sparc64")
		if err == nil || !strings.Contains(out, "no baton release for "+runtime.GOOS+"/sparc64") || !strings.Contains(out, "go install") {
			t.Errorf("an unknown platform: %v\n%s", err, out)
		}
	})
	t.Run("no archive for the platform", func(t *testing.T) {
		other := "darwin"
		if runtime.GOOS == "darwin" {
			other = "linux"
		}
		out, err := install(t, "BATON_BASE_URL="+serveRelease(t, r, nil), "BATON_PREFIX="+t.TempDir(), "BATON_OS="+other)
		if err == nil || !strings.Contains(out, "has no archive for "+other) {
			t.Errorf("a platform the release lacks: %v\n%s", err, out)
		}
	})
}

// The npm packages: made from the archives, packed, installed globally
// from the tarballs with nothing fetched from a registry; `baton` is on
// the prefix's PATH and runs, with its install script (the native binary
// in place of the shim) and without (the shim through node).
func TestNPMPackages(t *testing.T) {
	npm := need(t, "npm")
	r := readRelease(t)
	out := t.TempDir()
	gen := exec.Command("go", "run", "./release/npm", "-dist", r.dist, "-out", out)
	gen.Dir = repo
	if b, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("release/npm: %v\n%s", err, b)
	}
	platform := map[string]string{"linux": "linux", "darwin": "darwin", "windows": "win32"}[runtime.GOOS] + "-" +
		map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	pack := func(dir string) string {
		t.Helper()
		cmd := exec.Command(npm, "pack", "--silent", "--pack-destination", out)
		cmd.Dir = filepath.Join(out, dir)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("npm pack %s: %v", dir, err)
		}
		return filepath.Join(out, strings.TrimSpace(string(b)))
	}
	top, plat := pack("baton"), pack("baton-"+platform)
	for _, scripts := range []bool{true, false} {
		prefix := t.TempDir()
		args := []string{"install", "-g", "--prefix", prefix, "--offline", "--no-audit", "--no-fund", plat, top}
		if !scripts {
			args = append(args, "--ignore-scripts")
		}
		cmd := exec.Command(npm, args...)
		cmd.Env = append(os.Environ(), "npm_config_cache="+t.TempDir())
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		bin := filepath.Join(prefix, "bin", "baton")
		got, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil || !strings.Contains(string(got), r.version) {
			t.Errorf("scripts=%v: baton version = %q, %v", scripts, got, err)
		}
		head := make([]byte, 4)
		if f, err := os.Open(bin); err == nil {
			_, _ = io.ReadFull(f, head)
			f.Close()
		}
		native := string(head) == "\x7fELF" || runtime.GOOS != "linux"
		if scripts && !native {
			t.Errorf("with its install script, `baton` on PATH is still the node shim: hooks would pay for node")
		}
		if !scripts && native {
			t.Errorf("--ignore-scripts ran the install script")
		}
	}
}

// podman runs podman as this machine allows: runc (crun refuses hybrid
// cgroups) and no ulimits above the hard limits.
func podman(t *testing.T, args ...string) (string, error) {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = \"cgroupfs\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("runc"); err == nil {
		args = append([]string{"--runtime", "runc"}, args...)
	}
	cmd := exec.Command("podman", args...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// imageContext lays out a build context as GoReleaser's dockers_v2 does:
// the binary under its platform, deploy/images from the repository, and
// the CA bundle of this machine.
func imageContext(t *testing.T, r release) string {
	t.Helper()
	dir := t.TempDir()
	files := archiveFiles(t, filepath.Join(r.dist, r.archive))
	plat := filepath.Join(dir, runtime.GOOS, runtime.GOARCH)
	if err := os.MkdirAll(plat, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"baton", "baton-hook"} {
		if err := os.WriteFile(filepath.Join(plat, b), files[b], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cp := exec.Command("cp", "-R", filepath.Join(repo, "deploy"), dir)
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Skipf("no CA bundle on this machine to put in the image: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "deploy", "images", "ca-certificates.crt"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitReady(t *testing.T, url string) {
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

// The serve image, built from scratch with podman from its Dockerfile:
// it runs as a non-root user, keeps its data in the /data volume, carries
// OCI labels, and answers /readyz and `baton healthcheck` inside.
func TestServeImage(t *testing.T) {
	need(t, "podman")
	r := readRelease(t)
	ctxDir := imageContext(t, r)
	tag := "localhost/baton-test-serve:" + strings.ReplaceAll(r.version, "+", "-")
	if out, err := podman(t, "build", "-q", "--format", "docker", "-f", "deploy/images/serve.Dockerfile",
		"--label", "org.opencontainers.image.version="+r.version, "-t", tag, ctxDir); err != nil {
		t.Fatalf("podman build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = podman(t, "rmi", "-f", tag) })
	out, err := podman(t, "image", "inspect", "--format", "{{.Config.User}}|{{json .Config.Volumes}}|{{index .Config.Labels \"org.opencontainers.image.version\"}}", tag)
	if err != nil || !strings.HasPrefix(out, "65532:65532|") || !strings.Contains(out, `"/data"`) || !strings.Contains(out, r.version) {
		t.Errorf("image config: %q, %v; want user 65532, the /data volume and the version label", out, err)
	}
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	name := fmt.Sprintf("baton-test-serve-%d", port)
	if out, err := podman(t, "run", "-d", "--name", name, "--network", "host", tag,
		"serve", "--addr", addr, "--workers", "0"); err != nil {
		t.Fatalf("podman run: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = podman(t, "rm", "-f", name) })
	waitReady(t, "http://"+addr)
	if out, err := podman(t, "exec", name, "/usr/bin/baton", "healthcheck", "--ready", "--addr", addr); err != nil || !strings.Contains(out, "ok") {
		t.Errorf("baton healthcheck --ready in the container: %v %q", err, out)
	}
	if out, err := podman(t, "exec", name, "/usr/bin/baton", "healthcheck", "--addr", "127.0.0.1:1"); err == nil {
		t.Errorf("healthcheck of nothing passed: %q", out)
	}
}

// debianBase is a Debian image with git, made once with debootstrap (no
// registry is needed) and cached beside the npm installs of the harness
// tests (testenv.CacheDir); podman imports it.
func debianBase(t *testing.T) string {
	t.Helper()
	need(t, "debootstrap")
	const tag = "localhost/baton-test-debian-git:bookworm"
	if _, err := podman(t, "image", "exists", tag); err == nil {
		return tag
	}
	cache, err := testenv.CacheDir()
	if err != nil {
		t.Skipf("no cache directory for the Debian root: %v", err)
	}
	tarball := filepath.Join(cache, "debian-bookworm-git.tar")
	if _, err := os.Stat(tarball); err != nil {
		// Said before and after: it takes minutes, and scripts/test.sh
		// shows these lines as its progress.
		t.Logf("debootstrap bookworm with git into %s (once per cache)", tarball)
		start := time.Now()
		root := t.TempDir()
		cmd := exec.Command("debootstrap", "--variant=minbase", "--include=git,ca-certificates", "bookworm", root, "http://deb.debian.org/debian")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("debootstrap could not make a Debian root: %v\n%s", err, tail(string(out)))
		}
		if err := os.MkdirAll(filepath.Dir(tarball), 0o755); err != nil {
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
	if out, err := podman(t, "import", tarball, tag); err != nil {
		t.Fatalf("podman import: %v\n%s", err, out)
	}
	return tag
}

// TestPrefetch makes the worker image's Debian base, as TestWorkerImage
// does, when scripts/test.sh fetches prerequisites before the timed run
// (testenv.Prefetch).
func TestPrefetch(t *testing.T) {
	testenv.Prefetch(t)
	need(t, "podman")
	debianBase(t)
}

// standIn is docs/agents.md's stand-in agent.
const standIn = `#!/bin/sh
cat >/dev/null
case "$BATON_PHASE" in
plan)      echo "1. Add hello.txt with a greeting." ;;
implement) echo "hello" > hello.txt; echo "Added hello.txt." ;;
review)    echo '{"verdict": "pass", "summary": "hello.txt is there.", "feedback": ""}' ;;
esac
`

// The worker image, on Debian with git (its agent CLIs left out: the
// stand-in agent runs): baton serve with a worker inside it carries a
// delivery on a mounted repository from plan to close.
func TestWorkerImage(t *testing.T) {
	need(t, "podman")
	r := readRelease(t)
	base := debianBase(t)
	ctxDir := imageContext(t, r)
	tag := "localhost/baton-test-worker:" + strings.ReplaceAll(r.version, "+", "-")
	if out, err := podman(t, "build", "-q", "-f", "deploy/images/worker.Dockerfile",
		"--build-arg", "BASE="+base, "--build-arg", "AGENTS=", "-t", tag, ctxDir); err != nil {
		t.Fatalf("podman build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = podman(t, "rmi", "-f", tag) })

	work := t.TempDir()
	repoDir := filepath.Join(work, "app")
	if err := os.MkdirAll(repoDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repoDir, "README.md"), []byte("# app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "agent.sh"), []byte(standIn), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repoDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// The container's user (10001) works in the repository.
	if out, err := exec.Command("chown", "-R", "10001:10001", work).CombinedOutput(); err != nil {
		t.Skipf("cannot hand the repository to the container's user: %v %s", err, out)
	}
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	name := fmt.Sprintf("baton-test-worker-%d", port)
	if out, err := podman(t, "run", "-d", "--name", name, "--network", "host", "-v", work+":/work",
		"-e", "GIT_AUTHOR_NAME=t", "-e", "GIT_AUTHOR_EMAIL=t@example.com", "-e", "GIT_COMMITTER_NAME=t", "-e", "GIT_COMMITTER_EMAIL=t@example.com",
		"-w", "/work/app", tag, "serve", "--addr", addr, "--workers", "1", "--agent", "command:/work/agent.sh", "--poll", "100ms"); err != nil {
		t.Fatalf("podman run: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = podman(t, "rm", "-f", name) })
	url := "http://" + addr
	waitReady(t, url)
	tok, err := podman(t, "exec", name, "cat", "/data/api-token")
	if err != nil {
		t.Fatalf("reading the API token: %v %s", err, tok)
	}
	body := `{"repo":"/work/app","summary":"Add a greeting","checkpoints":[]}`
	req, _ := http.NewRequest("POST", url+"/api/deliveries", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Delivery struct{ ID string } `json:"delivery"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d", resp.StatusCode)
	}
	var d struct {
		Delivery struct {
			Phase     string `json:"phase"`
			RunStatus string `json:"run_status"`
			Error     string `json:"error"`
		} `json:"delivery"`
	}
	if !testenv.Until(2*time.Minute, nil, func() bool {
		resp, err := http.Get(url + "/api/deliveries/" + created.Delivery.ID)
		if err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&d)
			resp.Body.Close()
		}
		return d.Delivery.Phase == "close" || d.Delivery.RunStatus == "failed"
	}) {
		logs, _ := podman(t, "logs", name)
		t.Fatalf("the delivery did not close within 2m: %+v\n%s", d.Delivery, tail(logs))
	}
	if d.Delivery.Phase != "close" || d.Delivery.RunStatus != "succeeded" {
		logs, _ := podman(t, "logs", name)
		t.Fatalf("the delivery ended %+v\n%s", d.Delivery, tail(logs))
	}
	cmd := exec.Command("git", "-c", "safe.directory=*", "show", "main:hello.txt")
	cmd.Dir = repoDir
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "hello\n" {
		t.Errorf("main:hello.txt = %q, %v", out, err)
	}
}
