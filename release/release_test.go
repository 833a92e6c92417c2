// Package release_test checks what baton ships, as its users install it.
// A snapshot release of this platform is built once per run with
// GoReleaser and the repository's own configuration (archive, checksums,
// SBOM, deb, rpm, and both images through podman), and built again from
// another checkout to show that checksums.txt comes out the same. Then:
// install.sh against the snapshot served on loopback, the npm packages
// made from it, the deb and rpm installed on clean Debian systems whose
// systemd starts their units, the images run, and docs/deploy.md's
// container recipe. Each part skips, saying why, where its tool
// (goreleaser, npm, podman, debootstrap) is missing; scripts/test.sh
// installs them, and fetches what they download first (TestPrefetch).
package release_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// repo is the repository root.
var repo = func() string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}()

// cleanups run after every test: the snapshot's directories and images.
var cleanups []func()

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range slices.Backward(cleanups) {
		f()
	}
	os.Exit(code)
}

// snapshotTag is the tag the snapshot's commit carries: a release
// candidate, as the snapshot stands for, so no `latest` image is made.
const snapshotTag = "v0.9.0-rc.1"

// imageRepos are the images the release builds, by GoReleaser's id.
var imageRepos = map[string]string{"serve": "ghcr.io/baton-agent/baton", "worker": "ghcr.io/baton-agent/baton-worker"}

// build is one GoReleaser snapshot of this platform from a copy of the
// working tree in dir: its dist directory, and what GoReleaser said.
type build struct {
	dist   string
	output string
	images bool
}

// buildSnapshot copies the working tree into dir as a repository of one
// commit (at time at, so two copies are one commit) and runs GoReleaser's
// snapshot there; with a base image, podman builds the images on it as
// `docker buildx` would on debian:trixie-slim ("" for no images). It
// neither fails nor skips t: it runs once for every test.
func buildSnapshot(t testing.TB, dir string, at time.Time, base string) (build, error) {
	t.Helper()
	images := base != ""
	b := build{dist: filepath.Join(dir, "dist"), images: images}
	src := filepath.Join(dir, "src")
	if err := copyTree(src, at); err != nil {
		return b, err
	}
	cfg, err := hostConfig(b.dist, base)
	if err != nil {
		return b, err
	}
	path := filepath.Join(dir, "goreleaser.yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return b, err
	}
	// No signing (it needs the workflow's OIDC identity), no Homebrew cask
	// (it needs the macOS archives), nothing published.
	skip := "sign,homebrew"
	env := append(os.Environ(), "HOMEBREW_TAP_TOKEN=unused", "PWD="+src)
	if images {
		shims := filepath.Join(dir, "bin")
		if err := os.MkdirAll(shims, 0o755); err != nil {
			return b, err
		}
		if err := os.WriteFile(filepath.Join(shims, "docker"), []byte(dockerShim()), 0o755); err != nil {
			return b, err
		}
		conf, err := podmanConf()
		if err != nil {
			return b, err
		}
		env = append(os.Environ(), "CONTAINERS_CONF="+conf, "HOMEBREW_TAP_TOKEN=unused", "PWD="+src, "PATH="+shims+string(os.PathListSeparator)+os.Getenv("PATH"))
	} else {
		skip += ",docker"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "goreleaser", "release", "--snapshot", "--clean", "--config", path, "--skip="+skip)
	cmd.Dir = src
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	b.output = string(out)
	if err != nil {
		return b, fmt.Errorf("goreleaser release --snapshot: %w", err)
	}
	return b, nil
}

// dockerShim is `docker` as GoReleaser's snapshot calls it (`docker
// info`, `docker buildx build`), answered by podman. podman keeps what it
// builds, which is what --load asks of buildx; --format docker keeps the
// HEALTHCHECK in the image's configuration, as buildx does.
func dockerShim() string {
	podman := "podman " + strings.Join(podmanArgs(), " ")
	return `#!/bin/sh
set -eu
case "$1" in
info) exec ` + podman + ` info >/dev/null ;;
buildx)
	[ "$2" = build ] || { echo "docker (podman): no buildx $2" >&2; exit 1; }
	shift 2
	for a in "$@"; do
		shift
		[ "$a" = --load ] || set -- "$@" "$a"
	done
	exec ` + podman + ` build --format docker "$@"
	;;
esac
echo "docker (podman): no $1" >&2
exit 1
`
}

// copyTree copies the working tree (what git tracks, and what it would
// track) into dst as a repository of one commit made at time at, tagged
// snapshotTag, with an origin, as a release workflow's checkout is:
// GoReleaser records no commit for a snapshot without a remote, and its
// hooks write into the tree.
func copyTree(dst string, at time.Time) error {
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
	date := at.UTC().Format(time.RFC3339)
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=release test", "-c", "user.email=release@example.com", "commit", "-qm", "snapshot"},
		{"-c", "user.name=release test", "-c", "user.email=release@example.com", "tag", "-a", "-m", snapshotTag, snapshotTag},
		{"remote", "add", "origin", "https://github.com/baton-agent/baton.git"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dst
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %w\n%s", args, err, out)
		}
	}
	return nil
}

