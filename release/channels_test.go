package release_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The install channels that run on this machine: install.sh and npm. The
// deb and rpm are in packages_test.go, the images in images_test.go. Each
// puts baton-hook where hooks find it, which checkHooks proves.

// checkHooks proves, in an install's own environment, that hooks find
// the release's baton-hook: on PATH (where the plugin's shim and pi's
// extension look) and beside the baton `baton install` resolves (what it
// writes into a harness's settings), and that the hook it writes answers.
// run executes a sh script there (PATH as the install leaves it) and
// returns its combined output.
func checkHooks(t *testing.T, r release, run func(script string) (string, error)) {
	t.Helper()
	if out, err := run("baton-hook --version"); err != nil || !strings.Contains(out, "baton-hook "+r.version) {
		t.Errorf("baton-hook --version from PATH = %q, %v; want the release's %s", out, err, r.version)
	}
	out, err := run(`set -e
export HOME="$(mktemp -d)"
cd "$HOME"
baton install claude --scope user --no-mcp >/dev/null
cat "$HOME/.claude/settings.json"`)
	if err != nil {
		t.Fatalf("baton install claude --scope user: %v\n%s", err, out)
	}
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(out), &settings); err != nil || len(settings.Hooks["SessionStart"]) == 0 || len(settings.Hooks["SessionStart"][0].Hooks) == 0 {
		t.Fatalf("the settings baton install wrote: %v\n%s", err, out)
	}
	command := settings.Hooks["SessionStart"][0].Hooks[0].Command
	prog := firstWord(command)
	if filepath.Base(prog) != "baton-hook" || !filepath.IsAbs(prog) {
		t.Errorf("the hooks baton install wrote run %q, not the baton-hook beside baton: every hook pays for starting all of baton", command)
	}
	if out, err := run(prog + " --version"); err != nil || !strings.Contains(out, "baton-hook "+r.version) {
		t.Errorf("%s --version = %q, %v; want the release's %s", prog, out, err, r.version)
	}
	out, err = run(`set -e
cd "$(mktemp -d)"
baton init >/dev/null
printf '{"session_id":"s1","cwd":"%s","hook_event_name":"SessionStart","source":"startup"}' "$PWD" | ` + command + `
echo "exit $?"`)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "exit 0") || strings.Contains(out, "baton-hook:") {
		t.Errorf("the session-start hook: %v\n%s", err, out)
	}
}

// firstWord is the program of a command line baton wrote: a bare path, or
// one in single quotes (hook.ShellQuote).
func firstWord(command string) string {
	if rest, ok := strings.CutPrefix(command, "'"); ok {
		w, _, _ := strings.Cut(rest, "'")
		return w
	}
	w, _, _ := strings.Cut(command, " ")
	return w
}

// hostRun runs a script with sh on this machine, bin first on PATH.
func hostRun(bin string, env ...string) func(string) (string, error) {
	return func(script string) (string, error) {
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), env...)
		cmd.Env = append(cmd.Env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err
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
	t.Parallel()
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
		checkHooks(t, r, hostRun(filepath.Join(prefix, "bin")))
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
// from the tarballs with nothing fetched from a registry. `baton` and
// `baton-hook` are on the prefix's PATH and run, with the install script
// (the native binaries in place of the shims) and without (the shims
// through node); either way the hooks baton install writes run baton-hook.
func TestNPMPackages(t *testing.T) {
	npm := need(t, "npm")
	t.Parallel()
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
		name := "with its install script"
		if !scripts {
			name = "--ignore-scripts"
		}
		t.Run(name, func(t *testing.T) {
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
			for _, prog := range []string{"baton", "baton-hook"} {
				bin := filepath.Join(prefix, "bin", prog)
				head := make([]byte, 4)
				if f, err := os.Open(bin); err == nil {
					_, _ = io.ReadFull(f, head)
					f.Close()
				}
				native := string(head) == "\x7fELF" || runtime.GOOS != "linux"
				if scripts && !native {
					t.Errorf("with its install script, %s on PATH is still the node shim: every hook would pay for node", prog)
				}
				if !scripts && native {
					t.Errorf("--ignore-scripts ran the install script (%s is native)", prog)
				}
			}
			got, err := exec.Command(filepath.Join(prefix, "bin", "baton"), "version").CombinedOutput()
			if err != nil || !strings.Contains(string(got), r.version) {
				t.Errorf("baton version = %q, %v", got, err)
			}
			checkHooks(t, r, hostRun(filepath.Join(prefix, "bin")))
		})
	}
}
