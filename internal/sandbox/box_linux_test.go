package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-agent/baton"
	"github.com/baton-agent/baton/internal/sandbox/sandboxtest"
	"github.com/baton-agent/baton/internal/testenv"
)

// modes are the two ways the box is built: with namespaces where the host
// allows them, and without, as on a host that has none.
var modes = []struct {
	name string
	c    Confinement
}{
	{"namespaces", Confinement{Mode: ModeAuto}},
	{"no namespaces", Confinement{Mode: ModeAuto, NoNamespaces: true}},
}

// boxed runs script in the box c builds, with the system readable and
// dir writable, and returns its output and exit code.
func boxed(t *testing.T, c Confinement, dir, script string, env ...string) (string, int) {
	t.Helper()
	if !c.NoNamespaces && probeHost().nsErr != nil {
		t.Skipf("no namespaces here: %v", probeHost().nsErr)
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	c.Policy = System(EnvFrom(cmd.Env)).Merge(Policy{Write: []string{dir}}).Merge(c.Policy)
	release, _, err := c.Start(cmd)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	err = cmd.Wait()
	release()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("Wait: %v", err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// In its pid namespace the process has a /proc of its own: itself, yes
// (Bun reads /proc/self/maps at start), any other process, no.
func TestBoxShowsNoOtherProcess(t *testing.T) {
	t.Parallel()
	out, code := boxed(t, Confinement{Mode: ModeAuto}, t.TempDir(), `
head -c 1 /proc/self/maps >/dev/null && echo self-maps
cat /proc/self/cgroup >/dev/null && echo self-cgroup
echo "init $(tr '\0' ' ' </proc/1/cmdline)"
echo "processes $(ls -d /proc/[0-9]* | wc -l)"
cat /proc/1/environ >/dev/null 2>&1 && echo init-environ
cat /proc/`+strconv.Itoa(os.Getpid())+`/environ >/dev/null 2>&1 && echo baton-environ
exit 0`)
	for _, want := range []string{"self-maps\n", "self-cgroup\n", "init " + InitProgram + " \n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The init, the shell, the command substitution's subshell, and ls
	// and wc in it.
	if n := strings.TrimPrefix(line(out, "processes "), "processes "); n == "" || atoi(n) > 5 {
		t.Errorf("the box sees %s processes:\n%s", n, out)
	}
	for _, leak := range []string{"init-environ", "baton-environ"} {
		if strings.Contains(out, leak) {
			t.Errorf("the boxed process read %s:\n%s", leak, out)
		}
	}
	if code != 0 {
		t.Errorf("exit %d", code)
	}
}

// No controlling terminal, and none of the machine's terminals: a
// process cannot type into the user's shell (TIOCSTI) or write to it.
func TestBoxHasNoTerminal(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			out, _ := boxed(t, m.c, t.TempDir(), `
read -r pid comm state ppid pgrp sid rest < /proc/self/stat 2>/dev/null && [ "$sid" = "$pid" ] && echo own-session
: </dev/tty 2>/dev/null && echo opened-tty
ls /dev/pts 2>/dev/null | grep -qv ptmx && echo sees-ptys
exit 0`)
			// Without namespaces Landlock keeps /proc/self from the process.
			if !m.c.NoNamespaces && !strings.Contains(out, "own-session") {
				t.Errorf("the process does not lead a session of its own:\n%s", out)
			}
			for _, leak := range []string{"opened-tty", "sees-ptys"} {
				if strings.Contains(out, leak) {
					t.Errorf("the boxed process %s:\n%s", leak, out)
				}
			}
		})
	}
}

// What the process starts in the background, in a session of its own or
// through a double fork, ends with it.
func TestBoxLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	cases := modes
	cases = append(cases, struct {
		name string
		c    Confinement
	}{"no namespaces, no cgroup", Confinement{Mode: ModeAuto, NoNamespaces: true, noCgroup: true}})
	for _, m := range cases {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out, code := boxed(t, m.c, dir, `
setsid sh -c 'while :; do echo late >> late.txt; sleep 0.05; done' </dev/null >/dev/null 2>&1 &
`+sandboxtest.WhoAmIOf("!")+` > setsid.pid
( sleep 300 </dev/null >/dev/null 2>&1 & `+sandboxtest.WhoAmIOf("!")+` > double.pid )
exit 3`)
			if code != 3 {
				t.Errorf("exit %d, want the process's 3:\n%s", code, out)
			}
			for _, f := range []string{"setsid.pid", "double.pid"} {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatalf("%s: %v\n%s", f, err, out)
				}
				if pid, ok := sandboxtest.HostPID(string(b)); ok {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("%s: process %d outlived the box", f, pid)
				}
			}
		})
	}
}

