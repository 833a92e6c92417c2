package gitx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton"
)

// Merges without a work tree: git merge-tree --write-tree (git 2.38)
// computes a merge into the object database, commit-tree records it. No
// checkout, no index, nothing to clean up, and any number of them can run
// in one repository at once.

// MergeTree merges commits a and b and returns the merged tree. A
// conflict is Conflict and writes nothing anyone can see.
func (r *Repo) MergeTree(ctx context.Context, a, b string) (string, error) {
	out, err := r.Run(ctx, "merge-tree", "--write-tree", "--no-messages", a, b)
	if exitCode(err) == 1 {
		return "", baton.WrapError(baton.Conflict, err, "%s does not merge cleanly into %s", b, a)
	}
	if err != nil {
		return "", err
	}
	tree, _, _ := strings.Cut(out, "\n")
	if !IsObjectName(tree) {
		return "", fmt.Errorf("git merge-tree printed %q, not a tree", tree)
	}
	return tree, nil
}

// Tree returns the tree of commit rev.
func (r *Repo) Tree(ctx context.Context, rev string) (string, error) {
	return r.line(ctx, "rev-parse", "--verify", "--quiet", rev+"^{tree}")
}

// CommitTree records tree as a commit with msg and parents, and returns
// it. No ref moves. With an Ident, the commit is written in-process where
// git would write it plainly (commitobj.go); tree must then be a tree and
// parents commits the repository has, as git just gave them: they are not
// looked up.
func (r *Repo) CommitTree(ctx context.Context, tree, msg string, parents ...string) (string, error) {
	if sha, ok, err := r.writeCommit(ctx, tree, msg, parents); ok || err != nil {
		return sha, err
	}
	args := append(r.identity(ctx), "commit-tree", tree)
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	out, err := r.RunInput(ctx, msg, args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// ReplacePaths returns tree with each of paths as commit from has it, or
// without it where from has none, through a temporary index of r's own.
func (r *Repo) ReplacePaths(ctx context.Context, tree, from string, paths ...string) (string, error) {
	out, err := r.Run(ctx, append([]string{"ls-tree", "-z", "--full-tree", from, "--"}, paths...)...)
	if err != nil {
		return "", err
	}
	have := map[string]string{}
	for _, e := range strings.Split(out, "\x00") {
		if meta, path, ok := strings.Cut(e, "\t"); ok {
			have[path] = meta
		}
	}
	var info strings.Builder
	for _, p := range paths {
		if meta, ok := have[p]; ok {
			fmt.Fprintf(&info, "%s\t%s\x00", meta, p)
		} else {
			fmt.Fprintf(&info, "0 %s\t%s\x00", strings.Repeat("0", len(tree)), p)
		}
	}
	idx, err := os.CreateTemp(r.gitDir(), "baton-index-")
	if err != nil {
		return "", err
	}
	idx.Close()
	defer os.Remove(idx.Name())
	os.Remove(idx.Name()) // read-tree wants to create it
	t := &Repo{Dir: r.Dir, Env: append(append([]string(nil), r.Env...), "GIT_INDEX_FILE="+idx.Name())}
	if _, err := t.Run(ctx, "read-tree", tree); err != nil {
		return "", err
	}
	if _, err := t.RunInput(ctx, info.String(), "update-index", "-z", "--index-info"); err != nil {
		return "", err
	}
	return t.line(ctx, "write-tree")
}

// gitDir is where a temporary file of the repository's own can go: the
// git directory of a bare repository or of a work tree.
func (r *Repo) gitDir() string {
	if l, err := r.layout(); err == nil {
		return l.GitDir
	}
	if _, err := os.Stat(filepath.Join(r.Dir, ".git")); err == nil {
		return filepath.Join(r.Dir, ".git")
	}
	return r.Dir
}

// ErrNotLoose means an object to copy is not a loose object here (it is
// packed): push instead.
var ErrNotLoose = errors.New("object not loose")

// CopyObjects copies into dst, the objects directory of another local
// repository, the objects reachable from tip and not from any of have
// (commits dst's repository has with everything they reach): the objects
// a push of tip would send, found the way git's push finds them
// (rev-list --objects tip --not have), but copied as files instead of
// through a pack, receive-pack and its checks, which cost a dozen
// processes. Only loose objects are copied (ErrNotLoose otherwise). Each
// is written the way git writes one: a temporary file in its directory,
// linked into place, never replacing an existing object.
func (r *Repo) CopyObjects(ctx context.Context, dst, tip string, have ...string) error {
	l, err := r.layout()
	if err != nil {
		return err
	}
	src := filepath.Join(l.CommonDir, "objects")
	args := []string{"rev-list", "--objects", tip}
	if len(have) > 0 {
		args = append(append(args, "--not"), have...)
	}
	out, err := r.Run(ctx, args...)
	if err != nil {
		return err
	}
	di, err := os.Stat(dst)
	if err != nil {
		return err
	}
	dirMode := di.Mode() & (os.ModePerm | os.ModeSetgid)
	for _, line := range strings.Split(out, "\n") {
		name, _, _ := strings.Cut(line, " ")
		if name == "" {
			continue
		}
		if !IsObjectName(name) {
			return fmt.Errorf("git rev-list printed %q, not an object", name)
		}
		if err := copyObject(filepath.Join(src, name[:2], name[2:]), filepath.Join(dst, name[:2]), name[2:], dirMode); err != nil {
			return err
		}
	}
	return nil
}

// copyObject copies the loose object file from into dir/name.
func copyObject(from, dir, name string, dirMode os.FileMode) error {
	to := filepath.Join(dir, name)
	if _, err := os.Lstat(to); err == nil {
		return nil // dst has it already
	}
	in, err := os.Open(from)
	if errors.Is(err, os.ErrNotExist) {
		return ErrNotLoose
	}
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.Mkdir(dir, dirMode); err == nil {
		_ = os.Chmod(dir, dirMode) // as the objects directory is, whatever the umask
	} else if !errors.Is(err, os.ErrExist) {
		return err
	}
	tmp, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, in)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o444)
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), to); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}
