// Package boxinit finds the box's init baton starts in place of itself:
// the program beside baton's executable, when it is baton's own build. It
// is a package of its own so that programs that start boxes without one
// (baton-hook) link no reader of executables.
package boxinit

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"golang.org/x/sys/unix"

	batonbuild "github.com/baton-agent/baton/internal/buildinfo"
	"github.com/baton-agent/baton/internal/sandbox"
)

// Beside is sandbox.Hooks.Init for the program name beside this
// program's executable: it holds that program when it is fit to be the
// box's init (see holdInit).
func Beside(name string) func() (int, sandbox.InitChoice) {
	return func() (int, sandbox.InitChoice) { return findInit(name) }
}

// maxInitSize bounds what is read of the init: a few megabytes are real.
const maxInitSize = 64 << 20

// findInit looks for the init named name beside this program's
// executable and holds it when it is fit to run; otherwise it says why
// this program is its own init.
func findInit(name string) (int, sandbox.InitChoice) {
	self, err := os.Executable()
	own := sandbox.InitChoice{Program: self, Own: true}
	switch {
	case name == "":
		own.Why = "this program names no init of its own"
		return -1, own
	case err != nil:
		own.Why = "this program's executable is unknown: " + err.Error()
		return -1, own
	}
	path := filepath.Join(filepath.Dir(self), name)
	ours, _ := debug.ReadBuildInfo()
	fd, err := holdInit(self, path, ours)
	if err != nil {
		own.Why = fmt.Sprintf("%s is not used: %v", path, err)
		return -1, own
	}
	return fd, sandbox.InitChoice{Program: path, Why: "the same build as " + self}
}

// holdInit reads the program at path into a sealed memory file and
// returns its descriptor, when the program is fit to be the init of the
// boxes self, built as ours says, starts:
//
//   - a regular file, not a link, that nobody but self's owner (or root)
//     may write: as hard for anyone else to replace as self, which lives
//     in the same directory;
//   - the command of that name in this program's module, and the same
//     build as this program (buildinfo.Same), read from the very bytes
//     that will run: the sealed copy, which no one can change after the
//     check, is what every box execs, whatever happens to the file
//     later.
func holdInit(self, path string, ours *debug.BuildInfo) (int, error) {
	selfInfo, err := os.Stat(self)
	if err != nil {
		return -1, fmt.Errorf("this program's executable: %w", err)
	}
	selfUID := selfInfo.Sys().(*syscall.Stat_t).Uid
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return -1, errors.New("a symbolic link")
	case errors.Is(err, os.ErrNotExist):
		return -1, errors.New("not there")
	case err != nil:
		return -1, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return -1, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return -1, errors.New("not a regular file")
	case st.Uid != selfUID && st.Uid != 0:
		return -1, fmt.Errorf("owned by uid %d, not by %s's owner (uid %d) or root", st.Uid, filepath.Base(self), selfUID)
	case fi.Mode().Perm()&0o022 != 0:
		return -1, fmt.Errorf("writable by others (mode %v)", fi.Mode().Perm())
	case fi.Size() > maxInitSize:
		return -1, fmt.Errorf("larger than %d MB", maxInitSize>>20)
	}
	mem, err := sealedCopy(f)
	if err != nil {
		return -1, err
	}
	defer mem.Close()
	theirs, err := buildinfo.Read(mem)
	if err != nil {
		return -1, fmt.Errorf("no Go build information: %w", err)
	}
	if ours != nil && theirs.Path != ours.Main.Path+"/cmd/"+filepath.Base(path) {
		return -1, fmt.Errorf("the program %s, not %s/cmd/%s", theirs.Path, ours.Main.Path, filepath.Base(path))
	}
	if err := batonbuild.Same(ours, theirs); err != nil {
		return -1, fmt.Errorf("not the same build as %s: %w", filepath.Base(self), err)
	}
	// Its own descriptor, which outlives mem (closed below).
	fd, err := unix.FcntlInt(mem.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("hold the init: %w", err)
	}
	return fd, nil
}

// sealedCopy copies f into a memory file sealed against every change.
func sealedCopy(f *os.File) (*os.File, error) {
	const name = sandbox.InitProgram
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3, which added MFD_EXEC: memory files are
		// executable.
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("create a memory file: %w", err)
	}
	mem := os.NewFile(uintptr(fd), "memfd:"+name)
	n, err := io.Copy(mem, io.LimitReader(f, maxInitSize+1))
	if err == nil && n > maxInitSize {
		err = fmt.Errorf("larger than %d MB", maxInitSize>>20)
	}
	if err == nil {
		_, err = unix.FcntlInt(mem.Fd(), unix.F_ADD_SEALS,
			unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE)
	}
	if err != nil {
		mem.Close()
		return nil, fmt.Errorf("copy the init: %w", err)
	}
	return mem, nil
}
