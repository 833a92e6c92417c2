package gitx

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/baton-agent/baton"
)

// Remote-tracking refs of a cache: the source's branches live under
// refs/remotes/origin/, so the cache's own branches (the ones its
// worktrees check out) are never overwritten or pruned by a fetch.
const cacheFetchSpec = "+refs/heads/*:refs/remotes/origin/*"

// Cache opens (cloning it on first use) a bare cache of the repository at
// src in dir and fetches src into it, so each run needs a worktree, not a
// full clone. The cache's origin is src; the source's branches are
// origin/<branch>.
func Cache(ctx context.Context, src, dir string, env []string) (*Repo, error) {
	r := &Repo{Dir: dir, Env: env}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return nil, err
		}
		tmp := dir + ".tmp"
		_ = os.RemoveAll(tmp)
		parent := &Repo{Dir: filepath.Dir(dir), Env: env}
		if _, err := parent.Run(ctx, "clone", "--bare", "--quiet", src, tmp); err != nil {
			return nil, err
		}
		t := &Repo{Dir: tmp, Env: env}
		if _, err := t.Run(ctx, "config", "remote.origin.fetch", cacheFetchSpec); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return nil, err
		}
	}
	if _, err := r.Run(ctx, "fetch", "--quiet", "--prune", "origin"); err != nil {
		return nil, err
	}
	return r, nil
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

// HeadBranch returns the branch HEAD names, also in a bare repository
// (its default branch), or "" when HEAD is detached.
func (r *Repo) HeadBranch(ctx context.Context) (string, error) {
	return r.Branch(ctx)
}

// WorktreeAdd checks out a new worktree of r at path on branch, reset to
// start (git worktree add -f -B). -f lets it reuse a path that a
// worktree of a dead run still has registered; a branch still checked out
// in another worktree must be freed first (WorktreeRemove).
func (r *Repo) WorktreeAdd(ctx context.Context, path, branch, start string) (*Repo, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if _, err := r.Run(ctx, "worktree", "add", "--quiet", "-f", "-B", branch, path, start); err != nil {
		return nil, err
	}
	return &Repo{Dir: path, Env: r.Env}, nil
}

// WorktreeAddDetached checks out start at path without a branch.
func (r *Repo) WorktreeAddDetached(ctx context.Context, path, start string) (*Repo, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if _, err := r.Run(ctx, "worktree", "add", "--quiet", "--detach", "-f", path, start); err != nil {
		return nil, err
	}
	return &Repo{Dir: path, Env: r.Env}, nil
}

