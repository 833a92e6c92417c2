package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/baton-agent/baton/internal/reap"
	"github.com/baton-agent/baton/internal/safefile"
)

// A linked work tree is registered by a few files, which Register writes
// itself rather than through `git worktree add`: the registration in the
// repository (HEAD, commondir and gitdir in <common dir>/worktrees/<name>)
// and the work tree's .git file. git reads the registrations of every
// work tree whenever it lists them (a fetch's connectivity check, gc, a
// rebase), so one registration that names another common dir, or a
// packed-refs there that git cannot read, makes those commands die or
// hang for every work tree of the repository; and a work tree's own
// files decide which repository, configuration and index baton's git in
// it uses. Nothing found there is trusted: each file is rewritten where
// it is not exactly what git would have written, and everything else in
// the registration (reflogs, COMMIT_EDITMSG, ORIG_HEAD, config.worktree,
// an index that is not a regular file) is removed.

// maxRegistrationFile bounds what is read of a registration's files.
const maxRegistrationFile = 4096

// Register writes the registration of the linked work tree at path in
// the repository whose shared files are in commonDir, its HEAD set to
// head: "ref: refs/heads/<branch>", or a commit for a detached HEAD. The
// registration is named after path's last element; path is made if
// missing. changed says whether anything had to be written or removed
// (a new registration included), so a caller knows the index and the
// files may not match HEAD.
func Register(commonDir, path, head string) (l Layout, changed bool, err error) {
	name := filepath.Base(path)
	if name == "." || name == string(filepath.Separator) {
		return Layout{}, false, fmt.Errorf("register %s: not a work tree path", path)
	}
	commonDir = filepath.Clean(commonDir)
	l = Layout{GitDir: filepath.Join(commonDir, "worktrees", name), CommonDir: commonDir}
	want := map[string]string{
		"HEAD":      head + "\n",
		"commondir": "../..\n",
		"gitdir":    filepath.Join(path, ".git") + "\n",
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return Layout{}, false, err
	}
	// The work tree's .git first: `git worktree prune` in another worker
	// sharing the cache forgets a registration whose .git is missing, and
	// would take this one away between its making and its checking.
	wrote, err := writeDotGit(path, l.GitDir)
	if err != nil {
		return Layout{}, false, fmt.Errorf("register %s: %w", path, err)
	}
	admin, err := safefile.OpenDirBeneath(commonDir, filepath.Join("worktrees", name), false, 0)
	if errors.Is(err, fs.ErrNotExist) {
		changed = true
		admin, err = newRegistration(commonDir, name, want)
	}
	if err != nil {
		return Layout{}, false, fmt.Errorf("register %s: %w", path, err)
	}
	defer admin.Close()
	names, err := admin.Names()
	if err != nil {
		return Layout{}, false, fmt.Errorf("register %s: %w", path, err)
	}
	have := map[string]bool{}
	for _, n := range names {
		keep := false
		switch _, ours := want[n]; {
		case ours:
			b, err := admin.ReadFile(n, maxRegistrationFile)
			have[n] = err == nil && string(b) == want[n]
			// A regular file is replaced in place below, never removed
			// first: another worker's git worktree prune forgets a
			// registration without gitdir, and git listing the work
			// trees would find one without HEAD.
			m, err := admin.Lstat(n)
			keep = err == nil && m.IsRegular()
		case n == "index":
			m, err := admin.Lstat(n)
			keep = err == nil && m.IsRegular()
		}
		if !keep {
			changed = true
			if err := admin.Remove(n); err != nil {
				return Layout{}, false, fmt.Errorf("register %s: %w", path, err)
			}
		}
	}
	for _, n := range []string{"commondir", "gitdir", "HEAD"} {
		if !have[n] {
			changed = true
			if err := admin.WriteAtomic(n, []byte(want[n]), 0o644); err != nil {
				return Layout{}, false, fmt.Errorf("register %s: %w", path, err)
			}
		}
	}
	return l, changed || wrote, nil
}