// hostConfig is .goreleaser.yaml building only this platform, into dist,
// its images on base ("" for no images). Everything else is the
// release's own.
func hostConfig(dist, base string) ([]byte, error) {
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
	}
	images, _ := cfg["dockers_v2"].([]any)
	if base != "" && len(images) == 0 {
		return nil, fmt.Errorf(".goreleaser.yaml builds no images")
	}
	for _, i := range images {
		image := i.(map[string]any)
		image["platforms"] = []string{"linux/" + runtime.GOARCH}
		image["build_args"] = map[string]string{"BASE": base}
	}
	cfg["dist"] = dist
	return yaml.Marshal(cfg)
}

var (
	snapOnce sync.Once
	snap     build
	snapErr  error
)

// snapshot is the release every test reads, built once per test process
// (with the images when podman and a Debian root are here).
func snapshot(t testing.TB) build {
	t.Helper()
	need(t, "goreleaser")
	need(t, "cyclonedx-gomod")
	base := ""
	if _, err := exec.LookPath("podman"); err == nil && runtime.GOOS == "linux" {
		base = imageBase.image(t)
	}
	snapOnce.Do(func() {
		dir, err := os.MkdirTemp("", "baton-release-")
		if err != nil {
			snapErr = err
			return
		}
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
		start := time.Now()
		snap, snapErr = buildSnapshot(t, dir, snapshotTime, base)
		if base != "" {
			cleanups = append(cleanups, removeImages)
		}
		t.Logf("the snapshot release took %s", time.Since(start).Round(time.Second))
	})
	if snapErr != nil {
		t.Fatalf("%v\n%s", snapErr, tail(snap.output))
	}
	return snap
}

// snapshotTime is when the snapshot's commit was made: the same for
// every copy, so that two copies are one commit.
var snapshotTime = time.Now().Truncate(time.Second)

// removeImages removes the snapshot's images (their layers stay in
// podman's cache for the next run).
func removeImages() {
	for _, r := range imageRepos {
		out, err := runPodman("images", "-q", "--filter", "reference="+r)
		if err != nil {
			continue
		}
		for _, id := range strings.Fields(out) {
			_, _ = runPodman("rmi", "-f", id)
		}
	}
}

func TestGoReleaserCheck(t *testing.T) {
	need(t, "goreleaser")
	t.Parallel()
	cmd := exec.Command("goreleaser", "check")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goreleaser check: %v\n%s", err, out)
	}
}

// release is what the snapshot holds.
type release struct {
	dist, version, archive string
	images                 bool
	sums                   map[string]string
}

var archiveRE = regexp.MustCompile(`^baton_(.+)_` + runtime.GOOS + `_` + runtime.GOARCH + `\.tar\.gz$`)

func readRelease(t testing.TB) release {
	t.Helper()
	b := snapshot(t)
	r, err := readDist(b.dist)
	if err != nil {
		t.Fatal(err)
	}
	r.images = b.images
	return r
}

func readDist(dist string) (release, error) {
	r := release{dist: dist, sums: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		return r, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			return r, fmt.Errorf("checksums.txt line %q", line)
		}
		r.sums[name] = sum
		if m := archiveRE.FindStringSubmatch(name); m != nil {
			r.archive, r.version = name, m[1]
		}
	}
	if r.archive == "" {
		return r, fmt.Errorf("checksums.txt names no archive for %s/%s:\n%s", runtime.GOOS, runtime.GOARCH, b)
	}
	return r, nil
}

