package gitx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/baton-agent/baton"
)

// The delivery pipeline's git operations: a bare cache per repository,
// worktrees of it, commits, pushes and merges. Each costs a git process
// (a few milliseconds), so the functions here do what they say in as few
// as they can, and read refs from files where that is safe (refs.go).

// cacheConfig is appended to a new cache's config. Automatic maintenance
// is off (the cache's owner runs it deliberately, see Maintain): it would
// otherwise start a gc after fetches and commits, in the middle of other
// workers' work. Ref locks held by another process are waited for rather
// than failed on.
const cacheConfig = `[gc]
	auto = 0
[maintenance]
	auto = false
[fetch]
	writeCommitGraph = false
[core]
	logAllRefUpdates = false
	filesRefLockTimeout = 10000
	packedRefsTimeout = 10000
`

// InitCache creates a bare repository at dir for caching another one,
// with HEAD naming head (the source's default branch) and automatic
// maintenance off. It is made under a temporary name and renamed into
// place, so a concurrent creator finds either nothing or a whole cache;
// the loser of that race uses the winner's.
func InitCache(ctx context.Context, dir, head string, env []string) (*Repo, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	t := &Repo{Dir: tmp, Env: env}
	args := []string{"init", "--quiet", "--bare"}
	if head != "" {
		args = append(args, "--initial-branch="+head)
	}
	if _, err := t.Run(ctx, append(args, tmp)...); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(tmp, "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(cacheConfig)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "HEAD")); serr != nil {
			return nil, err
		}
	}
	return &Repo{Dir: dir, Env: env}, nil
}

// RemoteHead asks the repository at url which branch its HEAD names (its
// default branch).
func (r *Repo) RemoteHead(ctx context.Context, url string) (string, error) {
	out, err := r.Run(ctx, "ls-remote", "--symref", url, "HEAD")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(out, "\n") {
		if ref, ok := strings.CutPrefix(l, "ref: refs/heads/"); ok {
			b, _, _ := strings.Cut(ref, "\t")
			return b, nil
		}
	}
	return "", baton.Errorf(baton.NotFound, "%s has no default branch", url)
}

// FetchRefs fetches refspecs from url: no tags, no FETCH_HEAD (a file
// every fetch into the repository would rewrite), no automatic
// maintenance. With prune, refs under a refspec's destination that url
// no longer has are deleted, and no others.
func (r *Repo) FetchRefs(ctx context.Context, url string, prune bool, refspecs ...string) error {
	args := []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head"}
	if prune {
		args = append(args, "--prune")
	}
	_, err := r.Run(ctx, append(append(args, url), refspecs...)...)
	return err
}

// RefUpdate sets Name to New, or deletes it when New is "". A non-empty
// Old must be the ref's current value or nothing changes.
type RefUpdate struct {
	Name, New, Old string
}

// UpdateRefs applies updates in one transaction: all or none. git
// refuses a New that is not an object of the repository. In a repository
// whose refs are baton's own (OwnRefs), what git would do plainly is done
// in-process (reffiles.go).
func (r *Repo) UpdateRefs(ctx context.Context, updates ...RefUpdate) error {
	if r.OwnRefs {
		if l, err := r.layout(); err == nil {
			if err := l.writeRefs(updates); !errors.Is(err, errAskGit) {
				return err
			}
		}
	}
	var b strings.Builder
	for _, u := range updates {
		if u.New == "" {
			fmt.Fprintf(&b, "delete %s", u.Name)
		} else {
			fmt.Fprintf(&b, "update %s %s", u.Name, u.New)
		}
		if u.Old != "" { // an empty old value would mean "must not exist"
			b.WriteString(" " + u.Old)
		}
		b.WriteByte('\n')
	}
	_, err := r.RunInput(ctx, b.String(), "update-ref", "--stdin")
	return err
}

// Fetch fetches refspecs from remote.
func (r *Repo) Fetch(ctx context.Context, remote string, refspecs ...string) error {
	_, err := r.Run(ctx, append([]string{"fetch", "--quiet", remote}, refspecs...)...)
	return err
}

