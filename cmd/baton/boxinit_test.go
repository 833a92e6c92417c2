package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/baton-agent/baton/internal/sandbox"
	"github.com/baton-agent/baton/internal/testenv"
)

// boxInitAgent tells the test it is running, then waits to be let go:
// meanwhile its box's init is there to look at, from outside.
const boxInitAgent = `#!/bin/sh
cat >/dev/null
echo running > "$PROBE/ready"
read go < "$PROBE/go"
echo "1. Done."
`

// cleanBaton builds baton and baton-box-init as a release or a clean
// checkout is built, from a copy of this tree committed to a repository
// of its own, and returns the copy and the directory holding both.
func cleanBaton(t *testing.T) (src, bin string) {
	t.Helper()
	src, bin = t.TempDir(), t.TempDir()
	list := exec.Command("git", "ls-files", "-z", "-co", "--exclude-standard")
	list.Dir = filepath.Join("..", "..")
	out, err := list.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from := filepath.Join(list.Dir, name)
		fi, err := os.Lstat(from)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted, or a link: not what the build reads
		}
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	env := gitEnv(t.TempDir())
	srcRun(t, src, env, "git", "init", "-q")
	srcRun(t, src, env, "git", "add", "-A")
	srcRun(t, src, env, "git", "commit", "-q", "-m", "a release")
	// -buildvcs=true over a GOFLAGS that turns the commit's record off;
	// -trimpath so that the copy's packages come from the build cache.
	srcRun(t, src, env, "go", "build", "-buildvcs=true", "-trimpath", "-o", bin+string(filepath.Separator), "./cmd/baton", "./cmd/baton-box-init")
	return src, bin
}

func srcRun(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// A confined agent's box is started by baton-box-init when the one beside
// baton is the same build, and by baton itself when it is another build,
// another command, missing or a link; baton doctor says which and why,
// and the box works either way.
func TestBoxInitIsTheSameBuild(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t, "builds baton from a committed copy of this tree")
	if st := sandbox.Probe(); !st.Available() {
		t.Skipf("this kernel cannot confine agents: %s", st.Why)
	}
	src, same := cleanBaton(t)
	baton := filepath.Join(same, "baton")

	// The next commit's init: another build.
	env := gitEnv(t.TempDir())
	main := filepath.Join(src, "cmd", "baton-box-init", "main.go")
	f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n// The next release.\n")
	f.Close()
	srcRun(t, src, env, "git", "commit", "-q", "-am", "the next release")
	later := t.TempDir()
	srcRun(t, src, env, "go", "build", "-buildvcs=true", "-trimpath", "-o", later+string(filepath.Separator), "./cmd/baton-box-init", "./cmd/baton-hook")

	beside := func(name string, with func(dir string) error) string {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := copyFile(baton, filepath.Join(dir, "baton")); err != nil {
			t.Fatal(err)
		}
		if err := with(dir); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, "baton")
	}
	initFrom := func(from string) func(string) error {
		return func(dir string) error { return copyFile(from, filepath.Join(dir, "baton-box-init")) }
	}
	for _, c := range []struct {
		name  string
		baton string
		own   bool
		why   string
	}{
		{"the same build", baton, false, "the same build as " + baton},
		{"another build", beside("another-build", initFrom(filepath.Join(later, "baton-box-init"))), true, "not the same build"},
		{"another command", beside("another-command", initFrom(filepath.Join(later, "baton-hook"))), true, "cmd/baton-hook, not"},
		{"missing", beside("missing", func(string) error { return nil }), true, "not there"},
		{"a link", beside("link", func(dir string) error {
			return os.Symlink(filepath.Join(same, "baton-box-init"), filepath.Join(dir, "baton-box-init"))
		}), true, "symbolic link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			exe := boxInitExe(t, c.baton, c.own, c.why)
			if want := "/memfd:baton-box-init (deleted)"; !c.own && exe != want {
				t.Errorf("the box's init ran %q, want %q: the checked baton-box-init, held", exe, want)
			}
			if c.own && exe != c.baton {
				t.Errorf("the box's init ran %q, want baton itself (%s)", exe, c.baton)
			}
		})
	}
}

// boxInitExe checks what baton doctor says of the box's init, runs a
// confined agent with baton at batonPath and returns the program its
// box's init runs, read from outside while the agent runs.
func boxInitExe(t *testing.T, batonPath string, own bool, why string) string {
	t.Helper()
	home, data, probe := t.TempDir(), t.TempDir(), t.TempDir()
	env := gitEnv(home, "BATON_DATA_DIR="+data, "PROBE="+probe)
	repo := userRepo(t, env)

	cmd := exec.Command(batonPath, "doctor", "--json", "--no-probe")
	cmd.Dir, cmd.Env = repo, env
	out, _ := cmd.Output() // non-zero when something installed is broken
	var rep struct {
		Sandbox struct {
			Init sandbox.InitChoice `json:"init"`
		} `json:"sandbox"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("baton doctor --json: %v\n%s", err, out)
	}
	if in := rep.Sandbox.Init; in.Own != own || !strings.Contains(in.Why, why) {
		t.Errorf("doctor's box init = %+v, want own=%v saying %q", in, own, why)
	}

	agent := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(agent, []byte(boxInitAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, fifo := range []string{"ready", "go"} {
		if err := syscall.Mkfifo(filepath.Join(probe, fifo), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	create := exec.Command(batonPath, "delivery", "create", "--repo", ".", "--summary", "Look at the box", "--agent", "command:"+agent,
		"--checkpoints", "none", "--endpoint", "plan")
	create.Dir, create.Env = repo, env
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("delivery create: %v\n%s", err, out)
	}
	run := exec.Command(batonPath, "delivery", "run", "1", "--sandbox", "required", "--sandbox-write", probe)
	run.Dir, run.Env = repo, env
	var log strings.Builder
	run.Stdout, run.Stderr = &log, &log
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		err := run.Wait()
		ended <- err
		// A run that ended before its agent said it runs: the test's open
		// of the ready pipe gets a writer, and reads nothing.
		if w, err := os.OpenFile(filepath.Join(probe, "ready"), os.O_RDWR, 0); err == nil {
			w.Close()
		}
	}()
	ready, err := os.Open(filepath.Join(probe, "ready")) // until the agent runs
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(ready).ReadString('\n')
	ready.Close()
	if line != "running\n" {
		err := <-ended
		t.Fatalf("the agent did not run: %v\n%s", err, log.String())
	}
	exe := initExe(t, run.Process.Pid)
	goPipe, err := os.OpenFile(filepath.Join(probe, "go"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	goPipe.WriteString("go\n")
	goPipe.Close()
	if err := <-ended; err != nil {
		t.Fatalf("delivery run: %v\n%s", err, log.String())
	}
	return exe
}

// initExe returns what the box's init among parent's children runs.
func initExe(t *testing.T, parent int) string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var exes []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || string(cmdline) != "baton-box-init\x00" {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		exe, err := os.Readlink(filepath.Join(dir, "exe"))
		if err != nil {
			t.Fatalf("read the box's init's program: %v", err)
		}
		exes = append(exes, exe)
	}
	if len(exes) != 1 {
		t.Fatalf("the running delivery has %d box inits (%q), want the agent's one", len(exes), exes)
	}
	return exes[0]
}
