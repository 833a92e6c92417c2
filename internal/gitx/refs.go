package gitx

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/baton-agent/baton/internal/safefile"
)

// Reading refs from a repository's files costs a few system calls where
// `git rev-parse` costs a process. It is safe because git replaces a ref
// file by renaming a complete lock file over it, and packs refs by writing
// packed-refs before it deletes the loose files: a reader that looks at
// the loose file first and packed-refs second sees the old value or the
// new one, never a torn one. Anything this reader does not understand
// (the reftable format, a malformed file) is ErrRefFormat, and the caller
// asks git instead.

// ErrRefFormat means a repository keeps its refs in a way ReadRef does not
// read; ask git.
var ErrRefFormat = errors.New("refs not readable from files")

// maxRefFile bounds what is read of a loose ref or HEAD.
const maxRefFile = 4096

// Layout is where a repository's files are: GitDir holds HEAD (a linked
// work tree has its own), CommonDir holds the refs and objects shared by
// all its work trees.
type Layout struct {
	GitDir    string
	CommonDir string
}

// FindLayout locates the repository at dir: a bare repository, or a work
// tree whose .git is a directory or a "gitdir:" file (a linked work tree).
func FindLayout(dir string) (Layout, error) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case err == nil && fi.IsDir():
		return checkLayout(Layout{GitDir: dotgit, CommonDir: dotgit})
	case err == nil && fi.Mode().IsRegular():
		b, err := readSmall(dotgit)
		if err != nil {
			return Layout{}, err
		}
		gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok || gd == "" {
			return Layout{}, ErrRefFormat
		}
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(dir, gd)
		}
		l := Layout{GitDir: gd, CommonDir: gd}
		if cd, err := readSmall(filepath.Join(gd, "commondir")); err == nil {
			c := strings.TrimSpace(string(cd))
			if !filepath.IsAbs(c) {
				c = filepath.Join(gd, c)
			}
			l.CommonDir = filepath.Clean(c)
		} else if !errors.Is(err, os.ErrNotExist) {
			return Layout{}, err
		}
		return checkLayout(l)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return Layout{}, err
	}
	// A bare repository: HEAD and objects in dir itself.
	if _, err := os.Stat(filepath.Join(dir, "objects")); err != nil {
		return Layout{}, ErrRefFormat
	}
	return checkLayout(Layout{GitDir: dir, CommonDir: dir})
}

// checkLayout refuses repositories whose refs are not files.
func checkLayout(l Layout) (Layout, error) {
	if _, err := os.Stat(filepath.Join(l.CommonDir, "reftable")); err == nil {
		return Layout{}, ErrRefFormat
	}
	if _, err := os.Stat(filepath.Join(l.GitDir, "HEAD")); err != nil {
		return Layout{}, ErrRefFormat
	}
	return l, nil
}

// ReadRef returns the object name a full ref (refs/heads/main) points
// to, and false when the ref does not exist. Symbolic refs other than
// HEAD are not followed (ErrRefFormat).
func (l Layout) ReadRef(name string) (string, bool, error) {
	if !strings.HasPrefix(name, "refs/") || strings.Contains(name, "..") {
		return "", false, ErrRefFormat
	}
	b, err := readSmall(filepath.Join(l.CommonDir, filepath.FromSlash(name)))
	switch {
	case err == nil:
		v := strings.TrimSpace(string(b))
		if !IsObjectName(v) {
			return "", false, ErrRefFormat // a symbolic ref, or garbage
		}
		return v, true, nil
	case errors.Is(err, os.ErrNotExist), isNotDir(err):
	default:
		return "", false, err
	}
	f, err := os.Open(filepath.Join(l.CommonDir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	return lookupPackedRef(f, name)
}

// Head reads HEAD: the branch it names ("" when detached) and the commit
// it points to ("" on an unborn branch).
func (l Layout) Head() (branch, sha string, err error) {
	b, err := readSmall(filepath.Join(l.GitDir, "HEAD"))
	if err != nil {
		return "", "", err
	}
	v := strings.TrimSpace(string(b))
	if ref, ok := strings.CutPrefix(v, "ref: "); ok {
		branch, ok := strings.CutPrefix(ref, "refs/heads/")
		if !ok {
			return "", "", ErrRefFormat
		}
		sha, _, err := l.ReadRef(ref)
		return branch, sha, err
	}
	if !IsObjectName(v) {
		return "", "", ErrRefFormat
	}
	return "", v, nil
}

// lookupPackedRef finds name in a packed-refs file: a header line
// ("# pack-refs with: ..."), then "<object> <ref>" lines, each maybe
// followed by "^<peeled object>" for annotated tags.
func lookupPackedRef(r io.Reader, name string) (string, bool, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024)
	want := []byte(name)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		obj, ref, ok := bytes.Cut(line, []byte{' '})
		if !ok || !bytes.Equal(ref, want) {
			continue
		}
		if !IsObjectName(string(obj)) {
			return "", false, ErrRefFormat
		}
		return string(obj), true, nil
	}
	if err := sc.Err(); err != nil {
		return "", false, ErrRefFormat
	}
	return "", false, nil
}

// IsObjectName reports whether s is a full object name (SHA-1 or
// SHA-256, lower-case hex), which names one object for ever.
func IsObjectName(s string) bool {
	return (len(s) == 40 || len(s) == 64) && isHex(s)
}

// readSmall reads a file of at most maxRefFile bytes; a larger one is
// ErrRefFormat. It never blocks: a work tree's files may be an agent's,
// and a FIFO where .git or commondir should be must not hang a worker.
func readSmall(path string) ([]byte, error) {
	f, err := safefile.OpenRegularFollow(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRefFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRefFile {
		return nil, ErrRefFormat
	}
	return b, nil
}

// isNotDir reports a path that cannot be a loose ref file: its parent is
// a file (refs/heads/a when a is itself a ref), or it is a directory
// (refs/heads/a when refs/heads/a/b exists).
func isNotDir(err error) bool {
	return errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR)
}