// WorktreeRemove deletes the worktree at path, whatever it holds.
func (r *Repo) WorktreeRemove(ctx context.Context, path string) error {
	_, err := r.Run(ctx, "worktree", "remove", "--force", "--force", path)
	if err != nil {
		// Already gone, or never registered: clean up what is left.
		_ = os.RemoveAll(path)
		_, _ = r.Run(ctx, "worktree", "prune")
	}
	return nil
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

// identity makes commits work on machines without a configured git
// identity: baton's own name is used only when git has none.
func (r *Repo) identity(ctx context.Context) []string {
	if name, _ := r.line(ctx, "config", "user.name"); name != "" {
		return nil
	}
	for _, kv := range append(os.Environ(), r.Env...) {
		if strings.HasPrefix(kv, "GIT_AUTHOR_NAME=") || strings.HasPrefix(kv, "GIT_COMMITTER_NAME=") {
			return nil
		}
	}
	return []string{"-c", "user.name=baton", "-c", "user.email=baton@localhost"}
}

// CommitChanges stages everything in the work tree and commits it with
// msg, unless nothing changed (CommitAll commits even then). It returns
// HEAD and whether a commit was made. Without a configured git identity,
// the commit is made as "baton".
func (r *Repo) CommitChanges(ctx context.Context, msg string) (string, bool, error) {
	if _, err := r.Run(ctx, "add", "-A"); err != nil {
		return "", false, err
	}
	if _, err := r.Run(ctx, "diff", "--cached", "--quiet"); err == nil {
		head, err := r.RevParse(ctx, "HEAD")
		return head, false, err
	}
	args := append(r.identity(ctx), "commit", "--quiet", "--no-verify", "-m", msg)
	if _, err := r.Run(ctx, args...); err != nil {
		return "", false, err
	}
	head, err := r.RevParse(ctx, "HEAD")
	return head, true, err
}

// Push pushes refspec to remote. A rejected push (non-fast-forward, a
// checked-out branch) is a *Error with git's explanation.
func (r *Repo) Push(ctx context.Context, remote, refspec string) error {
	_, err := r.Run(ctx, "push", "--quiet", remote, refspec)
	return err
}

// MergeSquash squashes rev onto HEAD as one commit with msg and returns
// it. Paths in keep are left as HEAD has them (absent if HEAD has none),
// so they are not part of the merge. A conflict aborts and returns
// Conflict, as does a merge that changes nothing.
func (r *Repo) MergeSquash(ctx context.Context, rev, msg string, keep ...string) (string, error) {
	if _, err := r.Run(ctx, "merge", "--squash", "--quiet", rev); err != nil {
		_, _ = r.Run(ctx, "reset", "--hard", "--quiet")
		return "", baton.WrapError(baton.Conflict, err, "%s does not merge cleanly", rev)
	}
	return r.commitMerge(ctx, rev, msg, keep)
}

// MergeCommit merges rev into HEAD with a merge commit (--no-ff), keeping
// the paths in keep as HEAD has them.
func (r *Repo) MergeCommit(ctx context.Context, rev, msg string, keep ...string) (string, error) {
	args := append(r.identity(ctx), "merge", "--no-ff", "--no-commit", "--quiet", rev)
	if _, err := r.Run(ctx, args...); err != nil {
		_, _ = r.Run(ctx, "merge", "--abort")
		return "", baton.WrapError(baton.Conflict, err, "%s does not merge cleanly", rev)
	}
	return r.commitMerge(ctx, rev, msg, keep)
}

// commitMerge restores keep to HEAD's version and commits the staged
// merge.
func (r *Repo) commitMerge(ctx context.Context, rev, msg string, keep []string) (string, error) {
	for _, p := range keep {
		if _, err := r.Run(ctx, "cat-file", "-e", "HEAD:"+p); err == nil {
			if _, err := r.Run(ctx, "checkout", "HEAD", "--", p); err != nil {
				return "", err
			}
			continue
		}
		if _, err := r.Run(ctx, "rm", "-q", "-f", "--cached", "--ignore-unmatch", "--", p); err != nil {
			return "", err
		}
		_ = os.Remove(filepath.Join(r.Dir, p))
	}
	if _, err := r.Run(ctx, "diff", "--cached", "--quiet"); err == nil {
		_, _ = r.Run(ctx, "merge", "--abort")
		_, _ = r.Run(ctx, "reset", "--hard", "--quiet")
		return "", baton.Errorf(baton.Conflict, "%s has no changes to merge", rev)
	}
	args := append(r.identity(ctx), "commit", "--quiet", "--no-verify", "-m", msg)
	if _, err := r.Run(ctx, args...); err != nil {
		return "", err
	}
	return r.RevParse(ctx, "HEAD")
}

// Rebase replays HEAD's commits onto upstream.
func (r *Repo) Rebase(ctx context.Context, upstream string) (string, error) {
	args := append(r.identity(ctx), "rebase", "--quiet", upstream)
	if _, err := r.Run(ctx, args...); err != nil {
		_, _ = r.Run(ctx, "rebase", "--abort")
		return "", baton.WrapError(baton.Conflict, err, "the work does not rebase cleanly onto %s", upstream)
	}
	return r.RevParse(ctx, "HEAD")
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