// newRegistration makes the registration name with the files of want:
// in a temporary directory of commonDir first, renamed into worktrees/
// whole, so no git listing the work trees meanwhile sees half of one.
func newRegistration(commonDir, name string, want map[string]string) (*safefile.DirBeneath, error) {
	if err := os.MkdirAll(filepath.Join(commonDir, "worktrees"), 0o755); err != nil {
		return nil, err
	}
	tmp := filepath.Join(commonDir, ".baton-worktree-"+strconv.FormatUint(rand.Uint64(), 36))
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for n, content := range want {
		if err := os.WriteFile(filepath.Join(tmp, n), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	// Renaming onto an existing empty directory succeeds: a registration
	// made meanwhile by another process is then replaced by an equal one.
	if err := os.Rename(tmp, filepath.Join(commonDir, "worktrees", name)); err != nil && !errors.Is(err, syscall.EEXIST) && !errors.Is(err, syscall.ENOTEMPTY) {
		return nil, err
	}
	return safefile.OpenDirBeneath(commonDir, filepath.Join("worktrees", name), false, 0)
}

// writeDotGit makes path/.git the file naming gitDir, whatever was
// there (a directory, a link, another file), and reports whether it had
// to.
func writeDotGit(path, gitDir string) (bool, error) {
	want := []byte("gitdir: " + gitDir + "\n")
	wt, err := safefile.OpenDirBeneath(path, "", false, 0)
	if err != nil {
		return false, err
	}
	defer wt.Close()
	if b, err := wt.ReadFile(".git", maxRegistrationFile); err == nil && bytes.Equal(b, want) {
		return false, nil
	}
	if m, err := wt.Lstat(".git"); err == nil && m.IsDir() {
		if err := wt.Remove(".git"); err != nil {
			return false, err
		}
	}
	return true, wt.WriteAtomic(".git", want, 0o644)
}

// Unregister removes the registration of the work tree at path (not the
// work tree): what `git worktree prune` does once the directory is gone.
// It is moved out of worktrees/ first, so no git listing the work trees
// meanwhile reads half of one.
func Unregister(commonDir, path string) error {
	admin := filepath.Join(commonDir, "worktrees", filepath.Base(path))
	gone := filepath.Join(commonDir, ".baton-gone-"+strconv.FormatUint(rand.Uint64(), 36))
	if err := os.Rename(admin, gone); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	return os.RemoveAll(gone)
}

// SendObjects gives dst, another repository on this machine, the objects
// reachable from tip and not from have, which r has and dst may not: r
// packs them (pack-objects, started as r starts git) and dst's git
// unpacks the pack with --strict, as a push's receiving end does. So
// whatever r's object directory holds (a work tree's confined git wrote
// it), only well-formed objects reach dst, each named by its content,
// and only when everything they refer to is there.
func (r *Repo) SendObjects(ctx context.Context, dst *Repo, tip string, have ...string) error {
	if !IsObjectName(tip) {
		return fmt.Errorf("send objects: %q is not an object name", tip)
	}
	var revs strings.Builder
	revs.WriteString(tip + "\n")
	for _, h := range have {
		if !IsObjectName(h) {
			return fmt.Errorf("send objects: %q is not an object name", h)
		}
		revs.WriteString("^" + h + "\n")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	pack := r.command(ctx, "pack-objects", "--stdout", "--revs", "--quiet")
	pack.Stdin = strings.NewReader(revs.String())
	pack.Stdout = pw
	var packErr limitedBuffer
	packErr.max = 4 << 10
	pack.Stderr = &packErr
	release, err := r.start(pack)
	pw.Close()
	if err != nil {
		pr.Close()
		release()
		return notFound(err)
	}
	_, unpackErr := dst.runReader(ctx, pr, "unpack-objects", "-q", "--strict")
	pr.Close()
	if unpackErr != nil {
		cancel() // the packer is not read any more
	}
	waitErr := reap.Wait(pack)
	release()
	if waitErr != nil {
		return &Error{Args: []string{"pack-objects", "--stdout", "--revs"}, Stderr: packErr.String(), Err: waitErr}
	}
	return unpackErr
}

// runReader is Run with stdin read from in.
func (r *Repo) runReader(ctx context.Context, in *os.File, args ...string) (string, error) {
	cmd := r.command(ctx, args...)
	cmd.Stdin = in
	var out bytes.Buffer
	var errb limitedBuffer
	errb.max = 4 << 10
	cmd.Stdout, cmd.Stderr = &out, &errb
	release, err := r.start(cmd)
	if err != nil {
		release()
		return "", notFound(err)
	}
	err = reap.Wait(cmd)
	release()
	if err != nil {
		return out.String(), &Error{Args: args, Stderr: errb.String(), Err: err}
	}
	return out.String(), nil
}