// A fork bomb whose children leave its session holds at most MaxProcs
// processes, and none once the box ends: with each way the box caps
// processes that this host has.
func TestBoxForkBomb(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		c     Confinement
		limit int
		want  limit
	}{
		{"namespaces", Confinement{Mode: ModeAuto}, 40, limitNone},
		{"no namespaces", Confinement{Mode: ModeAuto, NoNamespaces: true}, 40, limitNone},
		// pid_max holds no fewer than 300: the bomb takes that many.
		{"namespaces, pid_max", Confinement{Mode: ModeAuto, noCgroup: true}, 320, limitPidMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tc.c
			c.MaxProcs = tc.limit
			ns := !c.NoNamespaces && probeHost().nsErr == nil
			lim, how := c.limit(probeHost(), ns)
			if lim == limitNone || (tc.want != limitNone && lim != tc.want) {
				t.Skipf("no such process limit here: %s", how)
			}
			dir := t.TempDir()
			// Each process notes itself, starts two more in new sessions
			// and waits; the first refused fork ends the wait of the box.
			out, _ := boxed(t, c, dir, `
cat > bomb.sh <<'EOF'
`+sandboxtest.WhoAmI+` >> pids
setsid sh bomb.sh 2>>refused &
setsid sh bomb.sh 2>>refused &
exec sleep 300
EOF
sh bomb.sh 2>>refused &
while [ ! -s refused ]; do sleep 0.01; done
exit 0`)
			b, err := os.ReadFile(filepath.Join(dir, "pids"))
			if err != nil {
				t.Fatalf("the bomb never ran: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			// A shell whose fork is refused says so and exits, which frees a
			// slot for another: of the processes that ran, as many as were
			// refused may have ended before the last started.
			refused, _ := os.ReadFile(filepath.Join(dir, "refused"))
			ended := strings.Count(string(refused), "\n")
			if len(lines)-ended > tc.limit {
				t.Errorf("%d processes ran, %d forks were refused: more than the limit of %d at once (%s)", len(lines), ended, tc.limit, how)
			}
			survivors := 0
			for _, l := range lines {
				if pid, ok := sandboxtest.HostPID(l); ok {
					survivors++
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			if survivors > 0 {
				t.Errorf("%d of the bomb's %d processes outlived the box", survivors, len(lines))
			}
		})
	}
}

// The box dies with the process that started it, however it dies, and
// all that runs in it.
func TestBoxDiesWithBaton(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			if !m.c.NoNamespaces && probeHost().nsErr != nil {
				t.Skip("no namespaces here")
			}
			dir := t.TempDir()
			helper := exec.Command(os.Args[0], "-test.run=^$")
			helper.Env = append(os.Environ(), "BATON_BOX_HELPER="+dir, fmt.Sprintf("BATON_BOX_HELPER_NONS=%v", m.c.NoNamespaces))
			if err := helper.Start(); err != nil {
				t.Fatal(err)
			}
			helperDone := make(chan error, 1)
			go func() { helperDone <- helper.Wait() }()
			pidFile := filepath.Join(dir, "pid")
			var line string
			// A loaded machine may take long to start the helper and its
			// box: the wait ends early if the helper exits instead.
			if !testenv.Until(time.Minute, nil, func() bool {
				b, err := os.ReadFile(pidFile)
				line = string(b)
				return err == nil || len(helperDone) > 0
			}) || line == "" {
				select {
				case err := <-helperDone:
					t.Fatalf("the helper ended (%v) before its boxed process said its pid", err)
				default:
					helper.Process.Kill()
					t.Fatalf("the boxed process never said its pid")
				}
			}
			// Known by its start time too: its pid may be another
			// process's by the time the box is gone.
			p, ok := sandboxtest.Find(line)
			if !ok {
				t.Fatalf("the boxed process is not running: %q", line)
			}
			helper.Process.Kill()
			<-helperDone
			if !testenv.Until(time.Minute, nil, func() bool { return !p.Alive() }) {
				// What it is waiting on, and its parent (the init, when
				// that lives on): for the next time it happens.
				stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid))
				ppid, _ := statPPID(stat)
				parent, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", ppid))
				syscall.Kill(p.Pid, syscall.SIGKILL)
				t.Fatalf("the boxed process outlived its SIGKILLed starter\nits stat: %s\nits parent's: %s", stat, parent)
			}
		})
	}
}