// The snapshot: an archive with both binaries, README, licence,
// completions and the systemd units; its checksum; a CycloneDX SBOM beside
// it; deb and rpm packages installing the binaries, the units and the
// user they run as; and both binaries say their version and commit.
func TestSnapshotRelease(t *testing.T) {
	t.Parallel()
	r := readRelease(t)
	if strings.Contains(r.version, "+") {
		t.Errorf("the snapshot's version %q holds a +, which no image tag may", r.version)
	}
	files := archiveFiles(t, filepath.Join(r.dist, r.archive))
	want := []string{"baton", "baton-hook", "README.md", "LICENSE", "completions/baton.bash", "completions/baton.zsh",
		"completions/baton.fish", "deploy/systemd/baton-serve.service", "deploy/systemd/baton-worker.service"}
	if runtime.GOOS == "linux" {
		want = append(want, "baton-box-init")
	}
	for _, want := range want {
		if _, ok := files[want]; !ok {
			t.Errorf("%s lacks %s (it has %v)", r.archive, want, keys(files))
		}
	}
	var sbom struct {
		BOMFormat    string `json:"bomFormat"`
		SerialNumber string `json:"serialNumber"`
		Metadata     struct {
			Timestamp string `json:"timestamp"`
			Component struct {
				Version string `json:"version"`
			} `json:"component"`
		} `json:"metadata"`
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
	if sbom.SerialNumber != "" || sbom.Metadata.Timestamp != "" {
		t.Errorf("the SBOM has serial %q and timestamp %q: two builds of one commit would differ", sbom.SerialNumber, sbom.Metadata.Timestamp)
	}

	dir := t.TempDir()
	for _, name := range []string{"baton", "baton-hook"} {
		writeFile(t, filepath.Join(dir, name), string(files[name]), 0o755)
	}
	out, err := exec.Command(filepath.Join(dir, "baton"), "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Version, Commit string }
	if err := json.Unmarshal(out, &v); err != nil || v.Version != r.version || len(v.Commit) != 40 {
		t.Errorf("baton version --json = %s (%v), want version %s and a full commit", out, err, r.version)
	}
	out, err = exec.Command(filepath.Join(dir, "baton-hook"), "--version").Output()
	if want := "baton-hook " + r.version + " (commit " + v.Commit[:min(12, len(v.Commit))]; err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("baton-hook --version = %q, %v; want it to start %q", out, err, want)
	}

	if runtime.GOOS == "linux" {
		// baton starts the baton-box-init beside it as its boxes' init:
		// the release builds them as one build.
		writeFile(t, filepath.Join(dir, "baton-box-init"), string(files["baton-box-init"]), 0o755)
		out, err := exec.Command(filepath.Join(dir, "baton"), "doctor", "--json", "--no-probe").Output()
		var doc struct {
			Sandbox struct {
				Init struct {
					Own bool   `json:"own"`
					Why string `json:"why"`
				} `json:"init"`
			} `json:"sandbox"`
		}
		if jerr := json.Unmarshal(out, &doc); jerr != nil || doc.Sandbox.Init.Own {
			t.Errorf("baton doctor --json of the archive's baton: init %+v (%v, %v); want the archive's baton-box-init, the same build",
				doc.Sandbox.Init, err, jerr)
		}

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
				"./usr/lib/systemd/system/baton-worker.service", "./usr/lib/sysusers.d/baton.conf", "./usr/share/bash-completion/completions/baton",
				// Debian Policy 12.5: every package has its copyright file.
				"./usr/share/doc/baton/copyright"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("%s lacks %s:\n%s", filepath.Base(debs[0]), want, out)
				}
			}
		}
	}
}

// Two builds of one commit from two checkouts give the same
// checksums.txt: archives, SBOMs and packages carry nothing of when or
// where they were built. (The images are not in checksums.txt; the
// second build leaves them out.)
func TestReproducibleBuild(t *testing.T) {
	t.Parallel()
	first := readRelease(t)
	second, err := buildSnapshot(t, t.TempDir(), snapshotTime, "")
	if err != nil {
		t.Fatalf("%v\n%s", err, tail(second.output))
	}
	r, err := readDist(second.dist)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.sums) != len(first.sums) {
		t.Errorf("the second build's checksums.txt names %v, the first's %v", keys(r.sums), keys(first.sums))
	}
	for name, sum := range first.sums {
		if r.sums[name] == sum {
			continue
		}
		t.Errorf("%s differs between two builds of one commit", name)
		if strings.HasSuffix(name, ".tar.gz") {
			a, b := archiveHeaders(t, filepath.Join(first.dist, name)), archiveHeaders(t, filepath.Join(r.dist, name))
			for i := range max(len(a), len(b)) {
				if i >= len(a) || i >= len(b) || a[i] != b[i] {
					t.Errorf("  first member that differs:\n  %s\n  %s", at(a, i), at(b, i))
					break
				}
			}
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(none)"
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// archiveFiles reads a .tar.gz into memory: name → contents.
func archiveFiles(t testing.TB, path string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	readArchive(t, path, func(h *tar.Header, r io.Reader) {
		b, _ := io.ReadAll(r)
		files[h.Name] = b
	})
	return files
}

// archiveHeaders are a .tar.gz's members, in order, as one line each of
// what a build could change.
func archiveHeaders(t testing.TB, path string) []string {
	t.Helper()
	var out []string
	readArchive(t, path, func(h *tar.Header, r io.Reader) {
		out = append(out, fmt.Sprintf("%s mode %o uid %d gid %d %s/%s mtime %s size %d", h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime.UTC().Format(time.RFC3339), h.Size))
	})
	return out
}

func readArchive(t testing.TB, path string, each func(*tar.Header, io.Reader)) {
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
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		each(h, tr)
	}
}