// RevParse resolves rev to a full SHA, or NotFound.
func (r *Repo) RevParse(ctx context.Context, rev string) (string, error) {
	out, err := r.line(ctx, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	var ge *Error
	if errors.As(err, &ge) || (err == nil && out == "") {
		return "", baton.Errorf(baton.NotFound, "no commit %s in %s", rev, r.Dir)
	}
	return out, err
}

// HeadSHA returns the commit HEAD points to, read from the repository's
// files when it can be, else from git.
func (r *Repo) HeadSHA(ctx context.Context) (string, error) {
	if l, err := r.layout(); err == nil {
		if _, sha, err := l.Head(); err == nil && sha != "" {
			return sha, nil
		}
	}
	return r.RevParse(ctx, "HEAD")
}

// at is a repository at dir sharing r's environment and identity.
func (r *Repo) at(dir string) *Repo { return &Repo{Dir: dir, Env: r.Env, Ident: r.Ident} }

// PruneWorktrees forgets worktrees whose directories are gone.
func (r *Repo) PruneWorktrees(ctx context.Context) error {
	_, err := r.Run(ctx, "worktree", "prune")
	return err
}

// Worktree is one entry of `git worktree list`.
type Worktree struct {
	Path   string
	Branch string // short name; "" when detached or bare
	Bare   bool
}

// Worktrees lists r's worktrees, the main one first.
func (r *Repo) Worktrees(ctx context.Context) ([]Worktree, error) {
	out, err := r.Run(ctx, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	return parseWorktrees(out), nil
}

// parseWorktrees parses `git worktree list --porcelain -z`: records of
// NUL-terminated "key value" fields, each record starting with
// "worktree <path>" and ending with an empty field.
func parseWorktrees(out string) []Worktree {
	var wts []Worktree
	var cur *Worktree
	for _, f := range strings.Split(out, "\x00") {
		switch {
		case strings.HasPrefix(f, "worktree "):
			wts = append(wts, Worktree{Path: strings.TrimPrefix(f, "worktree ")})
			cur = &wts[len(wts)-1]
		case cur == nil:
		case strings.HasPrefix(f, "branch "):
			cur.Branch = strings.TrimPrefix(strings.TrimPrefix(f, "branch "), "refs/heads/")
		case f == "bare":
			cur.Bare = true
		}
	}
	return wts
}

// Dirty reports whether the work tree has changes or untracked files.
// Ignored files do not count.
func (r *Repo) Dirty(ctx context.Context) (bool, error) {
	out, err := r.Run(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	return out != "", err
}

// CheckoutClean makes the work tree and the index exactly rev, moving no
// ref: tracked files are written as rev has them, untracked files are
// deleted (nested repositories too), ignored files stay, as they would in
// a developer's checkout. Both steps run in one process (git read-tree,
// then git clean, under sh), so a Start that confines git pays once; a
// work tree that holds nothing but its .git has nothing to clean, and
// git read-tree runs alone.
func (r *Repo) CheckoutClean(ctx context.Context, rev string) error {
	if strings.HasPrefix(rev, "-") {
		return fmt.Errorf("checkout %q: not a revision", rev)
	}
	if onlyGit(r.Dir) {
		_, err := r.Run(ctx, "read-tree", "--reset", "-u", rev)
		return err
	}
	_, err := r.runProgram(ctx, "sh", "-c", `git read-tree --reset -u "$1" && exec git clean -ffdq`, "baton-checkout", rev)
	return err
}

// onlyGit reports whether dir holds nothing but an entry named .git (a
// work tree just made): nothing untracked can be in it.
func onlyGit(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(2)
	return (err == nil || errors.Is(err, io.EOF)) && len(names) <= 1 && (len(names) == 0 || names[0] == ".git")
}

// AddAll stages everything in the work tree: changes, deletions and
// untracked files, minus what .gitignore excludes (git add -A).
func (r *Repo) AddAll(ctx context.Context) error {
	_, err := r.Run(ctx, "add", "-A")
	return err
}

// WriteTree records the index as a tree, which it returns (git
// write-tree). It needs no work tree.
func (r *Repo) WriteTree(ctx context.Context) (string, error) {
	tree, err := r.line(ctx, "write-tree")
	if err == nil && !IsObjectName(tree) {
		err = fmt.Errorf("git write-tree printed %q, not a tree", tree)
	}
	return tree, err
}

// Identity remembers whether commits need baton's own identity (git has
// none configured), so a long-running worker reads git's configuration
// once instead of once per commit. The zero value is ready to use.
type Identity struct {
	once sync.Once
	args []string
	sigs sigMemo // the author and committer of commits written in-process
}

// identity makes commits work on machines without a configured git
// identity: baton's own name is used only when git has none.
func (r *Repo) identity(ctx context.Context) []string {
	if r.Ident == nil {
		return r.readIdentity(ctx)
	}
	r.Ident.once.Do(func() { r.Ident.args = r.readIdentity(ctx) })
	return r.Ident.args
}

func (r *Repo) readIdentity(ctx context.Context) []string {
	for _, kv := range r.environ() { // git's own environment, as it runs
		if strings.HasPrefix(kv, "GIT_AUTHOR_NAME=") || strings.HasPrefix(kv, "GIT_COMMITTER_NAME=") {
			return nil
		}
	}
	if name, _ := r.line(ctx, "config", "user.name"); name != "" {
		return nil
	}
	return []string{"-c", "user.name=baton", "-c", "user.email=baton@localhost"}
}

// Push pushes refspec to remote (a name or a URL). A rejected push
// (non-fast-forward, a checked-out branch) is a *Error with git's
// explanation.
func (r *Repo) Push(ctx context.Context, remote, refspec string) error {
	_, err := r.Run(ctx, "push", "--quiet", remote, refspec)
	return err
}

// Rebase replays HEAD's commits onto upstream.
func (r *Repo) Rebase(ctx context.Context, upstream string) (string, error) {
	args := append(r.identity(ctx), "rebase", "--quiet", upstream)
	if _, err := r.Run(ctx, args...); err != nil {
		_, _ = r.Run(ctx, "rebase", "--abort")
		return "", baton.WrapError(baton.Conflict, err, "the work does not rebase cleanly onto %s", upstream)
	}
	return r.HeadSHA(ctx)
}

// MergeFFOnly fast-forwards the checked-out branch to rev. git refuses,
// and nothing changes, when that would overwrite local changes or is not
// a fast-forward.
func (r *Repo) MergeFFOnly(ctx context.Context, rev string) error {
	_, err := r.Run(ctx, "merge", "--ff-only", "--quiet", rev)
	return err
}

// Log lists the commits in rng ("a..b"), newest first.
func (r *Repo) Log(ctx context.Context, rng string) ([]Commit, error) {
	out, err := r.Run(ctx, "log", "--format=%H%x09%s", rng)
	if err != nil {
		return nil, err
	}
	var cs []Commit
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		sha, subj, _ := strings.Cut(l, "\t")
		cs = append(cs, Commit{SHA: sha, Subject: subj})
	}
	return cs, nil
}

// Show returns the contents of path at rev.
func (r *Repo) Show(ctx context.Context, rev, path string) (string, error) {
	return r.Run(ctx, "show", rev+":"+path)
}
