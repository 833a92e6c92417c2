package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeAuto, "auto": ModeAuto, " Required ": ModeRequired, "off": ModeOff} {
		got, err := ParseMode(in)
		if err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("landlock"); err == nil || !strings.Contains(err.Error(), "auto, required or off") {
		t.Errorf("ParseMode(landlock) = %v, want an error naming the values", err)
	}
}

// tree makes files under a temporary directory and returns its path,
// resolved (t.TempDir may sit behind a link).
func tree(t *testing.T, files ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		p := filepath.Join(root, f)
		dir := filepath.Dir(p)
		if strings.HasSuffix(f, "/") {
			dir = p
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(f, "/") {
			if err := os.WriteFile(p, []byte(f+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func paths(rules []rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.path)
	}
	slices.Sort(out)
	return out
}

func TestRulesNarrowAroundDenied(t *testing.T) {
	root := tree(t, "home/.ssh/id_ed25519", "home/.local/share/baton/api-token",
		"home/.local/share/baton/worktrees/d1/main.go", "home/.local/share/other/x",
		"home/.local/lib/py/site.py", "home/notes.txt")
	home := filepath.Join(root, "home")
	data := filepath.Join(home, ".local/share/baton")
	if err := os.Symlink(data, filepath.Join(home, "data-link")); err != nil {
		t.Fatal(err)
	}
	p := Policy{
		Read:  []string{home, filepath.Join(root, "missing")},
		Write: []string{filepath.Join(data, "worktrees/d1")},
		Deny:  []string{data, filepath.Join(home, ".ssh")},
	}
	rules, err := p.rules()
	if err != nil {
		t.Fatal(err)
	}
	got := paths(rules)
	want := []string{
		filepath.Join(data, "worktrees/d1"), // an explicit grant inside a denied path
		filepath.Join(home, ".local/lib"),
		filepath.Join(home, ".local/share/other"),
		filepath.Join(home, "notes.txt"),
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("rules = %q\nwant %q", got, want)
	}
	for _, r := range rules {
		for _, d := range p.Deny {
			if within(d, r.path) {
				t.Errorf("rule %s contains denied %s", r.path, d)
			}
		}
	}
}

func TestSystemGrantsNoHomeSecrets(t *testing.T) {
	root := tree(t, "home/.ssh/id_ed25519", "home/.config/gh/hosts.yml", "home/.gitconfig",
		"home/go/pkg/mod/x", "home/.nvm/versions/node/v20/bin/node", "home/.nvm/versions/node/v20/lib/node_modules/x")
	home := filepath.Join(root, "home")
	nvmBin := filepath.Join(home, ".nvm/versions/node/v20/bin")
	p := System(Env{Home: home, Path: nvmBin + ":relative/bin:" + home})
	rules, err := p.rules()
	if err != nil {
		t.Fatal(err)
	}
	got := paths(rules)
	for _, want := range []string{filepath.Join(home, ".gitconfig"), nvmBin, filepath.Join(home, ".nvm/versions/node/v20/lib"), filepath.Join(home, "go")} {
		if !slices.Contains(got, want) {
			t.Errorf("System rules lack %s: %q", want, got)
		}
	}
	for _, r := range got {
		if within(filepath.Join(home, ".ssh"), r) || within(filepath.Join(home, ".config/gh"), r) {
			t.Errorf("System rules reach a secret through %s", r)
		}
		if r == home {
			// PATH named the home directory itself: it is narrowed, never
			// granted whole.
			t.Errorf("System rules grant the home directory whole")
		}
	}
}

// confined starts script under p and returns its output.
func confined(t *testing.T, p Policy, script string) string {
	t.Helper()
	st := Probe()
	if !st.Available() {
		t.Skipf("this kernel cannot confine: %s", st.Why)
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	// The network is egress's to build: tested there and through baton.
	release, rep, err := Confinement{Mode: ModeRequired, Policy: p, Network: Network{Open: true}}.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Confined {
		t.Fatalf("report = %v, want confined", rep)
	}
	_ = cmd.Wait()
	release()
	return out.String()
}

func TestStartConfinesTheChildOnly(t *testing.T) {
	root := tree(t, "ok/readme", "data/api-token", "work/", "secret.txt")
	env := os.Environ()
	p := System(EnvFrom(env)).Merge(Policy{
		Read:  []string{filepath.Join(root, "ok"), root},
		Write: []string{filepath.Join(root, "work")},
		Deny:  []string{filepath.Join(root, "data")},
	})
	script := fmt.Sprintf(`
try() { if "$@" >/dev/null 2>&1; then echo "$1 yes"; else echo "$1 no"; fi; }
try cat %[1]s/ok/readme
try cat %[1]s/secret.txt
try cat %[1]s/data/api-token
try ls %[1]s/data
try touch %[1]s/work/new
try touch %[1]s/ok/new
try cat /proc/%[2]d/environ
try kill -0 %[2]d
`, root, os.Getpid())
	got := confined(t, p, script)
	want := strings.Join([]string{"cat yes", "cat yes", "cat no", "ls no", "touch yes", "touch no", "cat no", "kill no"}, "\n") + "\n"
	if got != want {
		t.Errorf("confined child:\n%s\nwant\n%s", got, want)
	}
	// baton itself is not confined.
	if _, err := os.ReadFile(filepath.Join(root, "data/api-token")); err != nil {
		t.Errorf("the parent lost access: %v", err)
	}
	if _, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", os.Getpid())); err != nil {
		t.Errorf("the parent lost access to its own /proc: %v", err)
	}
}

func TestStartModes(t *testing.T) {
	cmd := exec.Command("/bin/true")
	release, rep, err := Confinement{Mode: ModeOff}.Start(cmd)
	if err != nil || rep.Confined || rep.Detail != "--sandbox=off" {
		t.Errorf("ModeOff: %v, %v", rep, err)
	}
	_ = cmd.Wait()
	release()
	if _, _, err := (Confinement{Mode: "sometimes"}).Start(exec.Command("/bin/true")); err == nil {
		t.Error("an unknown mode started a process")
	}
}

// Flags come before the environment; the lists add up, relative paths
// taken from the directory given.
func TestConfigure(t *testing.T) {
	env := map[string]string{ModeVar: "required", WriteVar: "/abs" + string(filepath.ListSeparator) + "rel", ReadVar: "/r"}
	getenv := func(k string) string { return env[k] }
	c, err := Configure(getenv, "/proj", "", nil, nil)
	if err != nil || c.Mode != ModeRequired || strings.Join(c.Policy.Write, ",") != "/abs,/proj/rel" || strings.Join(c.Policy.Read, ",") != "/r" {
		t.Errorf("Configure(environment) = %+v, %v", c, err)
	}
	c, err = Configure(getenv, "/proj", "off", []string{"flag/../w"}, []string{"/x"})
	if err != nil || c.Mode != ModeOff || strings.Join(c.Policy.Write, ",") != "/x,/abs,/proj/rel" || strings.Join(c.Policy.Read, ",") != "/proj/w,/r" {
		t.Errorf("Configure(flags and environment) = %+v, %v", c, err)
	}
	env[ModeVar] = "sometimes"
	if _, err := Configure(getenv, "/proj", "", nil, nil); err == nil {
		t.Error("Configure(sometimes): no error")
	}
	if c, err := Configure(nil, "/proj", "", nil, nil); err != nil || c.Mode != ModeAuto || c.Policy.Read != nil || c.Policy.Write != nil {
		t.Errorf("Configure(no environment) = %+v, %v", c, err)
	}
}

// A walk of a system directory stands for as long as it is asked to, and
// a newer one is made past that.
func TestWalkedKeepsAndRenews(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	private := func(name string) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Cleanup(func() { os.Remove(walkFile(root)) })
	first := private("first")
	got, err := walked(root, time.Hour)
	if err != nil || !slices.Equal(got, []string{first}) {
		t.Fatalf("walked = %q, %v; want [%s]", got, err, first)
	}
	second := private("second")
	if got, _ := walked(root, time.Hour); !slices.Equal(got, []string{first}) {
		t.Errorf("within its age the last walk stands: walked = %q", got)
	}
	if got, _ := walked(root, 0); !slices.Equal(got, []string{first, second}) {
		t.Errorf("past its age a new walk is made: walked = %q, want [%s %s]", got, first, second)
	}
}

// Box starts that find a root unwalked at once all get the one walk.
func TestWalkedConcurrently(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(walkFile(root)) })
	secret := filepath.Join(root, "secret")
	if err := os.WriteFile(secret, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	results := make(chan []string, 8)
	for range cap(results) {
		go func() {
			got, err := walked(root, time.Hour)
			if err != nil {
				t.Error(err)
			}
			results <- got
		}()
	}
	for range cap(results) {
		if got := <-results; !slices.Equal(got, []string{secret}) {
			t.Errorf("walked = %q, want [%s]", got, secret)
		}
	}
}
