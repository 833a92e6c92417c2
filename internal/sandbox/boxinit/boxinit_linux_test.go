package boxinit

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/baton-agent/baton/internal/sandbox"
)

// cleanBuild builds a program that prints says, from a module committed
// to a git repository of its own, as a release or a clean checkout is
// built: with its commit recorded and the tree unmodified.
func cleanBuild(t *testing.T, src, out, says string) {
	t.Helper()
	files := map[string]string{
		"go.mod": "module example.com/initprobe\n\ngo 1.24\n",
		"cmd/" + sandbox.InitProgram + "/main.go": "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(" + strconv.Quote(says) + ") }\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	for _, args := range [][]string{
		{"git", "init", "-q"}, {"git", "add", "-A"}, {"git", "commit", "-q", "-m", says},
		// -buildvcs=true: over a GOFLAGS that turns the commit's record off.
		{"go", "build", "-buildvcs=true", "-trimpath", "-o", out, "./cmd/" + sandbox.InitProgram},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = src, env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
}

// runHeld runs the program held at fd, as a box's start does, and
// returns what it printed.
func runHeld(t *testing.T, fd int) string {
	t.Helper()
	out, err := exec.Command("/proc/self/fd/" + strconv.Itoa(fd)).Output()
	if err != nil {
		t.Fatalf("run the held init: %v", err)
	}
	return string(out)
}

// The init beside baton is held only when it is the same build, a
// regular file of baton's owner that no one else may write; what runs is
// the very bytes checked, whatever happens to the file afterwards.
func TestHoldInit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds programs")
	}
	dir, src := t.TempDir(), t.TempDir()
	self := filepath.Join(dir, "baton")
	if err := os.WriteFile(self, []byte("baton"), 0o755); err != nil {
		t.Fatal(err)
	}
	init := filepath.Join(dir, sandbox.InitProgram)
	other := filepath.Join(t.TempDir(), "other")
	cleanBuild(t, src, init, "checked")
	cleanBuild(t, src, other, "swapped") // the next commit: another build
	ours, err := buildinfo.ReadFile(init)
	if err != nil {
		t.Fatal(err)
	}

	fd, err := holdInit(self, init, ours)
	if err != nil {
		t.Fatalf("holdInit(the same build) = %v", err)
	}
	defer unix.Close(fd)
	if got := runHeld(t, fd); got != "checked" {
		t.Fatalf("the held init printed %q", got)
	}
	// Swapped after the check: rewritten in place, then replaced.
	swapped, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(init, swapped, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := runHeld(t, fd); got != "checked" {
		t.Errorf("after the file was rewritten in place, the held init printed %q, want the checked program's output", got)
	}
	if err := os.Rename(other, init); err != nil {
		t.Fatal(err)
	}
	if got := runHeld(t, fd); got != "checked" {
		t.Errorf("after the file was replaced, the held init printed %q, want the checked program's output", got)
	}

	// The file now beside baton is another build.
	if _, err := holdInit(self, init, ours); err == nil || !strings.Contains(err.Error(), "not the same build") {
		t.Errorf("holdInit(another build) = %v, want it refused as not the same build", err)
	}

	refused := func(name, want string, prepare func(path string) error) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := prepare(path); err != nil {
			t.Fatal(err)
		}
		if fd, err := holdInit(self, path, ours); err == nil || !strings.Contains(err.Error(), want) {
			if err == nil {
				unix.Close(fd)
			}
			t.Errorf("%s: holdInit = %v, want an error saying %q", name, err, want)
		}
	}
	copyOf := func(mode os.FileMode) func(string) error {
		return func(path string) error {
			b, err := os.ReadFile(init)
			if err != nil {
				return err
			}
			if err := os.WriteFile(path, b, 0o755); err != nil {
				return err
			}
			return os.Chmod(path, mode)
		}
	}
	// A checked build again, to refuse for its file alone.
	if err := os.Remove(init); err != nil {
		t.Fatal(err)
	}
	cleanBuild(t, t.TempDir(), init, "checked")
	ours, err = buildinfo.ReadFile(init)
	if err != nil {
		t.Fatal(err)
	}
	if fd, err := holdInit(self, init, ours); err != nil {
		t.Fatalf("holdInit(a fresh same build) = %v", err)
	} else {
		unix.Close(fd)
	}
	refused("missing", "not there", func(string) error { return nil })
	refused("link", "symbolic link", func(path string) error { return os.Symlink(init, path) })
	refused("group-writable", "writable by others", copyOf(0o775))
	refused("world-writable", "writable by others", copyOf(0o757))
	refused("fifo", "not a regular file", func(path string) error { return syscall.Mkfifo(path, 0o700) }) // and never blocks
	refused("directory", "not a regular file", func(path string) error { return os.Mkdir(path, 0o700) })
	refused("another command", "the program example.com/initprobe/cmd/"+sandbox.InitProgram+", not example.com/initprobe/cmd/another command", copyOf(0o755))
	refused("not a program", "no Go build information", func(path string) error { return os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755) })
	if os.Geteuid() == 0 {
		refused("another user's", "owned by uid 4242", func(path string) error {
			if err := copyOf(0o755)(path); err != nil {
				return err
			}
			return os.Lchown(path, 4242, 4242)
		})
	}
	if _, err := holdInit(filepath.Join(dir, "gone"), init, ours); err == nil {
		t.Error("holdInit with this program's executable gone = nil, want an error")
	}
}