// boxHelper is TestBoxDiesWithBaton's starter: it starts a box whose
// process notes itself and waits.
func boxHelper(dir string, noNamespaces bool) {
	cmd := exec.Command("/bin/sh", "-c", "setsid sleep 300 & "+sandboxtest.WhoAmIOf("!")+" > pid.tmp && mv pid.tmp pid; wait")
	cmd.Dir = dir
	c := Confinement{Mode: ModeAuto, NoNamespaces: noNamespaces, Policy: System(EnvFrom(os.Environ())).Merge(Policy{Write: []string{dir}})}
	release, _, err := c.Start(cmd)
	if err != nil {
		os.Exit(2)
	}
	cmd.Wait()
	release()
	os.Exit(0)
}

func waitFile(t *testing.T, path string) string {
	t.Helper()
	var b []byte
	if !testenv.Until(10*time.Second, nil, func() bool { var err error; b, err = os.ReadFile(path); return err == nil }) {
		t.Fatalf("%s never appeared", path)
	}
	return string(b)
}

// SIGTERM to the init reaches the process, whose status the init exits
// with: 128+15.
func TestBoxForwardsSignals(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			if !m.c.NoNamespaces && probeHost().nsErr != nil {
				t.Skip("no namespaces here")
			}
			dir := t.TempDir()
			cmd := exec.Command("/bin/sh", "-c", "trap 'echo got-term; exit 9' TERM; touch ready; while :; do sleep 0.01; done")
			cmd.Dir = dir
			var out strings.Builder
			cmd.Stdout = &out
			c := m.c
			c.Policy = System(EnvFrom(os.Environ())).Merge(Policy{Write: []string{dir}})
			release, _, err := c.Start(cmd)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			waitFile(t, filepath.Join(dir, "ready"))
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // as callers do: to the init's group
			cmd.Wait()
			if got := cmd.ProcessState.ExitCode(); got != 9 || !strings.Contains(out.String(), "got-term") {
				t.Errorf("after SIGTERM: exit %d, output %q; want 9, got-term", got, out.String())
			}
		})
	}
}

// A program that is not there is an error Start returns, as exec's is.
func TestBoxStartErrors(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if !m.c.NoNamespaces && probeHost().nsErr != nil {
				t.Skip("no namespaces here")
			}
			cmd := exec.Command("/bin/sh")
			cmd.Path = filepath.Join(t.TempDir(), "missing")
			c := m.c
			c.Policy = System(EnvFrom(os.Environ()))
			release, _, err := c.Start(cmd)
			release()
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Start(missing program) = %v, want fs.ErrNotExist", err)
			}
		})
	}
	// Required, where a defence is missing: nothing starts, and the error
	// names what is missing.
	c := Confinement{Mode: ModeRequired, NoNamespaces: true, Policy: System(EnvFrom(os.Environ()))}
	_, _, err := c.Start(exec.Command("/bin/true"))
	if baton.ErrorCode(err) != baton.Unavailable || !strings.Contains(err.Error(), DefProcesses) {
		t.Errorf("required without namespaces: %v, want Unavailable naming %q", err, DefProcesses)
	}
}

// Builds write caches of the box's own; the user's stay untouched, and
// Go reads modules the user downloaded through a proxy of files.
func TestBoxCaches(t *testing.T) {
	t.Parallel()
	home := tree(t, ".cache/go-build/", "go/pkg/mod/cache/download/", ".npm/")
	cache := filepath.Join(t.TempDir(), "cache")
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			c := m.c
			c.Cache = cache
			out, _ := boxed(t, c, t.TempDir(), `
echo "GOCACHE=$GOCACHE"; echo "GOMODCACHE=$GOMODCACHE"; echo "GOPROXY=$GOPROXY"; echo "XDG=$XDG_CACHE_HOME"
touch "$HOME/.cache/go-build/planted" 2>/dev/null && echo planted-build
touch "$HOME/go/pkg/mod/cache/download/planted" 2>/dev/null && echo planted-mod
touch "$HOME/.npm/planted" 2>/dev/null && echo planted-npm
touch "$GOCACHE/own" && echo own-cache
exit 0`, "HOME="+home, "GOPATH=", "GOMODCACHE=", "GOCACHE=", "XDG_CACHE_HOME=", "GOPROXY=https://proxy.example")
			for _, want := range []string{
				"GOCACHE=" + filepath.Join(cache, "go/build"), "GOMODCACHE=" + filepath.Join(cache, "go/mod"),
				"GOPROXY=file://" + filepath.Join(home, "go/pkg/mod/cache/download") + ",https://proxy.example",
				"XDG=" + filepath.Join(cache, "xdg"), "own-cache",
			} {
				if !strings.Contains(out, want+"\n") {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "planted") {
				t.Errorf("the box wrote a cache of the user's:\n%s", out)
			}
		})
	}
}

// With namespaces, the agent home is shown at $HOME: what the process
// writes there stays in the agent home, the real home's granted paths
// are shown in it read-only (or writable, when granted so), and nothing
// else of the real home is seen.
func TestBoxShowsTheAgentHome(t *testing.T) {
	t.Parallel()
	// System grants .gitconfig.
	home := tree(t, ".claude/settings.json", ".gitconfig", "secret.txt", "src/proj/main.go", "tools/bin/tool")
	agentHome := filepath.Join(t.TempDir(), "agent-home")
	proj := filepath.Join(home, "src/proj")
	c := Confinement{Mode: ModeAuto, Home: agentHome, Policy: Policy{
		Read:  []string{filepath.Join(home, ".claude/settings.json"), filepath.Join(home, "tools")},
		Write: []string{proj},
	}}
	out, _ := boxed(t, c, proj, `
mkdir -p "$HOME/.claude" && echo '{"hooks":"planted"}' > "$HOME/.claude/settings.local.json" && echo wrote-own
echo '{"hooks":"planted"}' > "$HOME/.claude/settings.json" 2>/dev/null && echo wrote-settings
cat "$HOME/.claude/settings.json" | grep -q settings && echo read-settings
cat "$HOME/secret.txt" 2>/dev/null && echo read-secret
cat "$HOME/.gitconfig" 2>/dev/null && echo read-gitconfig
echo x > "$HOME/tools/bin/tool" 2>/dev/null && echo wrote-tools
echo work > main.go && echo wrote-worktree
echo state > "$HOME/.claude.json" && echo wrote-state
exit 0`, "HOME="+home)
	for _, want := range []string{"wrote-own", "read-settings", "read-gitconfig", "wrote-worktree", "wrote-state"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	for _, leak := range []string{"wrote-settings", "read-secret", "wrote-tools"} {
		if strings.Contains(out, leak) {
			t.Errorf("the boxed process %s:\n%s", leak, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".claude/settings.json")); strings.Contains(string(b), "planted") {
		t.Errorf("the user's settings were written: %s", b)
	}
	for _, f := range []string{".claude/settings.local.json", ".claude.json"} {
		if _, err := os.Stat(filepath.Join(home, f)); err == nil {
			t.Errorf("%s reached the user's home", f)
		}
		if _, err := os.Stat(filepath.Join(agentHome, f)); err != nil {
			t.Errorf("%s is not in the agent home: %v", f, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "main.go")); string(b) != "work\n" {
		t.Errorf("the worktree holds %q", b)
	}
	// The mount points made for the shown paths are gone again.
	for _, p := range []string{"src", "tools", ".claude/settings.json"} {
		if _, err := os.Lstat(filepath.Join(agentHome, p)); err == nil {
			t.Errorf("the agent home keeps the mount point %s", p)
		}
	}
}

// /dev/shm is the box's own: what others put there is not seen, and what
// the process puts there reaches no one.
func TestBoxSharedMemory(t *testing.T) {
	t.Parallel()
	host, err := os.CreateTemp("/dev/shm", "baton-test-")
	if err != nil {
		t.Skipf("no /dev/shm here: %v", err)
	}
	host.WriteString("other program's")
	host.Close()
	t.Cleanup(func() { os.Remove(host.Name()) })
	name := fmt.Sprintf("baton-box-%d", time.Now().UnixNano())
	t.Cleanup(func() { os.Remove("/dev/shm/" + name) })
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			out, _ := boxed(t, m.c, t.TempDir(), `
cat `+host.Name()+` 2>/dev/null && echo read-host
echo planted > /dev/shm/`+name+` 2>/dev/null && echo wrote-shm
exit 0`)
			if strings.Contains(out, "read-host") {
				t.Errorf("the box read another program's shared memory:\n%s", out)
			}
			if _, err := os.Stat("/dev/shm/" + name); err == nil {
				t.Errorf("what the box wrote to /dev/shm reached the machine's")
			}
		})
	}
}

// As root, the box keeps what no other user may read: /etc/shadow, SSH
// host keys, TLS keys.
func TestBoxRootReadsNoSecrets(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("runs as root only (cmd/baton tests an unprivileged user)")
	}
	secret := "/etc/shadow"
	if _, err := os.Stat(secret); err != nil {
		t.Skip("no /etc/shadow here")
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			out, _ := boxed(t, m.c, t.TempDir(), `
id -u
cat /etc/shadow >/dev/null 2>&1 && echo read-shadow
cat /etc/passwd >/dev/null && echo read-passwd
for k in /etc/ssh/ssh_host_*_key /etc/ssl/private/*; do [ -e "$k" ] && cat "$k" >/dev/null 2>&1 && echo "read-key $k"; done
grep -c . /proc/self/status >/dev/null && echo ok
exit 0`)
			if !strings.HasPrefix(out, "0\n") || !strings.Contains(out, "read-passwd") {
				t.Fatalf("unexpected output:\n%s", out)
			}
			if strings.Contains(out, "read-shadow") || strings.Contains(out, "read-key") {
				t.Errorf("root in the box read a secret:\n%s", out)
			}
		})
	}
}

func line(out, prefix string) string {
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func atoi(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 1 << 30
	}
	return n
}

// The kernel kills a child with a parent-death signal when the thread
// that forked it ends: that thread must stay until release.
func TestStartKeepsTheForkingThread(t *testing.T) {
	st := Probe()
	if !st.Available() {
		t.Skipf("this kernel cannot confine: %s", st.Why)
	}
	cmd := exec.Command("/bin/sh", "-c", "read line; echo alive $line")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	release, _, err := Confinement{Mode: ModeAuto, Policy: System(EnvFrom(os.Environ()))}.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	// Give the runtime every chance to end an unparked thread.
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(in, "still")
	line, _ := bufio.NewReader(outp).ReadString('\n')
	if err := cmd.Wait(); err != nil || line != "alive still\n" {
		t.Errorf("child said %q, %v: it was killed when its forking thread ended", line, err)
	}
}

// The box's tests again, as an unprivileged user: the init keeps the
// capabilities it needs across its exec only as ambient ones, the uid
// mapped is not 0, and no cgroup is writable, so the process limit is
// RLIMIT_NPROC in the user namespace.
func TestBoxAsUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the tests as another user")
	}
	if testing.Short() {
		t.Skip("runs the box's tests again")
	}
	const nobody = 65534
	// Somewhere the other user can reach (t.TempDir's parent is private).
	dir, err := os.MkdirTemp("", "baton-box-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "sandbox.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	for _, step := range []func() error{
		func() error { return os.Chmod(dir, 0o755) },
		func() error { return os.WriteFile(bin, b, 0o755) },
		func() error { return os.Mkdir(tmp, 0o700) },
		func() error { return os.Chown(tmp, nobody, nobody) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run", "^TestBox", "-test.v", "-test.short")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the box's tests as uid %d: %v\n%s", nobody, err, out)
	}
	t.Logf("as uid %d:\n%s", nobody, out)
	for _, want := range []string{"--- PASS: TestBoxForkBomb/namespaces", "--- PASS: TestBoxLeavesNothingBehind/namespaces",
		"--- PASS: TestBoxShowsTheAgentHome", "--- PASS: TestBoxShowsNoOtherProcess"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("as uid %d, no %q:\n%s", nobody, want, out)
		}
	}
}

// The process gets its standard files and nothing else: not the init's
// spec, reply or Landlock ruleset, and not a file baton was started with
// and never marked close-on-exec (a hostile or careless parent's): an
// open file is used as it is, whatever Landlock says of its path.
func TestBoxHandsOnNoOtherFile(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(secret, syscall.O_RDWR, 0) // no O_CLOEXEC: inherited by every child
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	// Without namespaces Landlock keeps /proc/self from the process.
	out, code := boxed(t, modes[0].c, t.TempDir(), `exec ls -l /proc/self/fd`)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	seen := 0
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 3 || f[len(f)-2] != "->" {
			continue // "total 0"
		}
		seen++
		fd, target := f[len(f)-3], f[len(f)-1]
		switch {
		case fd == "0" || fd == "1" || fd == "2":
		case fd == "3" && strings.HasPrefix(target, "/proc/") && strings.HasSuffix(target, "/fd"):
			// ls reading the directory
		default:
			t.Errorf("the boxed process holds file %s: %s", fd, target)
		}
	}
	if seen < 3 {
		t.Fatalf("ls listed %d files:\n%s", seen, out)
	}
}

// A rule on a path the init mounts something of its own on, in or around,
// is the init's to add in the box's view; every other is baton's.
func TestBoxRulesSplit(t *testing.T) {
	t.Parallel()
	s := spec{Namespaces: true, Home: "/home/u", Rules: []specRule{
		{Path: "/usr/lib", Access: accessRead, Dir: true},
		{Path: "/etc/hosts", Access: accessRead},
		{Path: "/srv/work", Access: accessWrite, Dir: true},
		{Path: "/proc", Access: accessRead, Dir: true},
		{Path: "/dev/pts", Access: accessDevice, Dir: true},
		{Path: "/dev/null", Access: accessDevice},
		{Path: "/tmp/work", Access: accessWrite, Dir: true},
		{Path: "/home/u", Access: accessWrite, Dir: true},
		{Path: "/home/u/.gitconfig", Access: accessRead},
		{Path: "/home", Access: accessRead, Dir: true},
		{Path: "/var", Access: accessRead, Dir: true},
		{Path: "/", Access: accessRead, Dir: true},
		{Path: "/devices", Access: accessRead, Dir: true},
	}}
	inside, outside := boxRules(s)
	paths := func(rs []specRule) (out []string) {
		for _, r := range rs {
			out = append(out, r.Path)
		}
		return out
	}
	if got, want := strings.Join(paths(outside), " "), "/usr/lib /etc/hosts /srv/work /devices"; got != want {
		t.Errorf("baton's rules: %s, want %s", got, want)
	}
	if got, want := len(inside)+len(outside), len(s.Rules); got != want {
		t.Errorf("%d rules in all, want %d", got, want)
	}
	s.Namespaces = false
	if inside, outside := boxRules(s); len(inside) != 0 || len(outside) != len(s.Rules) {
		t.Errorf("without namespaces the init adds %d rules, want none: the box sees what baton sees", len(inside))
	}
}
